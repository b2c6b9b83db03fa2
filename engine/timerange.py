"""Time ranges as clients name them: ISO dates and times, or a time expression ("昨天", "last weekend").

    iso_range("2026-11-20", None, tz)                       # that local day (the memory API's diary)
    search_range("2026-11-01", "2026-11-20", tz, now=now)   # either end open; an end date is inclusive
    named_range("上周二", tz, now=now)                        # the time parser's range (MCP tools)
    named_range("2026-11-18/2026-11-20", tz, now=now)       # an ISO interval, through the 20th

A date is local midnight in `tz`, a naive time is local wall time. Every error names the argument
it is about and is a `TimeRangeError` (a ValueError): `BadTimeError` for a value that is no time
(`bad_time`), `BadRangeError` for bounds out of order, too long or beyond Python's calendar
(`bad_range`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, tzinfo
from typing import ClassVar

from engine.errors import EngineError

# Times this close to the ends of Python's calendar cannot be stepped over (a day later, to UTC)
# without overflow; no diary has entries there. Compared as local wall time: an aware comparison
# would itself convert to UTC, and a UTC offset is under a day.
EARLIEST = datetime(1, 1, 3)
LATEST = datetime(9999, 12, 29)
MAX_RANGE_DAYS = 366
"""The longest range the memory API's diary listing answers (`iso_range`'s default)."""

_DATE_LEN = len("2026-11-20")
_INTERVAL = re.compile(r"^\s*(\d{4}-\d{2}-\d{2}\S*?)\s*(?:/|\.\.|\s+to\s+)\s*(\d{4}-\d{2}-\d{2}\S*)\s*$")
_ISO = re.compile(r"^\s*\d{4}-\d{2}-\d{2}(?:[T ]\S+)?\s*$")


class TimeRangeError(EngineError, ValueError):
    """A time or range a client gave cannot be used; `argument` names the value."""

    code: ClassVar[str] = "bad_range"

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class BadTimeError(TimeRangeError):
    """The value is no ISO time and (where expressions are accepted) names no time."""

    code: ClassVar[str] = "bad_time"


class BadRangeError(TimeRangeError):
    """The bounds are out of order, too far apart, or beyond the supported calendar."""


@dataclass(frozen=True)
class NamedRange:
    """What a time argument meant."""

    start: datetime
    """Aware, inclusive."""
    end: datetime
    """Aware, exclusive."""
    text: str
    """The part of the argument that named the time (the whole of an ISO value)."""
    kind: str
    """`iso`, or the time parser's family of the expression (`day`, `week`, `range`, ...)."""


def parse_when(value: str, tz: tzinfo, *, argument: str) -> datetime:
    """An ISO date (local midnight) or time (naive = local) as an aware datetime."""
    try:
        if len(value.strip()) == _DATE_LEN:
            d = date.fromisoformat(value.strip())
            return datetime(d.year, d.month, d.day, tzinfo=tz)
        t = datetime.fromisoformat(value.strip())
        return t.replace(tzinfo=tz) if t.tzinfo is None else t
    except (ValueError, OverflowError):
        raise BadTimeError(f"{argument} must be an ISO date or time, e.g. 2026-11-20 or 2026-11-20T08:00+08:00 "
                           f"(got {value!r})", argument=argument) from None


def iso_range(start: str, end: str | None, tz: tzinfo, *, max_days: int = MAX_RANGE_DAYS) -> tuple[datetime, datetime]:
    """[start, end) from ISO bounds; `end` is exclusive and defaults to one day after `start`."""
    lo = parse_when(start, tz, argument="start")
    hi = parse_when(end, tz, argument="end") if end else None
    _check_calendar(("start", lo), ("end", hi))
    if hi is None:
        hi = lo + timedelta(days=1)
    return _checked(lo, hi, max_days=max_days)


