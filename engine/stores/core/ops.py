"""Operations on core facts, and the tolerant parser of the memory LLM's JSON reply.

The LLM sees existing facts under short integer aliases (1, 2, 3 ...) instead of their real ids,
which it would garble, and answers with::

    {"operations": [{"op": "ADD", "text": "..."},
                    {"op": "UPDATE", "id": 2, "text": "..."},
                    {"op": "DELETE", "id": 3},
                    {"op": "NONE"}]}

Accepted around that: code fences, prose before and after, a bare list, single quotes, trailing
commas, Python literals (True/None), `event`/`action`/`type` for `op`, `fact`/`memory` for `text`.
What cannot be read raises `ReplyError`; an operation naming an unknown alias is dropped with a
log line (the others still apply).
"""

from __future__ import annotations

import ast
import json
import logging
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from engine.errors import EngineError

log = logging.getLogger(__name__)

OpKind = Literal["ADD", "UPDATE", "DELETE", "NONE"]


@dataclass(frozen=True)
class FactOp:
    """One change to a user's facts, with real fact ids (aliases already resolved)."""

    kind: OpKind
    text: str = ""
    """New text for ADD and UPDATE."""
    fact_id: str | None = None
    """Target of UPDATE and DELETE."""


class Said(Protocol):
    """What extraction reads of a turn: a `Turn`, or a turn waiting in the pending file."""

    @property
    def id(self) -> str: ...

    @property
    def user(self) -> str: ...

    @property
    def assistant(self) -> str: ...


class ReplyError(EngineError, ValueError):
    """The memory LLM's reply could not be read as operations; the message says why."""


_OP_KEYS = ("op", "event", "action", "type", "operation")
_TEXT_KEYS = ("text", "fact", "memory", "content", "new_text")
_ID_KEYS = ("id", "alias", "fact_id", "index")
_KINDS = {"ADD": "ADD", "UPDATE": "UPDATE", "DELETE": "DELETE", "NONE": "NONE", "NOOP": "NONE", "SKIP": "NONE",
          "REMOVE": "DELETE", "EDIT": "UPDATE", "NEW": "ADD"}


def parse_reply(reply: str, aliases: Mapping[int, str]) -> list[FactOp]:
    """Operations in `reply`; `aliases` maps the integers shown to the LLM to real fact ids."""
    try:
        return _parse(reply, aliases)
    except RecursionError:
        # A reply nested thousands of levels deep: JSON and repr both recurse on it.
        raise ReplyError(f"the reply is nested too deeply to be operations: {_clip(reply)!r}") from None


def _parse(reply: str, aliases: Mapping[int, str]) -> list[FactOp]:
    data = _load_json_ish(reply)
    if isinstance(data, Mapping):
        for key in ("operations", "ops", "memory", "memories", "facts", "changes"):
            if key in data:
                data = data[key]
                break
        else:
            data = [data] if any(k in data for k in _OP_KEYS) else None
    if data is None or not isinstance(data, list):
        raise ReplyError(f"expected a list of operations, got {_clip(reply)!r}")
    ops: list[FactOp] = []
    for item in data:
        op = _op_from(item, aliases)
        if op is not None and op.kind != "NONE":
            ops.append(op)
    return ops


def _op_from(item: Any, aliases: Mapping[int, str]) -> FactOp | None:
    if not isinstance(item, Mapping):
        raise ReplyError(f"each operation must be an object, got {_short(item)}")
    raw_kind = next((item[k] for k in _OP_KEYS if k in item), None)
    kind = _KINDS.get(str(raw_kind).strip().upper()) if raw_kind is not None else None
    if kind is None:
        raise ReplyError(f"operation {_short(item)} has no op among ADD/UPDATE/DELETE/NONE")
    text = next((item[k] for k in _TEXT_KEYS if k in item and item[k] is not None), "")
    if not isinstance(text, (str, int, float)):
        raise ReplyError(f"the text of an operation must be a string, got {_short(text)}")
    text = str(text).strip()
    if kind == "NONE":
        return FactOp("NONE")
    if kind == "ADD":
        if not text:
            raise ReplyError(f"ADD without text: {_short(item)}")
        return FactOp("ADD", text=text)
    raw_id = next((item[k] for k in _ID_KEYS if k in item), None)
    alias = _alias(raw_id)
    if alias is None or alias not in aliases:
        # The LLM invented a fact; dropping this one operation keeps the others usable.
        log.warning("core memory: %s names unknown fact %s; ignored", kind, _short(raw_id))
        return None
    if kind == "UPDATE" and not text:
        raise ReplyError(f"UPDATE without text: {_short(item)}")
    return FactOp(kind, text=text, fact_id=aliases[alias])


def _alias(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        match = re.fullmatch(r"\s*\[?#?(\d+)\]?\s*", raw)
        return int(match.group(1)) if match else None
    return None


_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.S)


def _load_json_ish(reply: str) -> Any:
    if not isinstance(reply, str) or not reply.strip():
        raise ReplyError("empty reply")
    candidates = [m.group(1) for m in _FENCE.finditer(reply)] + [reply]
    for candidate in candidates:
        block = _first_balanced(candidate)
        if block is None:
            continue
        for attempt in (block, _relax(block)):
            try:
                return json.loads(attempt)
            except (ValueError, RecursionError):
                pass
        try:
            # Single quotes, True/None: a Python literal; literal_eval evaluates no code.
            return ast.literal_eval(_pythonise(_relax(block)))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    raise ReplyError(f"no JSON object or list found in the reply: {_clip(reply)!r}")


def _first_balanced(text: str) -> str | None:
    """The first {...} or [...] span with balanced brackets, skipping brackets inside strings."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _relax(block: str) -> str:
    return re.sub(r",\s*([}\]])", r"\1", block)


def _pythonise(block: str) -> str:
    return re.sub(r"\b(true|false|null)\b", lambda m: {"true": "True", "false": "False", "null": "None"}[m.group(1)], block)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 120, 120


def _short(value: Any) -> str:
    """A bounded repr: never recurses deeper than a few levels, whatever the LLM nested."""
    return _REPR.repr(value)


def _clip(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "..."
