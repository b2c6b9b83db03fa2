"""The journal of the Postgres backend: the orchestrator's `Journal`, over the shared job queue.

`record` commits the turn, its window messages and its jobs (each store's record, the summary
fold) in one transaction before `record_turn` returns: an acknowledged turn is in the database.
Every worker process, on any host, claims any of its character's due jobs (`FOR UPDATE SKIP
LOCKED`, under a lease it renews while the job runs), so a turn recorded through one worker may
be digested by another, each job runs once at a time, and the jobs of a worker that died are taken
over once its lease runs out. A worker looks for work after each turn it records and every
`poll_interval_s` (for turns other workers recorded, retries and expired leases).

Facts and the summary depend on the order of turns: their jobs are *ordered* (one user's run one
at a time, in turn order). Diary entries are keyed by their time and need no order.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from datetime import timezone

from engine.journal import JournalPolicy, JournalStatus
from engine.journal.jobs import FOLD_JOB, Jobs, diagnostics
from engine.journal.status import JobState, UserJournalStatus
from engine.shortterm import ShortTermMemory
from engine.shortterm.memory import turn_messages
from engine.backends.postgres.journal import Job, JournalTurn, OpenJob, PgJournal
from engine.stores.base import Store, Turn
from engine.worker import JobError, Worker

log = logging.getLogger(__name__)

REPLACE_JOB = "forget"
"""PgJournal's job for a turn that replaces another: every store forgets the replaced turn."""
_CLAIM = 4


