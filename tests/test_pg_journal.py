"""The journal / job queue and the window in a real PostgreSQL, with real worker processes."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")  # before the imports below

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from engine.shortterm.backend import WindowMessage
from engine.backends.postgres.journal import JournalTurn, PgJournal
from engine.backends.postgres.window import PgWindow
from pg_server import pg, pg_db, pg_plain_server, pg_vector_server  # noqa: E402, F401 - fixtures


class Clock:
    """The time the journal judges due jobs and leases by, moved by the test (no sleeping): it
    starts at the database's present, so rows written with the server's now() are not in its future."""

    def __init__(self) -> None:
        self.now = datetime.now(timezone.utc) + timedelta(seconds=1)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

T0 = datetime(2026, 5, 1, 21, 0, tzinfo=timezone(timedelta(hours=8)))
REPO = Path(__file__).resolve().parents[1]
JOBS = ("diary", "core", "summary")


def jturn(i: int, user: str = "u1", **kw) -> JournalTurn:
    return JournalTurn(turn_id=f"t{i:04d}", user_id=user, at=T0 + timedelta(minutes=i), user=f"hi {i}",
                       assistant=f"hello {i}", **kw)


def msgs(i: int) -> list[WindowMessage]:
    at = (T0 + timedelta(minutes=i)).isoformat()
    return [WindowMessage(f"t{i:04d}-u", "user", f"hi {i}", at, 2), WindowMessage(f"t{i:04d}-a", "assistant", f"hello {i}", at, 2)]


class TestJournal:
    def test_record_is_one_idempotent_transaction_with_window_and_jobs(self, pg):
        db, _, _ = pg
        journal, window = PgJournal(db, "c"), PgWindow(db, "c")
        assert journal.record(jturn(1), jobs=JOBS, window=msgs(1)) is True
        assert journal.record(jturn(1), jobs=JOBS, window=msgs(1)) is False
        assert journal.pending("u1") == 3
        assert [m.id for m in window.load("u1").messages] == ["t0001-u", "t0001-a"]
        claimed = journal.claim(limit=10)
        assert sorted(j.name for j in claimed) == sorted(JOBS)
        assert all(j.turn == jturn(1) and j.attempts == 1 for j in claimed)
        assert journal.claim(limit=10) == []
        assert all(journal.complete(j) for j in claimed)
        assert journal.pending() == 0

    def test_failed_jobs_back_off_stay_visible_and_are_retried(self, pg):
        db, _, _ = pg
        clock = Clock()
        journal = PgJournal(db, "c", backoff_s=30, clock=clock)
        journal.record(jturn(1), jobs=["core"])
        job = journal.claim()[0]
        assert journal.fail(job, "LLMError: upstream 500")
        clock.advance(29)
        assert journal.claim() == []  # not before the backoff
        [problem] = journal.problems()
        assert (problem.turn_id, problem.name, problem.attempts, problem.last_error) == ("t0001", "core", 1, "LLMError: upstream 500")
        clock.advance(2)
        again = journal.claim()[0]
        assert again.attempts == 2 and again.last_error == "LLMError: upstream 500"
        assert journal.complete(again)
        assert journal.problems() == []

    def test_ordered_jobs_run_one_at_a_time_in_turn_order(self, pg):
        db, _, _ = pg
        journal = PgJournal(db, "c")
        for i in range(3):
            journal.record(jturn(i), jobs=["summary", "diary"], ordered=["summary"])
        first = journal.claim(limit=10)
        assert sorted((j.name, j.turn.turn_id) for j in first) == [
            ("diary", "t0000"), ("diary", "t0001"), ("diary", "t0002"), ("summary", "t0000")]
        summary = next(j for j in first if j.name == "summary")
        assert journal.claim(limit=10) == []
        journal.complete(summary)
        assert [(j.name, j.turn.turn_id) for j in journal.claim(limit=10)] == [("summary", "t0001")]

    def test_a_regenerated_turn_carries_a_forget_job(self, pg):
        db, _, _ = pg
        journal = PgJournal(db, "c")
        journal.record(jturn(1), jobs=JOBS)
        journal.record(jturn(2, replaces="t0001"), jobs=JOBS)
        names = {(j.name, j.turn.turn_id, j.turn.replaces) for j in journal.claim(limit=10)}
        assert ("forget", "t0002", "t0001") in names
        assert [t.turn_id for t in journal.turns("u1", last=2)] == ["t0001", "t0002"]


CLAIMER = textwrap.dedent("""
    import sys, time
    from engine.backends.postgres import Database, PgSettings
    from engine.backends.postgres.journal import PgJournal
    db = Database(PgSettings(url=sys.argv[1], max_connections=2), environ={}).open()
    journal = PgJournal(db, "c", worker_id=sys.argv[2], lease_s=float(sys.argv[3]))
    mode = sys.argv[4]
    if mode == "hang":
        job = journal.claim()[0]
        print(job.id, flush=True)
        time.sleep(600)   # killed here, mid-job
    idle = 0
    while idle < 3:
        jobs = journal.claim(limit=3)
        if not jobs:
            idle += 1; time.sleep(0.05); continue
        idle = 0
        for job in jobs:
            time.sleep(0.002)
            assert journal.complete(job)
            print(job.id, flush=True)
