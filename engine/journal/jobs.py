"""What the journal's jobs do, and what the orchestrator asks of a journal: one definition for the
files journal (`runner.Journal`, per-user journal files) and the Postgres one (a queue shared by
every worker, `engine.backends.postgres.runner`), which differ only in how jobs are kept and
claimed.

A turn's jobs are each store's `record` and the summary fold; a forgotten (or replaced) turn's
are each forgetting store's `forget`. Every job is idempotent by turn id: it may run again after
a crash or a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Protocol

from engine.journal.status import JournalStatus, UserJournalStatus
from engine.shortterm import FoldConflictError, ShortTermMemory
from engine.stores.base import Store, Turn
from engine.worker import JobError

FOLD_JOB = "summary.fold"


class Jobs:
    """The jobs of one character's stores and summary, by name."""

    def __init__(self, short_term: ShortTermMemory, stores: Sequence[Store]) -> None:
        self.short_term = short_term
        self.stores = {s.name: s for s in stores}
        self.turn_jobs = [f"{name}.record" for name in self.stores] + [FOLD_JOB]
        """What a recorded turn sets off, in order (the diary first: it keeps the turn)."""
        self.forget_jobs = [f"{name}.forget" for name, s in self.stores.items() if callable(getattr(s, "forget", None))]
        """What a forgotten turn sets off: each store that can take a turn back."""

    def run(self, job: str, *, user_id: str, turn_id: str, turn: Turn | None) -> None:
        """Run one job; `turn` is the recorded turn (None for a forget job). Raises what it raises."""
        store_name, _, action = job.rpartition(".")
        if job == FOLD_JOB or action == "record":
            if turn is None:
                raise ValueError(f"job {job!r} of turn {turn_id!r} needs the turn")
            if job == FOLD_JOB:
                self.fold(turn)
                return
        store = self.stores.get(store_name)
        if store is None:
            raise KeyError(f"job {job!r} names no store of this engine (have: {', '.join(self.stores)})")
        if action == "record":
            store.record(turn)  # type: ignore[arg-type]
        else:
            store.forget(user_id, turn_id)  # type: ignore[attr-defined]

    def forget_everywhere(self, user_id: str, turn_id: str) -> None:
        """Every forget job of a turn, in one go (a replaced turn, on the shared queue)."""
        for job in self.forget_jobs:
            self.stores[job.rpartition(".")[0]].forget(user_id, turn_id)  # type: ignore[attr-defined]

    def fold(self, turn: Turn) -> None:
        """Summary: computed with no lock held (LLM), applied by check-and-set if still current."""
        for _ in range(3):
            fold = self.short_term.prepare_fold(turn.user_id, chat_id=turn.chat_id, now=turn.at)
            if fold is None or self.short_term.apply_fold(turn.user_id, fold, chat_id=turn.chat_id):
                return
        raise FoldConflictError(f"summary of {turn.user_id}/{turn.chat_id}: the window kept changing; will retry")


class TurnJournal(Protocol):
    """What the orchestrator asks of a journal (`engine.factory.make_journal` picks one)."""

    errors: Sequence[JobError]
    """Recent failures of jobs, newest last."""

    def record(self, turn: Turn, *, replaces: str | None = None) -> bool:
        """Durably journal the turn (and its window messages) before returning; False when this turn
        id was recorded before. `replaces`: a turn id forgotten in the same write."""

    def forget(self, user_id: str, turn_id: str) -> None:
        """Durably journal that the turn is taken back; the stores' part follows as jobs."""

    def open(self) -> None:
        """Start running what is due (work a crash or another process left), in the background."""

    def touch(self, user_id: str) -> None:
        """First sight of a user in this process (a journal may replay that user's work)."""

    def status(self, user_id: str | None = None) -> JournalStatus:
        """Unfinished work, per user with something to report."""

    def user_status(self, user_id: str) -> UserJournalStatus: ...

    def diagnostics(self, user_id: str) -> list[str]:
        """For the prompt: failed jobs and work waiting too long (`diagnostics`)."""

    def close(self) -> None: ...


def diagnostics(status: UserJournalStatus, *, backlog_s: float, now: datetime | None = None) -> list[str]:
    """A user's unfinished work as prompt diagnostics: unreadable lines, failed jobs, and work
    waiting longer than `backlog_s`."""
    now = now or datetime.now(timezone.utc)
    lines = [f"journal: {p}" for p in status.problems]
    failed = [j for j in status.jobs if j.state == "failed"]
    for j in failed[:5]:
        lines.append(f"journal: {j.job} of turn {j.turn_id} failed {j.attempts}x, retried at "
                     f"{j.retry_at:%H:%M:%S} UTC: {j.error}")
    if len(failed) > 5:
        lines.append(f"journal: {len(failed) - 5} more failed job(s)")
    late = [j for j in status.jobs if j.state == "pending" and (now - j.queued_at).total_seconds() > backlog_s]
    if late:
        age = (now - late[0].queued_at).total_seconds()
        lines.append(f"journal: {len(late)} job(s) waiting longer than {backlog_s:g}s "
                     f"(oldest: {late[0].job} of turn {late[0].turn_id}, {age:.0f}s)")
    return lines
