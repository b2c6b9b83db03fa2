"""Core memory: durable facts about each user (`users/<user_id>/core_mem.yml`), FAISS-retrieved."""

from engine.stores.core.admin import AddedFact, CoreAdmin, FactHistory
from engine.stores.core.errors import FactNotFoundError, FactStoreBusyError, FactTextError
from engine.stores.core.facts import MAX_FACT_CHARS, Fact, Revision, check_fact_text
from engine.stores.core.ops import FactOp, ReplyError, parse_reply
from engine.stores.core.pending import PendingTurn
from engine.stores.core.reconcile import Applied
from engine.stores.core.rules import rule_ops, statements
from engine.stores.core.store import CoreMemoryStore

__all__ = [
    "MAX_FACT_CHARS",
    "AddedFact",
    "Applied",
    "CoreAdmin",
    "CoreMemoryStore",
    "Fact",
    "FactHistory",
    "FactNotFoundError",
    "FactOp",
    "FactStoreBusyError",
    "FactTextError",
    "PendingTurn",
    "ReplyError",
    "Revision",
    "check_fact_text",
    "parse_reply",
    "rule_ops",
    "statements",
]
