"""Two processes record turns for the same user at once: day-file appends take the per-user file
lock (no interleaved or lost entries), and each process writes its own search index files (only
one owns the shared one), so every turn is in the diary and searchable afterwards."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta
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
from engine.config import DiaryConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Turn
from engine.factory import files_diary_store

class HashEmbedder:  # the embedder is not under test here; the file locking is
    model_id, dim, default_thresholds = "hash", 8, {"diary_filter": 0.5, "diary_fallback": 0.5}
    def embed(self, texts, *, role="passage"):
        out = np.array([[zlib.crc32(f"{t}{i}".encode()) % 97 + 1 for i in range(8)] for t in texts], np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

root, who = Path(sys.argv[1]), sys.argv[2]
tz = ZoneInfo("Asia/Shanghai")
store = files_diary_store(CharacterPaths(root), DiaryConfig(), embedder=HashEmbedder(), llm=None, tz=tz,
                          prompts=Prompts("zh"), budget_tokens=1500)
at = datetime(2026, 11, 21, 23, 59, tzinfo=tz)
for i in range(40):
    store.record(Turn(f"{who}-{i}", "alice", at + timedelta(seconds=3 * i), f"{who} 说第{i}句 火锅{'长' * (i * 50)}", "嗯"))
store.close()
print("done", flush=True)
"""


@pytest.mark.timeout(300)
def test_two_processes_append_to_one_user(tmp_path):
    root = tmp_path / "agents" / "xiaoyue"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(root), who], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for who in ("p1", "p2")
    ]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and "done" in out, err[-2000:]
    folder = root / "users/alice/memorys"
    ids = []
    for path in sorted(folder.iterdir()):
        if DAY_FILE.match(path.name):
            load = load_day(path, tz=TZ, repair=False)
            assert load.problems == []
            ids += [e.id for e in load.entries]
    assert sorted(ids) == sorted(f"{w}-{i}" for w in ("p1", "p2") for i in range(40))
    assert not list((root / ".cache/users/alice/diary").glob("search-*"))  # private copies are removed
    # A third process opens the user: the shared index is complete (reconciled with the files).
    reader = WRITER.split("root, who")[0] + (
        "root = Path(sys.argv[1]); tz = ZoneInfo('Asia/Shanghai')\n"
        "store = files_diary_store(CharacterPaths(root), DiaryConfig(), embedder=HashEmbedder(), llm=None,"
        " tz=tz, prompts=Prompts('zh'), budget_tokens=1500)\n"
        "print(len(store.backend.user('alice').search), len(store.search('alice', '火锅', k=200)))\n"
    )
    out = subprocess.run([sys.executable, "-c", reader, str(root)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "80"


HOLDER = WRITER.split("at = datetime")[0] + r"""
store.record(Turn(f"{who}-0", "alice", datetime(2026, 11, 21, 23, 0, tzinfo=tz), f"{who} 说 火锅", "嗯"))
print("ready", flush=True)
sys.stdin.readline()  # hold the diary open until told (or killed)
store.close()
print("done", flush=True)
"""


def _hold(root, who):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), who], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read()[-2000:]
    return p


def _release(p):
    out, err = p.communicate("\n", timeout=120)
    assert p.returncode == 0 and "done" in out, err[-2000:]


@pytest.mark.timeout(300)
def test_a_killed_workers_search_copy_is_removed_by_the_next_open_and_a_live_ones_is_not(tmp_path):
    root = tmp_path / "agents" / "xiaoyue"
    cache = root / ".cache/users/alice/diary"
    owner = _hold(root, "owner")  # holds the shared index
    live = _hold(root, "live")  # a second worker: its own copy
    crashed = _hold(root, "crashed")  # a third, killed without closing
    copies = {c for c in cache.glob("search-*") if c.is_dir()}
    assert len(copies) == 2
    crashed.kill()
    crashed.wait(timeout=60)
    assert len([c for c in cache.glob("search-*") if c.is_dir()]) == 2  # the dead one's copy is still there
    # A fourth process opens the user (a restarted worker): the dead copy goes, the live one stays.
    _release(_hold(root, "restarted"))
    left = [c for c in cache.glob("search-*") if c.is_dir()]
    assert len(left) == 1 and left[0] in copies
    _release(live)
    _release(owner)
    assert not list(cache.glob("search-*"))  # neither copies nor their lock files remain
    ids = []
    for path in sorted((root / "users/alice/memorys").iterdir()):
        if DAY_FILE.match(path.name):
            ids += [e.id for e in load_day(path, tz=TZ, repair=False).entries]
    assert sorted(ids) == ["crashed-0", "live-0", "owner-0", "restarted-0"]  # the killed one's turn was acknowledged
