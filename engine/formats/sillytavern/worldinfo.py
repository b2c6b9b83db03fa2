"""SillyTavern lorebooks <-> kioku world-book entries, losslessly.

Three shapes are read and written: SillyTavern's World Info file (`{"entries": {"<uid>": {...}}}`),
a card's embedded `character_book` (V2 entries, SillyTavern's own fields under `extensions`), and
`{"spec": "lorebook_v3", "data": <character_book>}`. Each field maps to a kioku world-book field
by `FIELDS` (rules as data, one row per field and shape); every other field is kept verbatim in the
entry's `extra`, and so is a mapped field whose kioku value cannot give it back exactly (a
`delayUntilRecursion` level, secondary keys that `selective: false` switched off, content that
opens with V3 decorators). Export writes the kept value while the kioku field still says what it
said on import, and the kioku field once an author has changed it; so import -> export -> import
gives the same entries, and unchanged fields come back byte for byte.
"""

from __future__ import annotations

import copy
import re
import re._constants as sre_c
import re._parser as sre_parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.formats.sillytavern.errors import FormatError, read_json

MAX_ENTRIES = 20_000
MAX_BYTES = 32 * 1024 * 1024
LOGIC = {0: "and_any", 1: "not_all", 2: "not_any", 3: "and_all"}
NEVER_FIRES = "_kioku_never_fires"
ABSENT = "_kioku_absent"
"""Mapped fields the entry did not have: export leaves them out while kioku's value is the one
their absence means."""
_DECORATOR = re.compile(r"\A(?:@@[^\n]*\n)+")


@dataclass(frozen=True)
class Field:
    kioku: str
    """The world-book field (docs/world-book.md)."""
    path: dict[str, str]
    """Per shape ("worldinfo", "book"), where SillyTavern keeps it ("extensions.x" is nested)."""
    read: Callable[[Any, dict], Any]
    """(stored value, whole entry) -> kioku value."""
    write: Callable[[Any], Any]
    """kioku value -> stored value."""
    default: Any
    """The kioku default: a field equal to it is left out of the YAML."""


_MISSING = object()


def _get(entry: dict, path: str, missing: Any = None) -> Any:
    node: Any = entry
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return missing
        node = node[part]
    return node


def _pop(entry: dict, path: str) -> None:
    parts = path.split(".")
    node: Any = entry
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def _put(entry: dict, path: str, value: Any) -> None:
    parts = path.split(".")
    node = entry
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _selective(entry: dict) -> bool:
    return entry.get("selective", True) is not False


def _use_probability(entry: dict) -> bool:
    flag = entry.get("useProbability", _get(entry, "extensions.useProbability"))
    return flag is not False


def _int(v: Any, default: int = 0) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _keys(v: Any, _e: dict) -> list[str]:
    return [str(k) for k in v] if isinstance(v, list) else ([] if v in (None, "") else [str(v)])


def _groups(v: Any, _e: dict) -> list[str]:
    return [g.strip() for g in str(v or "").split(",") if g.strip()]


FIELDS: tuple[Field, ...] = (
    Field("keys", {"worldinfo": "key", "book": "keys"}, _keys, list, []),
    Field("secondary_keys", {"worldinfo": "keysecondary", "book": "secondary_keys"},
          lambda v, e: _keys(v, e) if _selective(e) else [], list, []),
    Field("logic", {"worldinfo": "selectiveLogic", "book": "extensions.selectiveLogic"},
          lambda v, e: LOGIC.get(_int(v), "and_any"), lambda k: {n: i for i, n in LOGIC.items()}[k], "and_any"),
    Field("content", {"worldinfo": "content", "book": "content"},
          lambda v, e: _DECORATOR.sub("", str(v or "")), str, None),
    Field("constant", {"worldinfo": "constant", "book": "constant"}, lambda v, e: v is True, bool, False),
    Field("enabled", {"worldinfo": "disable", "book": "enabled"}, None, None, True),  # shape-specific, below
    Field("order", {"worldinfo": "order", "book": "insertion_order"}, lambda v, e: _int(v, 100), int, 100),
    Field("case_sensitive", {"worldinfo": "caseSensitive", "book": "extensions.case_sensitive"},
          lambda v, e: v is True, bool, False),
    # SillyTavern's default (null) is its global "match whole words", off unless the user turned it on.
    Field("whole_words", {"worldinfo": "matchWholeWords", "book": "extensions.match_whole_words"},
          lambda v, e: v is True, bool, True),
    # SillyTavern matches an entry by meaning only when it is `vectorized`.
    Field("semantic", {"worldinfo": "vectorized", "book": "extensions.vectorized"}, lambda v, e: v is True, bool, True),
    Field("probability", {"worldinfo": "probability", "book": "extensions.probability"},
          lambda v, e: min(100, max(0, _int(v, 100))) if _use_probability(e) else 100, int, 100),
    Field("group", {"worldinfo": "group", "book": "extensions.group"}, _groups, ",".join, []),
    Field("group_override", {"worldinfo": "groupOverride", "book": "extensions.group_override"},
          lambda v, e: v is True, bool, False),
    Field("group_weight", {"worldinfo": "groupWeight", "book": "extensions.group_weight"},
          lambda v, e: max(1, _int(v, 100)), int, 100),
    Field("prevent_recursion", {"worldinfo": "preventRecursion", "book": "extensions.prevent_recursion"},
          lambda v, e: v is True, bool, False),
    Field("exclude_recursion", {"worldinfo": "excludeRecursion", "book": "extensions.exclude_recursion"},
          lambda v, e: v is True, bool, False),
    Field("delay_until_recursion", {"worldinfo": "delayUntilRecursion", "book": "extensions.delay_until_recursion"},
          lambda v, e: bool(v), bool, False),
    Field("scan_depth", {"worldinfo": "scanDepth", "book": "extensions.scan_depth"},
          lambda v, e: _int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None, lambda v: v, None),
    Field("sticky", {"worldinfo": "sticky", "book": "extensions.sticky"}, lambda v, e: max(0, _int(v)), int, 0),
    Field("cooldown", {"worldinfo": "cooldown", "book": "extensions.cooldown"}, lambda v, e: max(0, _int(v)), int, 0),
    Field("delay", {"worldinfo": "delay", "book": "extensions.delay"}, lambda v, e: max(0, _int(v)), int, 0),
    Field("comment", {"worldinfo": "comment", "book": "comment"}, lambda v, e: str(v) if v else None,
          lambda v: v or "", None),
)
FIELDS_BY_NAME = {f.kioku: f for f in FIELDS}
_ENABLED = {  # (read, write) per shape: World Info says `disable`, a card's book `enabled`
    "worldinfo": (lambda v, e: v is not True, lambda k: not k),
    "book": (lambda v, e: v is not False, bool),
}


