"""The config for tests that drive the whole engine on the demo character with only the diary on
(copy the character with `engine.testing.serve.copy_demo`), and lines of everyday errands for
search tests that need a crowd for the one line they look for."""

from __future__ import annotations

import random
from pathlib import Path

from engine.config import EngineConfig, load_config
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import copy_demo


def diary_only_config(data_dir: Path) -> EngineConfig:
    """The default config over `data_dir` with the core memory and the world book off (no environment)."""
    return load_config(
        overrides={"data_dir": str(data_dir), "core": {"enabled": False}, "world_book": {"enabled": False}}, env={}
    )


def diary_only_orchestrator(data_dir: Path, embedder) -> MemoryOrchestrator:
    """The demo character copied into `data_dir`, opened with `diary_only_config`."""
    copy_demo(data_dir)
    return MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(data_dir), embedder=embedder)


_SUBJECTS = ["The quarterly report", "My landlord", "The train", "The dentist", "My phone bill", "The laundry",
             "The job interview", "The grocery list", "My tax return", "The weather forecast", "The printer",
             "My sister's wedding plan", "The new manager", "The bank"]
_VERBS = ["was late again", "cost more than I expected", "kept me busy all morning", "made me nervous",
          "needs another form", "changed at the last minute", "is due on Friday", "took two hours"]


def errands(n: int, seed: int = 4) -> list[str]:
    """`n` lines like "The train was late again." (the same ones for the same seed)."""
    rnd = random.Random(seed)
    return [f"{rnd.choice(_SUBJECTS)} {rnd.choice(_VERBS)}." for _ in range(n)]
