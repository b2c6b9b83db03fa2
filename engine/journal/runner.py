"""The journal: the unit of durability of every turn, and the queue of the stores' work.

`record` appends the turn to the user's journal (fsynced) and then to its chat's window, under
the user's journal lock (`users/<id>/.lock-journal`, across processes) and returns. The window
append is not fsynced: the journal is the durable copy, and whoever takes the lock next first
heals the windows from it (a turn the window lacks and did not fold yet is appended again).

Then each store's `record`, the summary fold and, for a forgotten turn, each store's `forget`
are jobs, run in journal order on the background worker by whichever process holds the user's
jobs lock (`users/<id>/.lock-jobs`). A job that finishes is marked done; one that raises is
marked failed and retried with exponential backoff, forever, visible in `status()` and in the
prompt diagnostics meanwhile. Jobs are idempotent by turn id, so a crash before a mark only
means the job runs again. No job runs while a lock is held, except the short apply step of a
fold (computed outside, stored by check-and-set under the window lock).
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial

from engine.journal.jobs import Jobs, diagnostics
from engine.journal.log import JOURNAL_FILE, Item, UserLog
from engine.journal.records import DoneRecord, FailRecord, ForgetRecord, TurnRecord
from engine.journal.status import JobState, JournalStatus, UserJournalStatus
from engine.paths import CharacterPaths
from engine.shortterm import DEFAULT_CHAT, ShortTermMemory, turn_of
from engine.shortterm.locks import lock_table
from engine.stores.base import Store, Turn
from engine.worker import JobError, Worker

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class JournalPolicy:
    """Timing of retries and compaction (defaults suit a service; tests shorten them)."""

    retry_base_s: float = 2.0
    """First retry after this long; doubled per failure, up to `retry_max_s`."""
    retry_max_s: float = 600.0
    compact_items: int = 64
    """Rewrite a journal without its finished turns once it holds this many of them."""
    seen_ids: int = 256
    """Turn ids remembered after compaction, so a re-sent turn stays a no-op."""
    backlog_s: float = 60.0
    """A job waiting longer than this is named in the prompt diagnostics."""
    busy_retry_s: float = 0.25
    """When another process is running a user's jobs, look again after this long."""


