"""The config for tests that drive the whole engine on the demo character with only the diary on
(copy the character with `engine.service.testing.copy_demo`)."""

from __future__ import annotations

from pathlib import Path

from engine.config import EngineConfig, load_config


def diary_only_config(data_dir: Path) -> EngineConfig:
    """The default config over `data_dir` with the core memory and the world book off (no environment)."""
    return load_config(
        overrides={"data_dir": str(data_dir), "core": {"enabled": False}, "world_book": {"enabled": False}}, env={}
    )