def search_range(start: str | None, end: str | None, tz: tzinfo, *, now: datetime) -> tuple[datetime | None, datetime | None]:
    """A search's time filter: either end may be open (the epoch, a day after `now`); a date as the
    end means through that day. (None, None) when neither is given."""
    if start is None and end is None:
        return None, None
    lo = parse_when(start, tz, argument="start") if start else datetime(1970, 1, 1, tzinfo=tz)
    hi = parse_when(end, tz, argument="end") if end else now + timedelta(days=1)
    _check_calendar(("start", lo), ("end", hi))
    if end and len(end.strip()) == _DATE_LEN:
        hi += timedelta(days=1)
    return _checked(lo, hi, max_days=None)


def named_range(text: str, tz: tzinfo, *, now: datetime, argument: str = "time",
                max_days: int | None = None, past: bool = False) -> NamedRange:
    """What `text` names: an ISO date or time (that day, or a day from that time), an ISO interval
    `A/B` or `A..B` (a date as B is inclusive), or the time expressions in it ("昨天", "上周二",
    "last weekend"; several are joined into one range from the first start to the last end).
    `past`: the time is one of memory, so an expression the parser placed ahead of `now` ("Monday",
    "Thanksgiving") is its last occurrence. Every error's message starts with `argument`."""
    try:
        return _named(text, tz, now=now, argument=argument, max_days=max_days, past=past)
    except TimeRangeError as exc:
        if str(exc).startswith(argument):
            raise
        raise type(exc)(f"{argument}: {exc}", argument=argument) from None


def _named(text: str, tz: tzinfo, *, now: datetime, argument: str, max_days: int | None, past: bool) -> NamedRange:
    value = text.strip()
    if not value:
        raise BadTimeError(f"{argument} is empty: give a time expression (昨天, last weekend) or an ISO date",
                           argument=argument)
    interval = _INTERVAL.match(value)
    if interval:
        a, b = interval.groups()
        lo, hi = parse_when(a, tz, argument=argument), parse_when(b, tz, argument=argument)
        _check_calendar((argument, lo), (argument, hi))
        if len(b) == _DATE_LEN:
            hi += timedelta(days=1)
        lo, hi = _checked(lo, hi, max_days=max_days, argument=argument)
        return NamedRange(lo, hi, value, "iso")
    if _ISO.match(value):
        lo = parse_when(value, tz, argument=argument)
        _check_calendar((argument, lo))
        lo, hi = _checked(lo, lo + timedelta(days=1), max_days=max_days, argument=argument)
        return NamedRange(lo, hi, value, "iso")
    from engine.timeparse import parse_time_ranges

    local = now.astimezone(tz)
    found = parse_time_ranges(value, now=local)
    if past:
        from engine.timeparse.tense import resolve_past

        found = [replace(e, start=lo, end=hi) for e in found
                 for lo, hi in [resolve_past(value, e, now=local, recalled=True)]]
    if not found:
        raise BadTimeError(f"{argument} {text!r} names no time: say e.g. 昨天, 上周二, last weekend, 2026-11-20 "
                           "or 2026-11-18/2026-11-20", argument=argument)
    lo, hi = _checked(min(e.start for e in found), max(e.end for e in found), max_days=max_days, argument=argument)
    kind = found[0].kind if len(found) == 1 else "range"
    return NamedRange(lo, hi, " + ".join(e.text for e in found), kind)


def _check_calendar(*values: tuple[str, datetime | None]) -> None:
    for name, value in values:
        if value is not None and not EARLIEST <= value.replace(tzinfo=None) <= LATEST:
            raise BadRangeError(f"{name} ({value.isoformat()}) is outside the supported range "
                                f"{EARLIEST.date()} .. {LATEST.date()}", argument=name)


def _checked(lo: datetime, hi: datetime, *, max_days: int | None, argument: str = "end") -> tuple[datetime, datetime]:
    if hi <= lo:
        raise BadRangeError(f"end ({hi.isoformat()}) must be after start ({lo.isoformat()})", argument=argument)
    if max_days is not None and hi - lo > timedelta(days=max_days):
        raise BadRangeError(f"a range is at most {max_days} days (got {(hi - lo).days})", argument=argument)
    return lo, hi


__all__ = [
    "BadRangeError", "BadTimeError", "EARLIEST", "LATEST", "MAX_RANGE_DAYS", "NamedRange", "TimeRangeError",
    "iso_range", "named_range", "parse_when", "search_range",
]
