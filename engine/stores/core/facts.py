"""Core facts and their file, `users/<user_id>/core_mem.yml`: the source of truth, editable by hand.

The file is a YAML list, one mapping per fact::

    - id: f3a9c01d                      # stable; the store never reuses it
      text: 住在成都                     # what is injected into the prompt
      learned_at: '2026-11-02T10:00:00+08:00'   # first learned
      updated_at: '2026-11-05T09:12:00+08:00'   # when the current text was learned
      source_turns: [t-0001, t-0042]     # the turns it came from ("manual", "import" for others)
      history:                           # superseded versions; kept, never injected
      - text: 住在重庆
        until: '2026-11-05T09:12:00+08:00'
        change: update                   # update | delete | forget
        by: t-0042                       # the turn(s) that made the change, or manual
      deleted_at: '2026-11-09T...'       # only on deleted facts (kept for history)

A person adding a fact by hand may write only `- text: ...` (or even a bare string): a missing id is
derived from the text, missing times default to the file's modification time. Anything else that
is wrong raises `DataFileError` naming the file and the line of the offending entry.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import yaml

from engine.errors import DataFileError
from engine.fileio import dump_yaml, parse_yaml

Change = Literal["update", "delete", "forget"]


@dataclass(frozen=True)
class Revision:
    """A superseded version of a fact."""

    text: str
    """The text as it was before the change."""
    until: datetime
    """When it stopped being current (aware)."""
    change: Change
    """`update`: replaced by a newer text; `delete`: the fact was deleted; `forget`: the change
    turn `by` had made (this text, or the deletion) was withdrawn because that turn was forgotten."""
    by: tuple[str, ...] = ()
    """The turn ids whose extraction made the change, or `manual` (empty in files written before
    this was recorded). `forget(turn)` finds the changes to revert by this."""


@dataclass(frozen=True)
class Fact:
    """One durable fact about a user."""

    id: str
    """Stable id (e.g. `f3a9c01d`); never reused for another fact of the same user."""
    text: str
    """The current text, as injected into the prompt."""
    learned_at: datetime
    """When the fact was first learned (aware)."""
    updated_at: datetime
    """When the current text was learned; equals `learned_at` until the first update."""
    source_turns: tuple[str, ...] = ()
    """Ids of the turns it came from, or `manual` / `import`."""
    history: tuple[Revision, ...] = field(default=())
    """Superseded versions, oldest first; never injected."""
    deleted_at: datetime | None = None
    """Set when the fact was deleted; a deleted fact is kept for its history only."""

    @property
    def live(self) -> bool:
        return self.deleted_at is None


def new_fact_id(taken: Container[str]) -> str:
    """A fresh id not in `taken` (pass the dict of facts itself: membership is O(1), no copy)."""
    while True:
        candidate = "f" + secrets.token_hex(4)
        if candidate not in taken:
            return candidate


def text_hash(text: str) -> str:
    """Short hash of a fact's text: the key that decides whether its vector is still valid."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def normalise_text(text: str) -> str:
    """The comparison form of a fact: whitespace collapsed, trailing punctuation dropped."""
    return " ".join(text.split()).strip().rstrip("。.!！~～").strip()


# ---------------------------------------------------------------------------- reading


def parse_facts(text: str, *, path: Path, tz: ZoneInfo, default_time: datetime) -> list[Fact]:
    """Parse the file's text; any problem raises DataFileError with the file and the entry's line."""
    data = parse_yaml(text, path=path)
    if data is None:
        return []
    if isinstance(data, Mapping) and set(data) == {"facts"}:
        data = data["facts"] or []
    if not isinstance(data, list):
        raise DataFileError(
            f"the top level must be a list of facts, got {type(data).__name__}", path=str(path), line=1
        )
    facts: list[Fact] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        try:
            fact = _fact_from(item, tz=tz, default_time=default_time)
        except _EntryError as exc:
            raise DataFileError(
                f"fact #{index + 1}: {exc}", path=str(path), line=_entry_line(text, index, exc.key)
            ) from None
        if fact.id in seen:
            # Two hand-added entries with the same text derive the same id; keep both, distinct.
            if fact.id.startswith("h"):
                fact = _replace_id(fact, f"{fact.id}-{index}")
            else:
                raise DataFileError(
                    f"fact #{index + 1}: duplicate id {fact.id!r}",
                    path=str(path),
                    line=_entry_line(text, index, "id"),
                )
        seen.add(fact.id)
        facts.append(fact)
    return facts


class _EntryError(ValueError):
    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


_FACT_KEYS = {"id", "text", "learned_at", "updated_at", "source_turns", "history", "deleted_at"}