@dataclass(frozen=True)
class Lorebook:
    shape: str
    """"worldinfo", "character_book" or "lorebook_v3"."""
    entries: tuple[dict[str, Any], ...]
    """kioku world-book entries (the YAML's fields; `extra` holds what kioku keeps verbatim)."""
    extra: dict[str, Any]
    """The book's own fields besides its entries (name, scan settings, ...), verbatim."""

    def to_yaml_data(self) -> dict[str, Any]:
        return {"extra": {"sillytavern": {"shape": self.shape, "book": self.extra}}, "entries": list(self.entries)}


def _rw(field: Field, shape: str) -> tuple[Callable, Callable]:
    if field.kioku == "enabled":
        return _ENABLED[shape]
    return field.read, field.write


def entry_to_kioku(raw: dict[str, Any], shape: str, *, file: str, where: str) -> dict[str, Any]:
    """One SillyTavern entry as a kioku world-book entry (only fields that differ from kioku's
    defaults; `extra` keeps the rest verbatim)."""
    if not isinstance(raw, dict):
        raise FormatError(file, where, f"an entry must be an object, got {type(raw).__name__}")
    kind = "worldinfo" if shape == "worldinfo" else "book"
    extra = copy.deepcopy(raw)
    out: dict[str, Any] = {}
    absent: list[str] = []
    for field in FIELDS:
        path = field.path[kind]
        read, write = _rw(field, kind)
        stored = _get(raw, path, _MISSING)
        try:
            value = read(None if stored is _MISSING else stored, raw)
        except (TypeError, ValueError, KeyError) as exc:
            raise FormatError(file, f"{where}, field {path!r}", f"cannot read {stored!r}: {exc}") from None
        if field.kioku == "content" and not value.strip():
            raise FormatError(file, f"{where}, field {path!r}", "the entry has no content")
        if stored is _MISSING:
            absent.append(path)  # not written back unless an author sets it
        elif _back(write, value) == stored:
            _pop(extra, path)  # given back exactly by the kioku field
        if value != field.default or field.kioku == "content":
            out[field.kioku] = value
    for key in out.get("keys", []) + out.get("secondary_keys", []):
        if runaway(key):
            raise FormatError(file, where, f"the regex key {key!r} repeats a repetition (like (a+)+): it can "
                              "backtrack without end on a long message; rewrite it without the nested repeat")
    if not out.get("keys") and not out.get("constant") and out.get("semantic") is False and out.get("enabled", True):
        # It can never fire (no keys, not constant, not matched by meaning): kioku's world book
        # refuses such an entry as a mistake, so it comes in switched off, marked to go out as it came.
        out["enabled"] = False
        extra[NEVER_FIRES] = True
    if absent:
        extra[ABSENT] = absent
    if extra:
        out["extra"] = extra
    return out


def _back(write: Callable, value: Any) -> Any:
    try:
        return write(value)
    except (TypeError, ValueError, KeyError):
        return object()


