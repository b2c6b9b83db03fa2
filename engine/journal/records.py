"""What a journal line holds: one JSON object per line, each line ending in b"\\n".

    {"op": "turn", "id": ..., "user_id": ..., "chat": ..., "at": ..., "user": ..., "assistant": ...,
     "replaces": null, "t": 1764...}                      a recorded turn (durable: fsynced)
    {"op": "forget", "id": ..., "chat": ..., "t": ...}    take a turn back (durable: fsynced)
    {"op": "done", "id": ..., "job": "diary.record"}      a job finished (not fsynced: jobs are idempotent)
    {"op": "fail", "id": ..., "job": ..., "attempt": 2, "error": ..., "retry_at": ...}
    {"op": "seen", "chats": {"<turn id>": "<chat id>", ...}}   compaction's memory of recent turn ids

Text goes through `dumps_line`: U+2028, U+2029, U+0085 and lone surrogates are escaped, so any
message round-trips and no message can split a line. A line without its newline is a torn append.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from engine.shortterm.lines import dumps_line
from engine.stores.base import Turn


@dataclass(frozen=True)
class TurnRecord:
    turn: Turn
    replaces: str | None
    """A turn to forget first (a regenerated reply), atomically with recording this one."""
    written: float
    """time.time() when journaled (how long its jobs have waited)."""


@dataclass(frozen=True)
class ForgetRecord:
    turn_id: str
    chat_id: str | None
    """The chat whose window held the turn, when the journal still knew it."""
    written: float


@dataclass(frozen=True)
class DoneRecord:
    key: str
    """The turn id the job belongs to (for a forget job: the forgotten turn's id)."""
    job: str


@dataclass(frozen=True)
class FailRecord:
    key: str
    job: str
    attempt: int
    error: str
    retry_at: float
    """time.time() after which the job is tried again."""


@dataclass(frozen=True)
class SeenRecord:
    chats: Mapping[str, str]
    """Turn id -> chat id of the most recent turns dropped by compaction (a re-sent turn stays a no-op)."""


Record = TurnRecord | ForgetRecord | DoneRecord | FailRecord | SeenRecord


def encode(record: Record) -> bytes:
    return (dumps_line(_to_dict(record)) + "\n").encode("utf-8")


def _to_dict(record: Record) -> dict[str, object]:
    if isinstance(record, TurnRecord):
        t = record.turn
        return {"op": "turn", "id": t.id, "user_id": t.user_id, "chat": t.chat_id, "at": t.at.isoformat(),
                "user": t.user, "assistant": t.assistant, "replaces": record.replaces, "t": record.written}
    if isinstance(record, ForgetRecord):
        return {"op": "forget", "id": record.turn_id, "chat": record.chat_id, "t": record.written}
    if isinstance(record, DoneRecord):
        return {"op": "done", "id": record.key, "job": record.job}
    if isinstance(record, FailRecord):
        return {"op": "fail", "id": record.key, "job": record.job, "attempt": record.attempt,
                "error": record.error, "retry_at": record.retry_at}
    return {"op": "seen", "chats": dict(record.chats)}


def decode(line: bytes) -> Record:
    """One line without its newline; ValueError (with the reason) if it is not a record."""
    d = json.loads(line.decode("utf-8"))
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    op = d.get("op")
    try:
        if op == "turn":
            at = datetime.fromisoformat(_text(d, "at"))
            if at.tzinfo is None:
                raise ValueError("turn time without a UTC offset")
            turn = Turn(id=_text(d, "id"), user_id=_text(d, "user_id"), at=at, user=_text(d, "user"),
                        assistant=_text(d, "assistant"), chat_id=_text(d, "chat"))
            return TurnRecord(turn, _optional(d, "replaces"), float(d["t"]))
        if op == "forget":
            return ForgetRecord(_text(d, "id"), _optional(d, "chat"), float(d["t"]))
        if op == "done":
            return DoneRecord(_text(d, "id"), _text(d, "job"))
        if op == "fail":
            return FailRecord(_text(d, "id"), _text(d, "job"), int(d["attempt"]), _text(d, "error"),
                              float(d["retry_at"]))
        if op == "seen":
            chats = d["chats"]
            if not isinstance(chats, dict) or not all(isinstance(v, str) for v in chats.values()):
                raise ValueError("seen.chats must map turn ids to chat ids")
            return SeenRecord(chats)
    except KeyError as exc:
        raise ValueError(f"{op} record without {exc.args[0]!r}") from None
    raise ValueError(f"unknown op {op!r}")


def _text(d: dict, key: str) -> str:
    value = d[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text, got {type(value).__name__}")
    return value


def _optional(d: dict, key: str) -> str | None:
    return None if d.get(key) is None else _text(d, key)
