"""The durable journal and job queue in PostgreSQL, shared by every worker on every host.

`record` commits the turn, its window messages and its jobs in one transaction before
`record_turn` returns; recording the same turn id again does nothing. Workers `claim` jobs with
`FOR UPDATE SKIP LOCKED` (two workers never get the same job) and hold them under a lease: a
worker that dies mid-job (SIGKILL, host lost) stops renewing, and after `lease_until` the job
is claimable again (`attempts` counts every claim). `complete` marks a job done only if this
worker still holds it; `fail` puts it back with exponential backoff and the error kept visible.
Jobs are never dropped: `problems` lists those that failed and are waiting, with their error.

Ordered jobs (the summary fold, for example) of one (user, job name) run one at a time in turn
order: a claim skips a job while an earlier one of the same user and name is unfinished.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from engine.backends.postgres.connect import Database
from engine.backends.postgres.owners import Owners, join_time, split_time
from engine.backends.postgres.window import append_in
from engine.shortterm.backend import WindowMessage


@dataclass(frozen=True)
class JournalTurn:
    """An acknowledged turn as the journal keeps it."""

    turn_id: str
    user_id: str
    at: datetime
    user: str
    assistant: str
    chat_id: str = "default"
    replaces: str | None = None
    """The turn this one replaces (regenerate): a `forget` job is enqueued with this turn (its
    `turn.replaces` names what to forget); store jobs may also forget it first themselves, as
    forgetting is idempotent."""


@dataclass(frozen=True)
class Job:
    """One claimed unit of background work."""

    id: int
    name: str
    turn: JournalTurn
    attempts: int
    """How many times it was claimed, this claim included."""
    last_error: str | None


@dataclass(frozen=True)
class JobProblem:
    """A job that is not done and has failed at least once (for diagnostics, /health, kioku status)."""

    user_id: str
    turn_id: str
    name: str
    attempts: int
    last_error: str
    next_attempt_at: datetime


@dataclass(frozen=True)
class OpenJob:
    """A job not done yet, as `open_jobs` lists it (status, diagnostics)."""

    user_id: str
    turn_id: str
    name: str
    state: str
    """`pending` (waiting, maybe after a failure) or `running` (claimed by a worker)."""
    attempts: int
    last_error: str | None
    created_at: datetime
    next_attempt_at: datetime


def _take_back(conn, owner: int, turn_id: str) -> None:
    """A forgotten (or replaced) turn: out of every chat's window, its unstarted record jobs
    cancelled (the stores' forget jobs undo whatever did run)."""
    conn.execute("DELETE FROM window_messages WHERE owner_id = %s AND msg_id = ANY(%s)",
                 (owner, [f"{turn_id}:u", f"{turn_id}:a"]))
    conn.execute("UPDATE jobs SET state = 'done', done_at = now(), last_error = 'cancelled: the turn was forgotten' "
                 "WHERE owner_id = %s AND turn_id = %s AND state = 'pending' AND name LIKE %s",
                 (owner, turn_id, "%.record"))


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class PgJournal:
    """The journal of one character's users."""

    def __init__(self, db: Database, character_id: str, *, owners: Owners | None = None, lease_s: float = 60.0,
                 backoff_s: float = 2.0, max_backoff_s: float = 600.0, worker_id: str | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        """`clock`: the time due jobs and leases are judged by (tests); None: the database's `now()`,
        one clock for every worker on every host."""
        self.db = db
        self.clock = clock
        self.owners = owners or Owners(character_id)
        self.character_id = self.owners.character_id
        self.lease_s = lease_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.worker_id = worker_id or default_worker_id()

    def record(self, turn: JournalTurn, *, jobs: Sequence[str], ordered: Sequence[str] = (),
               window: Sequence[WindowMessage] = ()) -> bool:
        """Durably record an acknowledged turn with its window messages and jobs (one
        transaction). Returns False if the turn id was recorded before (nothing is written)."""
        at, off = split_time(turn.at, what=f"turn {turn.turn_id!r} time")
        with self.db.tx() as conn:
            owner = self.owners.get(conn, turn.user_id)
            new = conn.execute(
                "INSERT INTO journal_turns (owner_id, turn_id, chat_id, at, at_off, user_text, assistant_text, replaces) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (owner, turn.turn_id, turn.chat_id, at, off, turn.user, turn.assistant, turn.replaces)).rowcount == 1
            if not new:
                return False
            if turn.replaces:
                _take_back(conn, owner, turn.replaces)
            if window:
                append_in(conn, owner, window, chat_id=turn.chat_id)
            names = list(dict.fromkeys((["forget"] if turn.replaces else []) + list(jobs)))
            with conn.cursor() as cur:
                for name in names:
                    cur.execute("INSERT INTO jobs (owner_id, turn_id, name, ordered) VALUES (%s, %s, %s, %s) "
                                "ON CONFLICT DO NOTHING", (owner, turn.turn_id, name, name in ordered))
            return True

    def forget(self, user_id: str, turn_id: str, *, jobs: Sequence[str]) -> None:
        """Take a turn back durably (one transaction): out of every chat's window now, its
        unstarted record jobs cancelled, and `jobs` (each store's forget) enqueued. A turn this
        journal never recorded (imported) gets a stub row: recording its id later stays a no-op."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            conn.execute(
                "INSERT INTO journal_turns (owner_id, turn_id, chat_id, at, at_off, user_text, assistant_text) "
                "VALUES (%s, %s, 'default', now(), 0, '', '') ON CONFLICT DO NOTHING", (owner, turn_id))
            _take_back(conn, owner, turn_id)
            with conn.cursor() as cur:
                for name in jobs:
                    cur.execute("INSERT INTO jobs (owner_id, turn_id, name) VALUES (%s, %s, %s) "
                                "ON CONFLICT (owner_id, turn_id, name) DO UPDATE SET state = 'pending', "
                                "next_attempt_at = now(), lease_until = NULL WHERE jobs.state = 'done'",
                                (owner, turn_id, name))

    def open_jobs(self, user_id: str | None = None, *, limit: int = 1000) -> list[OpenJob]:
        """Unfinished jobs (of one user, or of the character), oldest first."""
        with self.db.tx() as conn:
            rows = conn.execute(
                "SELECT o.user_id, j.turn_id, j.name, j.state, j.attempts, j.last_error, j.created_at, j.next_attempt_at "
                "FROM jobs j JOIN owners o ON o.id = j.owner_id WHERE o.character_id = %s "
                "AND (%s::text IS NULL OR o.user_id = %s) AND j.state <> 'done' ORDER BY j.id LIMIT %s",
                (self.character_id, user_id, user_id, limit)).fetchall()
        return [OpenJob(*r) for r in rows]

    def claim(self, *, limit: int = 1, names: Sequence[str] | None = None) -> list[Job]:
        """Take up to `limit` ready jobs (due, or whose lease ran out) for this worker."""
        with self.db.tx() as conn:
            rows = conn.execute(_CLAIM_SQL, {
                "character": self.character_id, "names": list(names) if names else None, "limit": limit,
                "lease": self.lease_s, "worker": self.worker_id, "now": self._now(),
            }).fetchall()
        return [_job(r) for r in rows]

    def complete(self, job: Job) -> bool:
        """Mark done; False if this worker lost the job (lease ran out and another took it)."""
        with self.db.tx() as conn:
            return conn.execute(
                "UPDATE jobs SET state = 'done', done_at = now(), lease_until = NULL "
                "WHERE id = %s AND state = 'running' AND claimed_by = %s AND attempts = %s",
                (job.id, self.worker_id, job.attempts)).rowcount == 1

    def fail(self, job: Job, error: str) -> bool:
        """Give the job back with the error; it is retried after backoff_s * 2^(attempts-1)
        (capped at max_backoff_s). False if this worker no longer held it."""
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** max(0, job.attempts - 1))
        with self.db.tx() as conn:
            return conn.execute(
                "UPDATE jobs SET state = 'pending', last_error = %s, lease_until = NULL, "
                "next_attempt_at = coalesce(%s::timestamptz, now()) + make_interval(secs => %s) "
                "WHERE id = %s AND state = 'running' AND claimed_by = %s AND attempts = %s",
                (error[:2000], self._now(), delay, job.id, self.worker_id, job.attempts)).rowcount == 1

    def extend(self, job: Job) -> bool:
        """Renew the lease of a long job; False if it was lost."""
        with self.db.tx() as conn:
            return conn.execute(
                "UPDATE jobs SET lease_until = coalesce(%s::timestamptz, now()) + make_interval(secs => %s) "
                "WHERE id = %s AND state = 'running' AND claimed_by = %s AND attempts = %s",
                (self._now(), self.lease_s, job.id, self.worker_id, job.attempts)).rowcount == 1

    def _now(self) -> datetime | None:
        return None if self.clock is None else self.clock()

    def pending(self, user_id: str | None = None) -> int:
        """Jobs not done yet (of one user, or of the character)."""
        with self.db.tx() as conn:
            if user_id is None:
                return conn.execute("SELECT count(*) FROM jobs j JOIN owners o ON o.id = j.owner_id "
                                    "WHERE o.character_id = %s AND j.state <> 'done'", (self.character_id,)).fetchone()[0]
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return 0
            return conn.execute("SELECT count(*) FROM jobs WHERE owner_id = %s AND state <> 'done'", (owner,)).fetchone()[0]

    def problems(self, *, limit: int = 50) -> list[JobProblem]:
        """Unfinished jobs that failed at least once, oldest first."""
        with self.db.tx() as conn:
            rows = conn.execute(
                "SELECT o.user_id, j.turn_id, j.name, j.attempts, j.last_error, j.next_attempt_at FROM jobs j "
                "JOIN owners o ON o.id = j.owner_id WHERE o.character_id = %s AND j.state <> 'done' "
                "AND j.last_error IS NOT NULL ORDER BY j.id LIMIT %s", (self.character_id, limit)).fetchall()
        return [JobProblem(*r) for r in rows]

    def turns(self, user_id: str, *, chat_id: str | None = None, last: int = 2) -> list[JournalTurn]:
        """The user's most recent recorded turns, oldest first (regenerate detection)."""
        rows = self.owners.rows(
            self.db, user_id,
            "SELECT turn_id, at, at_off, user_text, assistant_text, chat_id, replaces FROM journal_turns "
            "WHERE owner_id = %s AND (%s::text IS NULL OR chat_id = %s) ORDER BY recorded_at DESC, at DESC LIMIT %s",
            chat_id, chat_id, last)
        return [JournalTurn(turn_id=r[0], user_id=user_id, at=join_time(r[1], r[2]), user=r[3], assistant=r[4],
                            chat_id=r[5], replaces=r[6]) for r in reversed(rows)]


# Ready = pending and due, or running with an expired lease (its worker died). For ordered jobs,
# no earlier unfinished job of the same owner and name may exist. SKIP LOCKED: rows another
# worker is claiming right now are passed over, not waited for.
_CLAIM_SQL = """
WITH ready AS (
    SELECT j.id FROM jobs j JOIN owners o ON o.id = j.owner_id
    WHERE o.character_id = %(character)s
      AND j.state <> 'done'
      AND ((j.state = 'pending' AND j.next_attempt_at <= coalesce(%(now)s::timestamptz, now()))
           OR (j.state = 'running' AND j.lease_until < coalesce(%(now)s::timestamptz, now())))
      AND (%(names)s::text[] IS NULL OR j.name = ANY(%(names)s::text[]))
      AND (NOT j.ordered OR NOT EXISTS (
            SELECT 1 FROM jobs e WHERE e.owner_id = j.owner_id AND e.name = j.name AND e.id < j.id AND e.state <> 'done'))
    ORDER BY j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1, claimed_by = %(worker)s,
                lease_until = coalesce(%(now)s::timestamptz, now()) + make_interval(secs => %(lease)s)
FROM ready, journal_turns t, owners o
WHERE jobs.id = ready.id AND t.owner_id = jobs.owner_id AND t.turn_id = jobs.turn_id AND o.id = jobs.owner_id
RETURNING jobs.id, jobs.name, jobs.attempts, jobs.last_error, o.user_id, t.turn_id, t.at, t.at_off, t.user_text,
          t.assistant_text, t.chat_id, t.replaces
"""


def _job(row) -> Job:
    jid, name, attempts, last_error, user_id, turn_id, at, off, user, assistant, chat_id, replaces = row
    return Job(id=jid, name=name, attempts=attempts, last_error=last_error,
               turn=JournalTurn(turn_id=turn_id, user_id=user_id, at=join_time(at, off), user=user,
                                assistant=assistant, chat_id=chat_id, replaces=replaces))
