"""The per-user journal: durable turns, and the stores' work as idempotent, retried, visible jobs."""

from engine.journal.log import JOURNAL_FILE, UserLog
from engine.journal.runner import FOLD_JOB, Journal, JournalPolicy
from engine.journal.status import JobState, JournalStatus, UserJournalStatus

__all__ = [
    "FOLD_JOB",
    "JOURNAL_FILE",
    "JobState",
    "Journal",
    "JournalPolicy",
    "JournalStatus",
    "UserJournalStatus",
    "UserLog",
]
