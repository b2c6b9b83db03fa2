"""SIGKILL while the world book reloads a changed file: nothing lost, nothing corrupt.

A writer process (the library, world book checked on every prompt) asks a prompt and records a
turn, again and again, while this test rewrites a world-book file with one more entry every
0.15 s (atomically, as an editor saves). The writer's embedder announces on stdout when it embeds
world-book keys (a reload in flight) and takes 0.1 s doing it; the writer is SIGKILLed at a random
moment from there (during the embedding, while the vector cache is written, or just after), and
restarted. Afterwards: every acknowledged turn is in the window, the journal drains, the world
book has every entry of the file's last version and no errors, its keys fire, and every vector
cache file is readable and holds the vectors its keys really have.

    KIOKU_WB_KILLS=30 pytest tests/test_crash_worldbook.py      # a longer run (default 8 kills)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine.config import load_config
from engine.testing.fake_openai import FakeOpenAIServer
from engine.fileio import atomic_write_bytes
from test_crash import assert_window_holds

ROOT = Path(__file__).resolve().parent.parent
KILLS = int(os.environ.get("KIOKU_WB_KILLS", "8"))
LORE = "crash_lore.yaml"

WRITER = r"""
import json, os, sys, time
from engine.config import load_config
from engine.factory import make_embedder
from engine.orchestrator import MemoryOrchestrator

config = load_config(overrides=json.loads(sys.argv[1]), env={})
run = sys.argv[2]


class Announcing:
    # The real embedder; embedding world-book keys (a reload) is announced and takes 0.1 s more.
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def embed(self, texts, role):
        if role == "passage" and any(t.startswith("暗语") for t in texts):
            os.write(1, b"reload\n")
            time.sleep(0.1)
        return self._inner.embed(texts, role=role)


orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=Announcing(make_embedder(config.embedder)))
for i in range(100000):
    marker = f"{run}-{i}"
    orch.build_prompt(f"暗语{i} 是什么意思", user_id="alice")  # checks the world book's files first
    orch.record_turn(f"记下暗号 K{marker} 好吗", f"好的，K{marker} 记住了", user_id="alice")
    os.write(1, f"ack {marker}\n".encode())
"""


def overrides(data_dir: Path, base_url: str) -> dict:
    return {
        "data_dir": str(data_dir),
        "embedder": {"backend": "openai", "base_url": base_url, "model": "fake-embed"},
        "llm": {"backend": "openai", "base_url": base_url, "model": "fake", "timeout_s": 30, "max_retries": 0},
        "memory_llm": {"backend": "none"},
        "world_book": {"check_interval_s": 0},
    }


def lore_text(count: int) -> bytes:
    lines = [f"暗语{n}: 第{n}条暗语的意思是 {'abcdefghij'[n % 10]}{n}" for n in range(count)]
    return ("\n".join(lines) + "\n").encode("utf-8")


class Editor:
    """Rewrites the lore file with one more entry every 0.15 s (atomic replace, like an editor)."""

    def __init__(self, path: Path) -> None:
        self.path, self.count = path, 1
        self._stop = threading.Event()
        atomic_write_bytes(path, lore_text(self.count))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.15):
            self.count += 1
            atomic_write_bytes(self.path, lore_text(self.count))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        return self.count


@pytest.mark.timeout(900)
def test_killed_during_world_book_reloads_loses_and_corrupts_nothing(tmp_path):
    from engine.orchestrator import MemoryOrchestrator

    data_dir = tmp_path
    shutil.copytree(ROOT / "data/agents/xiaoyue", data_dir / "agents/xiaoyue",
                    ignore=shutil.ignore_patterns("users", ".cache"))
    book = data_dir / "agents/xiaoyue/data_base"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rng = random.Random(5)
    acked: list[str] = []
    kills_in_reload = 0
    with FakeOpenAIServer() as server:
        options = overrides(data_dir, server.base_url)
        editor = Editor(book / LORE)
        try:
            for run in range(KILLS):
                proc = subprocess.Popen([sys.executable, "-c", WRITER, json.dumps(options), f"w{run}"], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                lines: list[str] = []
                reload = threading.Event()

                def read(stream=proc.stdout, lines=lines, reload=reload) -> None:
                    for line in stream:
                        lines.append(line)
                        if line == "reload\n" and any(x.startswith("ack ") for x in lines):
                            reload.set()  # a reload after the first turn: the writer is up and busy

                reader = threading.Thread(target=read, daemon=True)
                reader.start()
                in_reload = reload.wait(120)
                time.sleep(rng.uniform(0.0, 0.25))  # in the embedding (0.1 s), the cache write, or after
                proc.kill()
                proc.wait()
                reader.join(30)
                kills_in_reload += in_reload
                err = proc.stderr.read() if proc.stderr else ""
                assert in_reload, f"run {run}: no reload seen\n{err[-2000:]}"
                acked += [x.split()[1] for x in lines if x.startswith("ack ") and x.endswith("\n")]
                assert_window_holds(data_dir, acked)
        finally:
            final = editor.stop()
        assert kills_in_reload == KILLS

        config = load_config(overrides=options, env={})
        with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
            deadline = time.monotonic() + 120
            while orch.journal_status().users and time.monotonic() < deadline:
                orch.flush(5)
            assert not orch.journal_status().users, "\n".join(orch.journal_status().lines())
            view = orch.admin.world_book()
            assert not view.status.errors, view.status.errors
            keys = {k for e in view.entries if e.file.endswith(LORE) for k in e.keys}
            assert keys == {f"暗语{n}" for n in range(final)}
            last = orch.admin.try_world_book(f"暗语{final - 1} 是什么")
            assert any(f"暗语{final - 1}" in h.text for h in last.hits), last
            assert not [p for s in orch.admin.status().stores for p in s.problems]
            # The last version's key vectors are cached, and are the vectors its keys really have.
            store = orch.store("world_book")
            state = next(f for f in store.book.files if f.path.name == LORE)
            dim = orch.embedder.dim
            cached = store.vectors._load(store.vectors._path(state.keys), (len(state.keys), dim))
            assert cached is not None, "the last version's vectors are not cached"
            assert np.allclose(cached, orch.embedder.embed(list(state.keys), role="passage"), atol=1e-5)
        assert_window_holds(data_dir, acked)
        # Every vector cache file loads (no pickle): a killed write never leaves a torn one.
        files = list((data_dir / "agents/xiaoyue/.cache").rglob("*.npy"))
        assert files
        for path in files:
            np.load(path, allow_pickle=False)
    assert not list(data_dir.rglob("*.corrupt")), list(data_dir.rglob("*.corrupt"))
