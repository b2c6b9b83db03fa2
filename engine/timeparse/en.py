"""English grammar: the rules' atoms, adjusted by the words around them, composed into hits.

The passes here read atoms against each other and the text ("May 3rd last year", "yesterday and
the day before", "the day before Christmas", "since Monday"), which no single rule's match can.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta

from . import calendar as cal
from . import en_periods, en_spelling
from .atoms import Atom, run_rules
from .calendar import Hit
from .compose import Since, compose
from .en_patterns import RX as _RX
from .en_rules import RULES
from .en_words import (
    COUPLE as _COUPLE,
    FEW as _FEW,
    NUMW,
    festival_key as _festival_key,
    num as _num,
)
from .festivals import festival_date

_I = re.IGNORECASE

# "of"/"in" only glue a day-of-month or weekday to its month or week ("the 10th of last month").
_GAP = re.compile(r"\s*,?\s*(?:(?:of|in)\s+)?", _I)
_ENUM = re.compile(r"\s*(?:,|,?\s*and|,?\s*or)\s*", _I)
_CONNECTOR = re.compile(r"\s*(?:-|–|—|to|through|thru|until|till|(?P<needs_prefix>and))\s*", _I)
_RANGE_PREFIX = re.compile(r"\b(?:from|between)\s+$", _I)


def atoms(text: str, now: datetime) -> list[Atom]:
    out = run_rules(RULES, text, now)
    _resolve_day_before(text, out)
    _in_named_year(text, out, now)
    return out


# Between a yearless day and the year named beside it: "May 3rd last year", "April of last year",
# "last year at Christmas", "Easter in 2024".
_YEAR_GAP = re.compile(r"\s*,?\s*(?:(?:of|in|at|on|during|around)\s+)?", _I)


def _in_named_year(text: str, out: list[Atom], now: datetime) -> None:
    """A yearless date, month, season or festival beside "last year" / "this year" / "in 2024" is that
    year's one, a single day or month: read apart, it was the most recent one *and* the whole year
    (zh says it in one word: 去年母亲节)."""
    for year_atom in [a for a in out if a.kind_name == "year" and a.start is not None]:
        assert year_atom.start is not None
        beside = [a for a in out if (a.e <= year_atom.s and _YEAR_GAP.fullmatch(text[a.e : year_atom.s]))
                  or (year_atom.e <= a.s and _YEAR_GAP.fullmatch(text[year_atom.e : a.s]))]
        for a in beside:
            moved = _moved_to_year(text, a, year_atom.start.year, now)
            if moved is not None:
                out.remove(a)
                out.remove(year_atom)
                out.append(replace(moved, s=min(a.s, year_atom.s), e=max(a.e, year_atom.e)))
                break


def _moved_to_year(text: str, a: Atom, year: int, now: datetime) -> Atom | None:
    said = text[a.s : a.e]
    if re.match(r"(?:last|this|next)\b", said, _I) or re.search(r"\d{4}", said):
        return None  # "last April last year" has its own year already
    if a.kind == "day" and a.kind_name == "date" and a.month is not None and a.dom is not None:
        d = cal.valid_date(year, a.month, a.dom)
        return None if d is None else replace(a, day=d, year_given=True)
    if a.kind == "range" and a.kind_name == "season" and a.start is not None:
        r = en_periods.season_range(now.tzinfo, year, a.start.month)
        return replace(a, start=r[0], end=r[1], year_given=True)
    if a.kind == "range" and a.period == "month" and a.start is not None:
        r = cal.month_range(now.tzinfo, year, a.start.month)
        return replace(a, start=r[0], end=r[1], year_given=True)
    if a.kind == "day" and a.kind_name == "festival":
        m = _RX["festival"].search(said)
        if m is None:
            return None
        try:
            d = festival_date(_festival_key(m.group("f")), now.date(), year=year)
        except (ValueError, IndexError):
            return None
        return replace(a, day=d, year_given=True)
    return None


def _resolve_day_before(text: str, out: list[Atom]) -> None:
    """'yesterday and the day before': the day before the previous day mentioned."""
    for m in _RX["day_before"].finditer(text):
        prev = [a for a in out if a.kind == "day" and a.e <= m.start() and a.day is not None]
        if prev:
            anchor = max(prev, key=lambda a: a.e)
            assert anchor.day is not None
            out.append(Atom(m.start(), m.end(), "day", day=anchor.day - timedelta(days=1), kind_name="day"))


# Before a day: "the day before Christmas", "two days after May 4th", "a few days before the 30th".
_SHIFT = re.compile(r"(?:\bthe\s+)?\b(?:(?P<one>day)|(?P<week>week)|(?P<n>" + NUMW + r")\s+days?)\s+(?P<dir>before|after)\s+$", _I)


def _shift(text: str, atom: Atom) -> tuple[int, int, int, int] | None:
    """"N days before X" is one day, N before X; a vague count ("a couple of", "a few") is the days
    up to it, like "a couple of days ago"; "the week before X" the seven days up to it."""
    m = _SHIFT.search(text, 0, atom.s)
    if m is None:
        return None
    if m.group("week"):  # "the week before Christmas": the seven days up to it
        return m.start(), atom.e, *((-7, -1) if m.group("dir").lower() == "before" else (1, 7))
    word = re.sub(r"\s+", " ", m.group("n") or "one").lower()
    n = _num(word)
    if not n or n > 31:
        return None
    sign = -1 if m.group("dir").lower() == "before" else 1
    vague = word in _COUPLE or word in _FEW
    first, last = (sign * n, sign * n) if not vague else ((-n, -1) if sign < 0 else (1, n))
    return m.start(), atom.e, first, last


# "since Monday", "ever since last week", "from Monday till now", "this week so far": to now.
_SINCE = Since(re.compile(r"\b(?:ever\s+)?since\b\s*", _I),
               re.compile(r"\s*(?:(?:till|until|up\s+(?:to|till|until)|to)\s+(?:now|today)|so\s+far|to\s+date)\b", _I))


def parse(text: str, now: datetime) -> list[Hit]:
    assert now.tzinfo is not None
    fixed = en_spelling.corrected(text)
    if fixed is None:
        return _parse(text, now)
    # "what did I do on wendsday": parsed as spelt right, each span mapped back onto the message.
    spelt, offsets = fixed
    return [replace(h, span=(offsets[h.span[0]], offsets[h.span[1]])) for h in _parse(spelt, now)]


def _parse(text: str, now: datetime) -> list[Hit]:
    return compose(atoms(text, now), text, now.tzinfo, now.date(), "en", _GAP, _CONNECTOR, _RANGE_PREFIX, _ENUM,
                   shift=_shift, since=_SINCE)