class PgJournalRunner:
    """The journal over the shared queue (`engine.journal.jobs.TurnJournal`)."""

    def __init__(self, journal: PgJournal, *, short_term: ShortTermMemory, stores: Sequence[Store], worker: Worker,
                 policy: JournalPolicy = JournalPolicy(), poll_interval_s: float = 1.0) -> None:
        self.pg = journal
        self.jobs = Jobs(short_term, stores)
        self.worker = worker
        self.policy = policy
        self.poll_interval_s = poll_interval_s
        self.errors: deque[JobError] = deque(maxlen=100)
        self._closed = False
        self._key = f"pg:{journal.character_id}:{id(self)}"
        self.ordered = [FOLD_JOB, *(f"{name}.record" for name in self.jobs.stores if name != "diary")]
        """Facts and the summary depend on the order of turns; diary entries are keyed by their time."""

    # -- the synchronous part ------------------------------------------------------------------

    def record(self, turn: Turn, *, replaces: str | None = None) -> bool:
        """Commit the turn with its window messages and jobs; False if this turn id was recorded before."""
        new = self.pg.record(
            JournalTurn(turn_id=turn.id, user_id=turn.user_id, at=turn.at, user=turn.user, assistant=turn.assistant,
                        chat_id=turn.chat_id, replaces=replaces),
            jobs=self.jobs.turn_jobs, ordered=self.ordered, window=turn_messages(turn),
        )
        if new:
            self.kick()
        return new

    def forget(self, user_id: str, turn_id: str) -> None:
        self.pg.forget(user_id, turn_id, jobs=self.jobs.forget_jobs)
        self.kick()

    # -- opening ---------------------------------------------------------------------------------

    def open(self) -> None:
        """Start looking for work: now, and every `poll_interval_s` (never waited for by flush)."""
        self.kick()
        self.worker.submit("journal.poll", self._poll, key=f"{self._key}:poll", delay=self.poll_interval_s, retry=True)

    def touch(self, user_id: str) -> None:
        """Nothing to replay per user: the queue is shared and polled."""

    def kick(self) -> None:
        if not self._closed:
            self.worker.submit("journal.drain", self._drain, key=f"{self._key}:drain")

    def _poll(self) -> None:
        if self._closed or self.worker.stopping:
            return
        try:
            self._drain()
        finally:
            if not self._closed:
                self.worker.submit("journal.poll", self._poll, key=f"{self._key}:poll", delay=self.poll_interval_s,
                                   retry=True)

    # -- running jobs --------------------------------------------------------------------------

    def _drain(self) -> None:
        """Claim and run due jobs until none is left (or the worker stops)."""
        while not (self._closed or self.worker.stopping):
            try:
                jobs = self.pg.claim(limit=_CLAIM)
            except Exception as exc:  # noqa: BLE001 - the database is down: the poll tries again
                self._note("journal.claim", exc)
                return
            if not jobs:
                return
            for job in jobs:
                if self._closed or self.worker.stopping:
                    return  # claimed but not run: the lease runs out and any worker takes it
                self._run(job)

    def _run(self, job: Job) -> None:
        t = job.turn
        turn = Turn(id=t.turn_id, user_id=t.user_id, at=t.at, user=t.user, assistant=t.assistant, chat_id=t.chat_id)
        try:
            with self._renewing(job):
                if job.name == REPLACE_JOB:
                    if t.replaces:
                        self.jobs.forget_everywhere(t.user_id, t.replaces)
                elif job.name.rpartition(".")[0] not in self.jobs.stores and job.name != FOLD_JOB:
                    log.warning("journal: job %s of turn %s names no store of this worker; done", job.name, t.turn_id)
                else:
                    forget = job.name.endswith(".forget")
                    self.jobs.run(job.name, user_id=t.user_id, turn_id=t.turn_id, turn=None if forget else turn)
        except Exception as exc:  # noqa: BLE001 - a failing job is kept, shown and retried, never fatal
            self._note(job.name, exc, f" of turn {t.turn_id} ({t.user_id}), attempt {job.attempts}")
            with contextlib.suppress(Exception):
                self.pg.fail(job, f"{type(exc).__name__}: {exc}")
            return
        try:
            if not self.pg.complete(job):
                log.info("journal: %s of turn %s outlived its lease; another worker ran it too", job.name, t.turn_id)
        except Exception as exc:  # noqa: BLE001 - not marked: it runs again (jobs are idempotent)
            self._note(job.name, exc, " (finished, but not marked done)")

    @contextlib.contextmanager
    def _renewing(self, job: Job) -> Iterator[None]:
        """Renew the job's lease while it runs, so a slow LLM call is not taken over by another worker."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(self.pg.lease_s / 3):
                try:
                    if not self.pg.extend(job):
                        return
                except Exception:  # noqa: BLE001 - the lease may run out; the job is idempotent
                    continue

        thread = threading.Thread(target=renew, name="kioku-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()

    def _note(self, job: str, exc: Exception, where: str = "") -> None:
        error = f"{type(exc).__name__}: {exc}"
        log.warning("journal: %s%s failed: %s", job, where, error)
        self.errors.append(JobError(job, error, time.time()))

    # -- status --------------------------------------------------------------------------------

    def user_status(self, user_id: str) -> UserJournalStatus:
        return UserJournalStatus(user_id, tuple(_state(j) for j in self.pg.open_jobs(user_id)), ())

    def status(self, user_id: str | None = None) -> JournalStatus:
        """Unfinished work of every worker, read from the database, per user with something to report."""
        by_user: dict[str, list[JobState]] = {}
        for j in self.pg.open_jobs(user_id):
            by_user.setdefault(j.user_id, []).append(_state(j))
        users = tuple(UserJournalStatus(u, tuple(jobs), ()) for u, jobs in sorted(by_user.items()))
        return JournalStatus(self.pg.character_id, users)

    def diagnostics(self, user_id: str) -> list[str]:
        """For the prompt: failed jobs and work waiting longer than `backlog_s`."""
        return diagnostics(self.user_status(user_id), backlog_s=self.policy.backlog_s)

    def close(self) -> None:
        self._closed = True


def _state(j: OpenJob) -> JobState:
    failed = j.last_error is not None and j.state == "pending"
    return JobState(
        user_id=j.user_id, turn_id=j.turn_id, job=j.name, state="failed" if failed else "pending",
        attempts=j.attempts, error=j.last_error if failed else None, queued_at=j.created_at.astimezone(timezone.utc),
        retry_at=j.next_attempt_at.astimezone(timezone.utc) if failed else None,
    )


__all__ = ["PgJournalRunner", "REPLACE_JOB"]
