"""Crash safety: a writer process is killed (SIGKILL) mid-append, repeatedly. Every acknowledged
turn must be present afterwards, and every day file must load (torn tails set aside)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from zoneinfo import ZoneInfo

import pytest

from engine.stores.diary.dayfile import DAY_FILE, load_day

TZ = ZoneInfo("Asia/Shanghai")

WRITER = r"""
import sys, zlib
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo
import numpy as np
from engine.paths import CharacterPaths
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.userdiary import UserDiary

class HashEmbedder:  # the embedder is not under test; keep the writer fast to start
    model_id, dim, default_thresholds = "hash", 8, {}
    def embed(self, texts, *, role="passage"):
        out = np.array([[zlib.crc32(f"{t}{i}".encode()) % 97 + 1 for i in range(8)] for t in texts], np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

root, run = Path(sys.argv[1]), int(sys.argv[2])
tz = ZoneInfo("Asia/Shanghai")
diary = UserDiary(CharacterPaths(root).user("alice"), tz=tz, embedder=HashEmbedder())
at = datetime(2026, 11, 20, 23, 50, tzinfo=tz)
for i in range(100000):
    # Two turns per second, crossing midnight: several day files, same-second entries.
    t = at + timedelta(seconds=(run * 4000 + i) // 2)
    entry = DiaryEntry(f"r{run}-{i}", t, "标签", "长" * (i % 7 * 3000 + 10), f"reply {i}")
    diary.append(entry, dedupe=False)
    print(entry.id, flush=True)
"""


@pytest.mark.timeout(300)
def test_sigkill_mid_append_loses_no_acknowledged_turn(tmp_path):
    root = tmp_path / "agents" / "xiaoyue"
    rng = random.Random(7)
    acknowledged: list[str] = []
    for run in range(15):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Wait for the first acknowledged append (the interpreter start is slow), then kill at random.
        first = proc.stdout.readline()
        assert first, proc.stderr.read()
        acknowledged.append(first.strip())
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        # Only complete lines were acknowledged; a line cut by the kill is not.
        lines = out.split("\n")
        acknowledged.extend(ln for ln in lines[:-1] if ln)
    folder = root / "users" / "alice" / "memorys"
    found: set[str] = set()
    for path in sorted(folder.iterdir()):
        if DAY_FILE.match(path.name):
            load = load_day(path, tz=TZ, repair=False)
            assert not [p for p in load.problems if "skipped" in p], load.problems
            found.update(e.id for e in load.entries)
    missing = [a for a in acknowledged if a not in found]
    print(f"\n{len(acknowledged)} acknowledged turns over 15 kills, {len(found)} on disk, missing: {missing}")
    assert not missing
    assert len(acknowledged) > 15
