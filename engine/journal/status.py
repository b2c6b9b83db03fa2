"""What the journal has not finished yet, as typed values for `kioku status`, `/health` and prompts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class JobState:
    """One unfinished job of one turn."""

    user_id: str
    turn_id: str
    """The turn it belongs to (for a forget job, the turn being forgotten)."""
    job: str
    """`<store>.record`, `summary.fold` or `<store>.forget`."""
    state: Literal["pending", "failed"]
    """pending: not tried yet (or being tried); failed: tried and raised, waiting for its retry."""
    attempts: int
    error: str | None
    """The last failure, for a failed job."""
    queued_at: datetime
    """When the turn was journaled."""
    retry_at: datetime | None
    """When a failed job is tried again."""


@dataclass(frozen=True)
class UserJournalStatus:
    user_id: str
    jobs: tuple[JobState, ...]
    """Unfinished jobs in journal order."""
    problems: tuple[str, ...]
    """Unreadable journal lines (file:line)."""

    @property
    def pending(self) -> int:
        return sum(j.state == "pending" for j in self.jobs)

    @property
    def failed(self) -> int:
        return sum(j.state == "failed" for j in self.jobs)


@dataclass(frozen=True)
class JournalStatus:
    """Unfinished memory work of one character: per user, only users with something to report."""

    character_id: str
    users: tuple[UserJournalStatus, ...]

    @property
    def pending(self) -> int:
        return sum(u.pending for u in self.users)

    @property
    def failed(self) -> int:
        return sum(u.failed for u in self.users)

    @property
    def ok(self) -> bool:
        """Nothing failed and no unreadable journal line (pending work is normal)."""
        return not self.failed and not any(u.problems for u in self.users)

    def lines(self, *, limit: int = 20) -> list[str]:
        """Human-readable summary: one line per user, then the failed jobs (at most `limit`)."""
        out = [f"{self.character_id}: {self.pending} job(s) pending, {self.failed} failed"]
        shown = 0
        for u in self.users:
            out.append(f"  user {u.user_id}: {u.pending} pending, {u.failed} failed")
            out.extend(f"    {p}" for p in u.problems)
            for j in u.jobs:
                if j.state == "failed" and shown < limit:
                    shown += 1
                    retry = f", next try {j.retry_at:%Y-%m-%d %H:%M:%S}" if j.retry_at else ""
                    out.append(f"    {j.job} of turn {j.turn_id}: failed {j.attempts}x: {j.error}{retry}")
        return out