""")


def _worker(conninfo: str, name: str, lease: float, mode: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", CLAIMER, conninfo, name, str(lease), mode], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_worker_processes_share_the_queue_and_do_each_job_once(pg):
    db, _, info = pg
    journal = PgJournal(db, "c")
    for user in ("u1", "u2", "u3"):
        for i in range(40):
            journal.record(jturn(i, user=user), jobs=JOBS, window=msgs(i))
    procs = [_worker(info.conninfo, f"w{n}", 60, "drain") for n in (1, 2)]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        done.append([int(x) for x in out.split()])
    assert len(done[0]) > 0 and len(done[1]) > 0  # both did work
    assert not set(done[0]) & set(done[1])        # never the same job twice
    assert len(done[0]) + len(done[1]) == 3 * 40 * len(JOBS)
    assert journal.pending() == 0


def test_a_job_of_a_killed_worker_is_claimable_again_after_its_lease(pg):
    db, _, info = pg
    clock = Clock()
    journal = PgJournal(db, "c", worker_id="survivor", clock=clock)
    journal.record(jturn(1), jobs=["core"])
    proc = _worker(info.conninfo, "doomed", 60.0, "hang")
    job_id = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert journal.claim() == []  # still leased to the dead worker
    clock.advance(61)  # the database's time, as this worker sees it, past the dead worker's lease
    [job] = journal.claim()
    assert (job.id, job.attempts) == (job_id, 2)
    assert journal.complete(job)
    # The dead worker's claim (attempt 1) can no longer complete or fail it.
    stale = PgJournal(db, "c", worker_id="doomed")
    from dataclasses import replace
    assert stale.complete(replace(job, attempts=1)) is False


class TestWindow:
    def test_fold_is_check_and_set_and_keeps_appends_made_meanwhile(self, pg):
        db, _, _ = pg
        window = PgWindow(db, "c")
        for i in range(4):
            window.append("u1", msgs(i), chat_id="c1")
        state = window.load("u1", chat_id="c1")
        assert state.version == 0 and len(state.messages) == 8
        # Summary computed outside any lock from `state`; meanwhile another turn arrives.
        window.append("u1", msgs(4), chat_id="c1")
        assert window.fold("u1", chat_id="c1", expected_version=0, summary="S1", through="t0001-a")
        # A second fold computed from the same (now stale) state is refused.
        assert not window.fold("u1", chat_id="c1", expected_version=0, summary="S1'", through="t0002-a")
        after = window.load("u1", chat_id="c1")
        assert (after.summary, after.summarized_through, after.version) == ("S1", "t0001-a", 1)
        assert [m.id for m in after.messages] == [m.id for i in (2, 3, 4) for m in msgs(i)]
        # Chats are separate windows.
        assert window.load("u1").messages == () and window.chats("u1") == ["c1"]

    def test_forget_removes_a_regenerated_turn_from_the_window(self, pg):
        db, _, _ = pg
        window = PgWindow(db, "c")
        window.append("u1", msgs(1) + msgs(2))
        assert window.forget("u1", ["t0002-u", "t0002-a"]) == 2
        assert [m.id for m in window.load("u1").messages] == ["t0001-u", "t0001-a"]
