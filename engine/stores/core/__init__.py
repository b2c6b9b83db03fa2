"""Core memory: durable facts about each user (`users/<user_id>/core_mem.yml`), FAISS-retrieved."""

from engine.stores.core.facts import Fact, Revision
from engine.stores.core.ops import FactOp, ReplyError, parse_reply
from engine.stores.core.rules import rule_ops, statements
from engine.stores.core.store import Applied, CoreMemoryStore, FactNotFoundError

__all__ = [
    "Applied",
    "CoreMemoryStore",
    "Fact",
    "FactNotFoundError",
    "FactOp",
    "ReplyError",
    "Revision",
    "parse_reply",
    "rule_ops",
    "statements",
]