class Journal:
    def __init__(
        self,
        paths: CharacterPaths,
        *,
        short_term: ShortTermMemory,
        stores: Sequence[Store],
        worker: Worker,
        policy: JournalPolicy = JournalPolicy(),
    ) -> None:
        self.paths = paths
        self.short_term = short_term
        self.jobs = Jobs(short_term, stores)
        self.worker = worker
        self.policy = policy
        self.errors: deque[JobError] = deque(maxlen=100)
        self._locks = lock_table()
        self._logs: dict[str, UserLog] = {}
        self._opened: set[str] = set()
        self._closed = False

    # -- files and locks -----------------------------------------------------------------------

    def _log(self, user_id: str) -> UserLog:
        log_ = self._logs.get(user_id)
        if log_ is None:
            log_ = self._logs.setdefault(user_id, UserLog(self.paths.user(user_id).root / JOURNAL_FILE))
        return log_

    @contextlib.contextmanager
    def _locked(self, user_id: str) -> Iterator[UserLog]:
        """The user's journal lock, with the journal read up to date and the windows healed."""
        journal = self._log(user_id)
        with self._locks.get(journal.path.with_name(".lock-journal")).hold():
            journal.refresh()
            journal.repair()
            self._heal(user_id, journal)
            yield journal

    def _heal(self, user_id: str, journal: UserLog) -> None:
        """Apply to the windows what the journal has and they may lack (a writer died between the
        two writes, or the OS lost an unsynced append): idempotent, in journal order."""
        while journal.healed < len(journal.items):
            item = journal.items[journal.healed]
            if item.kind == "forget":
                self.short_term.remove_turn(user_id, item.key, chat_id=item.chat_id or DEFAULT_CHAT)
            elif item.key not in journal.forgotten:
                turn = item.turn
                # Under the window lock: a fold applied meanwhile cannot slip between the check and the append.
                with self.short_term.backend.lock(user_id, chat_id=turn.chat_id):
                    state = self.short_term.state(user_id, chat_id=turn.chat_id)
                    if not self.short_term.contains(turn, state=state) and not _folded(
                        journal, item, state.brain.summarized_through
                    ):
                        self.short_term.add_turn(turn, durable=False)
            journal.healed += 1

    # -- the synchronous part ------------------------------------------------------------------

    def record(self, turn: Turn, *, replaces: str | None = None) -> bool:
        """Journal the turn durably and add it to its window; False if this turn id was recorded before."""
        self._opened.add(turn.user_id)
        with self._locked(turn.user_id) as journal:
            if journal.knows(turn.id) or self.short_term.contains(turn):
                return False
            journal.append([TurnRecord(turn, replaces, time.time())], durable=True)
            # What _heal would do for these new items, without its checks (a new turn was never folded).
            if replaces is not None:
                chat = journal.forgotten[replaces].chat_id or turn.chat_id
                self.short_term.remove_turn(turn.user_id, replaces, chat_id=chat)
            self.short_term.add_turn(turn, durable=False)
            journal.healed = len(journal.items)
        self.kick(turn.user_id)
        return True

    def forget(self, user_id: str, turn_id: str) -> None:
        """Journal the forget durably, take the turn out of its window; the stores' part follows as jobs."""
        self._opened.add(user_id)
        with self._locked(user_id) as journal:
            journal.append([ForgetRecord(turn_id, journal.chat_of(turn_id), time.time())], durable=True)
            self._heal(user_id, journal)
        self.kick(user_id)

    # -- opening: replay what a crash left -----------------------------------------------------

    def open(self) -> None:
        """Replay every user's unfinished work, in the background (opening stays fast)."""
        self.worker.submit("journal.open", self._open_all, key=f"{self.paths.root}:open")

    def touch(self, user_id: str) -> None:
        """First sight of a user in this process: heal and replay it in the background."""
        if user_id not in self._opened:
            self._opened.add(user_id)
            self.worker.submit("journal.open", partial(self._open_user, user_id), key=f"{self.paths.root}:open:{user_id}")

    def _open_all(self) -> None:
        for user_id in self._journaled_users():
            if self._closed or self.worker.stopping:
                return
            self._opened.add(user_id)
            self._open_user(user_id)

    def _open_user(self, user_id: str) -> None:
        if self._closed or not self._log(user_id).path.exists():
            return  # nothing journaled: nothing to replay (and a reader creates no folder)
        with self._locked(user_id) as journal:
            todo = any(self._open_jobs(journal, item) for item in journal.items)
        if todo:
            self.kick(user_id)

    def _journaled_users(self) -> list[str]:
        users = self.paths.root / "users"
        if not users.is_dir():
            return []
        found = []
        for folder in sorted(users.iterdir()):
            try:
                if (folder / JOURNAL_FILE).stat().st_size > 0:
                    found.append(folder.name)
            except (FileNotFoundError, NotADirectoryError):
                continue
        return found

    # -- running jobs --------------------------------------------------------------------------

    def kick(self, user_id: str, *, delay: float = 0.0, retry: bool = False) -> None:
        if not self._closed:
            self.worker.submit("journal.drain", partial(self._drain, user_id), key=f"{self.paths.root}:drain:{user_id}",
                               delay=delay, retry=retry)

    def _open_jobs(self, journal: UserLog, item: Item) -> list[str]:
        if item.kind == "forget":
            jobs = self.jobs.forget_jobs
        elif item.key in journal.forgotten:
            return []  # taken back before its jobs ran: the forget jobs undo whatever did run
        else:
            jobs = self.jobs.turn_jobs
        return [j for j in jobs if (item.key, j) not in journal.done]

    def _drain(self, user_id: str) -> None:
        """Run every due job of one user, in journal order; one process at a time per user."""
        if self._closed:
            return
        journal = self._log(user_id)
        try:
            with self._locks.get(journal.path.with_name(".lock-jobs")).hold(blocking=False) as mine:
                if not mine:
                    # Another process runs this user's jobs (ours among them): look again later, but
                    # flush() and close() need not wait for that process.
                    self.kick(user_id, delay=self.policy.busy_retry_s, retry=True)
                    return
                with self._locked(user_id):
                    due = self._next_due(journal)
                while due is not None and not (self._closed or self.worker.stopping):
                    mark = self._run(user_id, *due)
                    with self._locked(user_id):  # one lock hold: the mark, and what is next
                        journal.append([mark], durable=False)
                        due = self._next_due(journal)
                self._compact(user_id)
        except Exception as exc:  # noqa: BLE001 - e.g. Redis down while healing: try again later
            log.warning("journal: running the jobs of %s failed: %s: %s", user_id, type(exc).__name__, exc)
            self.errors.append(JobError("journal.drain", f"{type(exc).__name__}: {exc}", time.time()))
            self.kick(user_id, delay=self.policy.retry_base_s, retry=True)
            return
        retry_at = journal.retry_times()
        if retry_at:
            self.kick(user_id, delay=max(0.0, min(retry_at) - time.time()), retry=True)

    def _next_due(self, journal: UserLog) -> tuple[Item, str] | None:
        now = time.time()
        for item in journal.items:
            for job in self._open_jobs(journal, item):
                fail = journal.fails.get((item.key, job))
                if fail is None or fail.retry_at <= now:
                    return item, job
        return None

    def _run(self, user_id: str, item: Item, job: str) -> DoneRecord | FailRecord:
        """Run one job (no lock held); the mark to journal for it."""
        try:
            self.jobs.run(job, user_id=user_id, turn_id=item.key, turn=None if item.kind == "forget" else item.turn)
        except Exception as exc:  # noqa: BLE001 - a failing job is kept, shown and retried, never fatal
            previous = self._log(user_id).fails.get((item.key, job))
            attempt = (previous.attempt if previous else 0) + 1
            delay = min(self.policy.retry_max_s, self.policy.retry_base_s * 2 ** (attempt - 1))
            delay *= random.uniform(0.9, 1.1)  # spread the retries of many users
            error = f"{type(exc).__name__}: {exc}"
            log.warning("journal: %s of turn %s (%s) failed (attempt %d, next in %.0fs): %s",
                        job, item.key, user_id, attempt, delay, error)
            self.errors.append(JobError(job, error, time.time()))
            return FailRecord(item.key, job, attempt, error[:2000], time.time() + delay)
        return DoneRecord(item.key, job)

    def _compact(self, user_id: str) -> None:
        with self._locked(user_id) as journal:
            unfinished = [i for i in journal.items if self._open_jobs(journal, i)]
            finished = len(journal.items) - len(unfinished)
            if finished < self.policy.compact_items:
                return
            # The windows' unsynced appends must be on disk before the journal forgets them.
            for chat in {i.chat_id for i in journal.items if i.kind == "turn"}:
                self.short_term.backend.sync(user_id, chat_id=chat or DEFAULT_CHAT)
            journal.compact(unfinished, seen_ids=self.policy.seen_ids)

    # -- status --------------------------------------------------------------------------------

    def user_status(self, user_id: str) -> UserJournalStatus:
        journal = self._log(user_id)
        journal.refresh()
        jobs = []
        for item in list(journal.items):
            for job in self._open_jobs(journal, item):
                fail = journal.fails.get((item.key, job))
                jobs.append(JobState(
                    user_id=user_id, turn_id=item.key, job=job, state="failed" if fail else "pending",
                    attempts=fail.attempt if fail else 0, error=fail.error if fail else None,
                    queued_at=_utc(item.written), retry_at=_utc(fail.retry_at) if fail else None,
                ))
        return UserJournalStatus(user_id, tuple(jobs), tuple(journal.problems()))

    def status(self, user_id: str | None = None) -> JournalStatus:
        """Unfinished work read from the journal files (any process's), per user with something to report."""
        users = [user_id] if user_id is not None else self._journaled_users()
        found = [s for s in (self.user_status(u) for u in users) if s.jobs or s.problems]
        return JournalStatus(self.paths.root.name, tuple(found))

    def diagnostics(self, user_id: str) -> list[str]:
        """For the prompt: failed jobs, work waiting longer than `backlog_s`, unreadable lines."""
        return diagnostics(self.user_status(user_id), backlog_s=self.policy.backlog_s)

    def close(self) -> None:
        self._closed = True


def _folded(journal: UserLog, item: Item, summarized_through: str | None) -> bool:
    """Whether the window's summary already covers this turn (it folded a later or the same turn)."""
    through = turn_of(summarized_through) if summarized_through else None
    if through is None:
        return False
    mine, theirs = journal.position(item.key), journal.position(through)
    return mine is not None and theirs is not None and theirs >= mine


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, timezone.utc)
