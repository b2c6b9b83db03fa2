"""One diary entry and its on-disk form: a YAML list item in `memorys/YYYY-MM-DD.yaml`.

Every string is written double-quoted (JSON escaping, which YAML reads too), so a write torn by a
crash always leaves an unclosed quote or a missing field: a torn tail can be told apart from a
complete entry, which a plain or block scalar would not allow (it would just read shorter).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo
from typing import Any

FIELDS = ("id", "time", "tag", "user", "assistant", "dates")


@dataclass(frozen=True)
class DiaryEntry:
    """One past turn as kept in the diary."""

    id: str
    """Unique per turn (two turns in the same second are two entries)."""
    at: datetime
    """Aware; written with its UTC offset, to the second."""
    tag: str
    """Short label of what the user did or said ("吃火锅", "small talk")."""
    user: str
    assistant: str
    dates: tuple[tuple[str, str], ...] = ()
    """Relative time expressions in the texts and what they meant when said, resolved against
    `at` at write time: (("yesterday", "2023-05-07"), ("上周三", "2023-05-03"))."""

    def local_day(self, tz: tzinfo) -> date:
        return self.at.astimezone(tz).date()

    @property
    def timestamp(self) -> int:
        return int(self.at.timestamp())


def entry_id_for(at: datetime, user: str, assistant: str) -> str:
    """A content-derived id, so importing the same turn twice yields the same id (idempotent imports)."""
    digest = hashlib.sha256(f"{at.isoformat(timespec='seconds')}\x00{user}\x00{assistant}".encode()).hexdigest()
    return f"i-{at.astimezone(timezone.utc):%Y%m%dT%H%M%S}-{digest[:12]}"


# Characters PyYAML refuses in a stream or folds as line breaks (NEL, LS, PS) even inside quotes,
# plus lone surrogates (not encodable): all written as \u escapes.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def quote(text: str) -> str:
    """A YAML double-quoted scalar for `text` (JSON escapes; YAML-unprintable characters escaped too)."""
    out = json.dumps(text, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def format_entry(entry: DiaryEntry) -> str:
    """The entry as one YAML list item, ending in a newline; appended in a single write."""
    at = entry.at.isoformat(timespec="seconds")
    text = (
        f"- id: {quote(entry.id)}\n"
        f"  time: {quote(at)}\n"
        f"  tag: {quote(entry.tag)}\n"
        f"  user: {quote(entry.user)}\n"
        f"  assistant: {quote(entry.assistant)}\n"
    )
    if entry.dates:
        # A flow sequence of double-quoted pairs: valid YAML and valid JSON on one line.
        pairs = ", ".join(f"[{quote(a)}, {quote(b)}]" for a, b in entry.dates)
        text += f"  dates: [{pairs}]\n"
    return text


class EntryError(ValueError):
    """An item of a day file is not a usable entry; the message says which field."""


def entry_from_item(item: Any, *, tz: tzinfo) -> DiaryEntry:
    """Validate one parsed list item. Hand edits are accepted loosely (numbers become text, a naive
    or unquoted time is read in the user's zone, a missing tag is empty); missing texts are not."""
    if not isinstance(item, dict):
        raise EntryError(f"an entry must be a mapping with keys {', '.join(FIELDS)} (got {type(item).__name__})")
    unknown = set(item) - set(FIELDS)
    if unknown:
        raise EntryError(f"unknown key(s) {sorted(map(str, unknown))}; allowed: {', '.join(FIELDS)}")
    for key in ("id", "time", "user", "assistant"):
        if item.get(key) is None:
            raise EntryError(f"missing {key!r}")
    at = _parse_time(item["time"], tz)
    tag = item.get("tag")
    return DiaryEntry(
        id=str(item["id"]),
        at=at,
        tag="" if tag is None else str(tag),
        user=str(item["user"]),
        assistant=str(item["assistant"]),
        dates=_parse_dates(item.get("dates")),
    )


def _parse_dates(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
        raise EntryError(f"'dates' must be a list of [expression, date] pairs (got {value!r:.60})")
    return tuple((str(a), str(b)) for a, b in value)


def _parse_time(value: Any, tz: tzinfo) -> datetime:
    if isinstance(value, datetime):
        at = value
    elif isinstance(value, date):
        at = datetime(value.year, value.month, value.day)
    else:
        try:
            at = datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise EntryError(f"'time' is not an ISO date-time (got {value!r})") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=tz)
    return at.replace(microsecond=0)