def entry_from_kioku(entry: dict[str, Any], shape: str) -> dict[str, Any]:
    """A kioku world-book entry (as its YAML holds it) as a SillyTavern entry of `shape`."""
    kind = "worldinfo" if shape == "worldinfo" else "book"
    out = copy.deepcopy(entry.get("extra") or {})
    never = out.pop(NEVER_FIRES, False) and entry.get("enabled") is False
    absent = set(out.pop(ABSENT, ()))
    for field in FIELDS:
        if never and field.kioku == "enabled":
            continue
        path = field.path[kind]
        read, write = _rw(field, kind)
        value = entry.get(field.kioku, field.default)
        kept = _get(out, path, _MISSING)
        if kept is not _MISSING and read(kept, out) == value:
            continue  # unchanged since import: the original value, byte for byte
        if kept is _MISSING and path in absent and read(None, out) == value:
            continue  # the entry never had it, and it still means the same
        _put(out, path, write(value))
    if never:
        _put(out, FIELDS_BY_NAME["enabled"].path[kind], _ENABLED[kind][1](True))
    return out


def read_lorebook(data: bytes, *, file: str) -> Lorebook:
    """A World Info file, a `lorebook_v3` or a bare `character_book`, from its bytes."""
    if len(data) > MAX_BYTES:
        raise FormatError(file, None, f"the file is {len(data):,} bytes, over the limit of {MAX_BYTES:,}")
    return lorebook_from(read_json(data, file=file), file=file)


def lorebook_from(doc: Any, *, file: str, shape: str | None = None) -> Lorebook:
    if not isinstance(doc, dict):
        raise FormatError(file, None, "a lorebook must be a JSON object")
    if shape is None:
        if doc.get("spec") == "lorebook_v3":
            if not isinstance(doc.get("data"), dict):
                raise FormatError(file, "field 'data'", "a lorebook_v3 needs a `data` object")
            inner = lorebook_from(doc["data"], file=file, shape="character_book")
            return Lorebook("lorebook_v3", inner.entries, {**inner.extra, "_v3": {k: v for k, v in doc.items() if k != "data"}})
        shape = "worldinfo" if isinstance(doc.get("entries"), dict) else "character_book"
    raw_entries = doc.get("entries")
    if shape == "worldinfo":
        if not isinstance(raw_entries, dict):
            raise FormatError(file, "field 'entries'", "World Info keeps its entries in an object keyed by uid")
        items = list(raw_entries.items())
    else:
        if not isinstance(raw_entries, list):
            raise FormatError(file, "field 'entries'", "a character book keeps its entries in a list")
        items = [(str(n), e) for n, e in enumerate(raw_entries)]
    if len(items) > MAX_ENTRIES:
        raise FormatError(file, "field 'entries'", f"{len(items):,} entries, over the limit of {MAX_ENTRIES:,}")
    entries = []
    for n, (key, raw) in enumerate(items, 1):
        uid = raw.get("uid", raw.get("id", key)) if isinstance(raw, dict) else key
        entries.append(entry_to_kioku(raw, shape, file=file, where=f"entry {n} (uid {uid})"))
    extra = {k: v for k, v in doc.items() if k != "entries"}
    if shape == "worldinfo":
        extra["_keys"] = [k for k, _ in items]
    return Lorebook(shape, tuple(entries), extra)


def lorebook_json(entries: list[dict[str, Any]], shape: str, extra: dict[str, Any]) -> dict[str, Any]:
    """The JSON document of `shape` holding kioku world-book `entries` and the book's `extra`."""
    extra = dict(extra)
    keys = extra.pop("_keys", None)
    v3 = extra.pop("_v3", None)
    if shape == "worldinfo":
        out_entries: dict[str, Any] = {}
        for n, e in enumerate(entries):
            st = entry_from_kioku(e, "worldinfo")
            key = keys[n] if keys and n < len(keys) else str(st.get("uid", n))
            st.setdefault("uid", int(key) if str(key).isdigit() else key)
            out_entries[str(key)] = st
        return {"entries": out_entries, **extra}
    book = {**extra, "entries": [entry_from_kioku(e, shape) for e in entries]}
    if shape == "lorebook_v3":
        return {**(v3 or {"spec": "lorebook_v3"}), "data": book}
    return book


_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", sre_c.MAX_REPEAT))


def runaway(key: str) -> bool:
    """Whether a `/pattern/flags` key nests one unbounded repeat inside another (star height 2),
    the shape that backtracks exponentially (`(a+)+$`, `(\\w+\\s?)*`)."""
    m = re.match(r"^/(.+)/([A-Za-z]*)$", key, re.DOTALL)
    if not m:
        return False
    try:
        tree = sre_parse.parse(m.group(1))
    except (re.error, OverflowError, RecursionError, ValueError):
        return False  # not Python syntax: the world book's own parser names it
    return _height(tree) >= 2


def _height(items) -> int:
    best = 0
    for op, av in items:
        if op in _REPEATS:
            _lo, hi, sub = av
            best = max(best, _height(sub) + (1 if hi == sre_c.MAXREPEAT or hi > 16 else 0))
        elif op is sre_c.SUBPATTERN:
            best = max(best, _height(av[-1]))
        elif op is sre_c.BRANCH:
            best = max([best] + [_height(b) for b in av[1]])
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            best = max(best, _height(av[1]))
    return best
