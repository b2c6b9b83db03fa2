"""A temp data folder holding the demo character, for tests that drive the whole engine."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.config import EngineConfig, load_config

ROOT = Path(__file__).resolve().parent.parent


def copy_demo(data_dir: Path, *, name: str = "xiaoyue") -> Path:
    """The demo character's files, without its users and cache, copied to `data_dir/agents/<name>`."""
    dest = data_dir / "agents" / name
    shutil.copytree(ROOT / "data/agents/xiaoyue", dest, ignore=shutil.ignore_patterns("users", ".cache"))
    return dest


def diary_only_config(data_dir: Path) -> EngineConfig:
    """The default config over `data_dir` with the core memory and the world book off (no environment)."""
    return load_config(
        overrides={"data_dir": str(data_dir), "core": {"enabled": False}, "world_book": {"enabled": False}}, env={}
    )