def _fact_from(item: Any, *, tz: ZoneInfo, default_time: datetime) -> Fact:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, Mapping):
        raise _EntryError(f"expected a mapping with at least 'text', got {type(item).__name__} {item!r}")
    unknown = set(item) - _FACT_KEYS
    if unknown:
        key = sorted(map(str, unknown))[0]
        raise _EntryError(f"unknown key {key!r} (allowed: {', '.join(sorted(_FACT_KEYS))})", key)
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _EntryError(f"'text' must be a non-empty string (got {text!r})", "text")
    text = text.strip()
    fact_id = item.get("id")
    if fact_id is None:
        fact_id = "h" + text_hash(text)[:8]
    elif not isinstance(fact_id, (str, int)) or isinstance(fact_id, bool) or not str(fact_id).strip():
        raise _EntryError(f"'id' must be a string (got {fact_id!r})", "id")
    learned = _when(item.get("learned_at"), "learned_at", tz) or default_time
    updated = _when(item.get("updated_at"), "updated_at", tz) or learned
    sources = item.get("source_turns") or []
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list):
        raise _EntryError(f"'source_turns' must be a list of turn ids (got {sources!r})", "source_turns")
    history = item.get("history") or []
    if not isinstance(history, list):
        raise _EntryError(f"'history' must be a list (got {history!r})", "history")
    return Fact(
        id=str(fact_id).strip(),
        text=text,
        learned_at=learned,
        updated_at=updated,
        source_turns=tuple(str(s) for s in sources),
        history=tuple(_revision_from(r, tz, updated) for r in history),
        deleted_at=_when(item.get("deleted_at"), "deleted_at", tz),
    )


def _revision_from(item: Any, tz: ZoneInfo, default_time: datetime) -> Revision:
    if isinstance(item, str):
        return Revision(text=item, until=default_time, change="update")
    if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
        raise _EntryError(f"each history entry needs a 'text' (got {item!r})", "history")
    change = item.get("change", "update")
    if change not in ("update", "delete", "forget"):
        raise _EntryError(f"history 'change' must be update, delete or forget (got {change!r})", "history")
    by = item.get("by") or []
    if isinstance(by, (str, int)) and not isinstance(by, bool):
        by = [by]
    if not isinstance(by, list) or not all(isinstance(b, (str, int)) and not isinstance(b, bool) for b in by):
        raise _EntryError(f"history 'by' must be a turn id or a list of them (got {by!r})", "history")
    return Revision(
        text=item["text"], until=_when(item.get("until"), "history", tz) or default_time, change=change,
        by=tuple(str(b) for b in by),
    )


def _when(value: Any, key: str, tz: ZoneInfo) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime.combine(value, time(0, 0))
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise _EntryError(f"{key!r} is not an ISO date-time (got {value!r})", key) from None
    else:
        raise _EntryError(f"{key!r} is not a date-time (got {value!r})", key)
    # A naive time written by hand means the user's local time.
    return parsed.replace(tzinfo=tz) if parsed.tzinfo is None else parsed.astimezone(tz)


def _replace_id(fact: Fact, new_id: str) -> Fact:
    from dataclasses import replace

    return replace(fact, id=new_id)


def _entry_line(text: str, index: int, key: str | None) -> int | None:
    """1-based line of entry `index` (or of its `key`), found by composing the YAML again (error path only)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if k.value == "facts"), None)
    if not isinstance(root, yaml.SequenceNode) or index >= len(root.value):
        return None
    node = root.value[index]
    if key is not None and isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if key_node.value == key:
                return key_node.start_mark.line + 1
    return node.start_mark.line + 1


# ---------------------------------------------------------------------------- writing


def fact_to_dict(fact: Fact) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": fact.id,
        "text": fact.text,
        "learned_at": fact.learned_at.isoformat(timespec="seconds"),
        "updated_at": fact.updated_at.isoformat(timespec="seconds"),
        "source_turns": list(fact.source_turns),
        "history": [_revision_to_dict(r) for r in fact.history],
    }
    if fact.deleted_at is not None:
        out["deleted_at"] = fact.deleted_at.isoformat(timespec="seconds")
    return out


def _revision_to_dict(revision: Revision) -> dict[str, Any]:
    out: dict[str, Any] = {
        "text": revision.text, "until": revision.until.isoformat(timespec="seconds"), "change": revision.change
    }
    if revision.by:
        out["by"] = revision.by[0] if len(revision.by) == 1 else list(revision.by)
    return out


def dump_facts(facts: Iterable[Fact]) -> str:
    return dump_yaml([fact_to_dict(f) for f in facts])


# ---------------------------------------------------------------------------- checking text

MAX_FACT_CHARS = 2000
"""Longest fact text accepted (the same bound as the HTTP API's); a fact is a sentence, not a page."""


def check_fact_text(text: object) -> str:
    """The fact text to store: whitespace collapsed (line and paragraph separators included).
    Raises `FactTextError` naming the problem for empty text, text over `MAX_FACT_CHARS`, control
    characters and lone surrogates (which no UTF-8 file can hold)."""
    from engine.stores.core.errors import FactTextError

    if not isinstance(text, str):
        raise FactTextError(f"a fact's text must be a string (got {type(text).__name__} {text!r:.80})")
    for i, ch in enumerate(text):
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            raise FactTextError(f"a fact may not contain a lone surrogate (U+{code:04X} at character {i + 1})")
        if (code < 32 or 0x7F <= code <= 0x9F) and not ch.isspace():
            raise FactTextError(f"a fact may not contain control characters (U+{code:04X} at character {i + 1})")
    clean = " ".join(text.split())
    if not clean:
        raise FactTextError("a fact needs some text (got only whitespace)" if text else "a fact needs some text")
    if len(clean) > MAX_FACT_CHARS:
        raise FactTextError(f"a fact is at most {MAX_FACT_CHARS} characters (got {len(clean)})")
    return clean
