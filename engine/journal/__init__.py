"""The per-user journal: durable turns, and the stores' work as idempotent, retried, visible jobs."""

from engine.journal.log import JOURNAL_FILE, UserLog
from engine.journal.jobs import FOLD_JOB, Jobs, TurnJournal
from engine.journal.runner import Journal, JournalPolicy
from engine.journal.status import JobState, JournalStatus, UserJournalStatus

__all__ = [
    "FOLD_JOB",
    "JOURNAL_FILE",
    "JobState",
    "Jobs",
    "Journal",
    "JournalPolicy",
    "JournalStatus",
    "TurnJournal",
    "UserJournalStatus",
    "UserLog",
]
