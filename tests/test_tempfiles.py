"""Atomic writes after a SIGKILL: the temp file says whose it is, and the next write into the
folder removes leftovers of dead writers — never the temp file of a live one. Real processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.fileio import atomic_write_text
from engine.tempfiles import SUFFIX, clean_stale_temp_files, host_tag

ROOT = Path(__file__).resolve().parent.parent

# A writer that stalls after writing its temp file (fsync never returns), as a slow disk would.
STALLED_WRITER = """
import os, sys, time
from pathlib import Path
os.fsync = lambda fd: time.sleep(3600)
from engine.fileio import atomic_write_text
atomic_write_text(Path(sys.argv[1]), "new text that never lands")
"""


def _temps(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIX))


def _stalled_writer(target: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", STALLED_WRITER, str(target)], env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    deadline = time.monotonic() + 60
    while not [p for p in _temps(target.parent) if p.name.startswith(f".{target.name}.")]:
        assert proc.poll() is None and time.monotonic() < deadline, "the writer never created its temp file"
        time.sleep(0.02)
    return proc


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sigkill_leftover_is_removed_by_the_next_write_but_a_live_writers_is_not(tmp_path):
    target = tmp_path / "history.yaml"
    atomic_write_text(target, "old text\n")
    live = _stalled_writer(target)
    try:
        killed = _stalled_writer(tmp_path / "brain.yaml")
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert len(_temps(tmp_path)) == 2
        [leftover] = [p for p in _temps(tmp_path) if p.name.startswith(".brain.yaml.")]
        assert f".{host_tag()}.{killed.pid}." in leftover.name

        atomic_write_text(tmp_path / "core_mem.yml", "- text: 讨厌香菜\n")  # the next write into the folder
        remaining = _temps(tmp_path)
        assert leftover not in remaining
        assert [p.name.startswith(".history.yaml.") for p in remaining] == [True], "the live writer's temp file was removed"
        assert target.read_text(encoding="utf-8") == "old text\n"
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
    assert len(clean_stale_temp_files(tmp_path)) == 1  # now the writer is gone, its temp file is stale
    assert _temps(tmp_path) == []
    assert target.read_text(encoding="utf-8") == "old text\n"


HOUR = 3600
# (case id, file name with {host} {pid} {dead} placeholders, age in seconds, removed?)
CASES = [
    ("dead writer, fresh", ".h.yaml.{host}.{dead}.abcd1234" + SUFFIX, 0, True),
    ("live writer (this process), fresh", ".h.yaml.{host}.{pid}.abcd1234" + SUFFIX, 0, False),
    ("live pid but an hour old (a reused pid)", ".h.yaml.{host}.{pid}.abcd1234" + SUFFIX, 2 * HOUR, True),
    ("another host, fresh (its pids mean nothing here)", ".h.yaml.other-host.{dead}.abcd1234" + SUFFIX, 0, False),
    ("another host, an hour old", ".h.yaml.other-host.{dead}.abcd1234" + SUFFIX, 2 * HOUR, True),
    ("old-style name, fresh", ".history.yaml.k3j_9x2a.tmp", 0, False),
    ("old-style name, an hour old", ".history.yaml.k3j_9x2a.tmp", 2 * HOUR, True),
    ("someone else's .tmp", "notes.tmp", 2 * HOUR, False),
    ("hidden file that is not a temp", ".hidden.tmp", 2 * HOUR, False),
    ("the data itself", "history.yaml", 2 * HOUR, False),
]


@pytest.mark.parametrize("name, age, removed", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_which_temp_files_are_stale(tmp_path, name, age, removed):
    path = tmp_path / name.format(host=host_tag(), pid=os.getpid(), dead=_dead_pid())
    path.write_text("x", encoding="utf-8")
    then = time.time() - age
    os.utime(path, (then, then))
    assert (clean_stale_temp_files(tmp_path) == [path]) is removed
    assert path.exists() is not removed


LIBRARY_WRITER = """
import os, sys, time
# A slow disk: every fsync takes 50 ms, so a kill often lands inside an atomic write.
_fsync = os.fsync
os.fsync = lambda fd: (time.sleep(0.05), _fsync(fd))[1]
from datetime import datetime, timedelta, timezone
from engine.orchestrator import MemoryOrchestrator
start = datetime(2026, 11, 1, tzinfo=timezone.utc)
with MemoryOrchestrator.from_config("xiaoyue", data_dir=sys.argv[1]) as orch:
    for i in range(100000):
        orch.record_turn(f"第{i}句：今天去了老码头", f"好的{i}", user_id="u1", at=start + timedelta(minutes=i))
        if i % 3 == 0:
            orch.flush()
        print(i, flush=True)
"""


def test_library_writes_killed_at_random_leave_nothing_after_the_next_open(tmp_path):
    """Through the library: kill a process recording turns with SIGKILL a few times; whatever temp
    files each kill left, the next process that writes into those folders removes them."""
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    left = []
    for turns in (3, 6, 9):
        proc = subprocess.Popen([sys.executable, "-c", LIBRARY_WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
        for line in proc.stdout:
            if int(line.split()[0]) >= turns:
                break
        # Kill while the stores write (the flush every third turn rewrites facts, indexes, summary).
        deadline = time.monotonic() + 60
        while not list(tmp_path.rglob(f"*.{proc.pid}.*{SUFFIX}")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left.append(len([p for p in tmp_path.rglob("*") if p.name.endswith(SUFFIX)]))
    print(f"\ntemp files present after each SIGKILL (earlier ones are removed by the next run's writes): {left}")
    assert left[-1] > 0, "no kill landed inside an atomic write: the test shows nothing"
    from engine.orchestrator import MemoryOrchestrator

    with MemoryOrchestrator.from_config("xiaoyue", data_dir=tmp_path) as orch:
        orch.record_turn("再见", "明天见", user_id="u1")
        orch.flush()
    assert [p for p in tmp_path.rglob("*") if p.name.endswith((SUFFIX, ".tmp"))] == []
