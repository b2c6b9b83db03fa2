"""Language-neutral composition of atoms into resolved hits.

Each grammar finds small *atoms* (a day, a part of day, a clock hour, a bare
day-of-month, or an already-resolved range) and this module glues adjacent
ones: day + part of day + clock, then ``A to B`` ranges.  Keeping the glue in
one place makes both languages agree on precedence and on range inheritance
("5月1日至3日", "May 1-3", "从周一到周三").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, tzinfo

from .calendar import Hit, at, day_range, shift_month, valid_date

# Parts of day: (start hour, end hour) on the day they attach to.
PARTS: dict[str, tuple[int, int]] = {
    "early": (0, 5),
    "morning": (5, 12),
    "noon": (11, 13),
    "afternoon": (12, 18),
    "evening": (18, 24),
}


@dataclass(frozen=True)
class Atom:
    s: int
    e: int
    kind: str  # day | range | part | clock | daynum
    start: datetime | None = None
    end: datetime | None = None
    day: date | None = None
    part: str | None = None
    hour: int | None = None
    # Clock atoms: whether am/pm (or a part of day) already fixed the hour.
    meridiem_fixed: bool = False
    # Whether the atom may stand alone (e.g. a bare zh clock "三点" may not).
    alone_ok: bool = True
    # For range inheritance: which calendar fields the text stated itself.
    year_given: bool = True
    month: int | None = None
    dom: int | None = None
    bare_weekday: int | None = None
    kind_name: str = ""


def _clock_hour(hour: int, part: str | None, fixed: bool) -> int:
    if fixed or part is None:
        return hour
    if part in ("afternoon", "evening") and hour < 12:
        return hour + 12
    if part == "noon" and hour <= 5:
        return hour + 12
    return hour


def _combine(a: Atom, b: Atom, lang: str) -> Atom | None:
    """Glue b onto a if they form one expression, else None."""
    if a.kind == "day" and a.part is None and a.hour is None and b.kind == "part":
        return replace(a, e=b.e, part=b.part, kind_name=a.kind_name + "+part")
    if a.kind in ("day", "part") and a.hour is None and b.kind == "clock":
        hour = _clock_hour(b.hour or 0, a.part, b.meridiem_fixed)
        return replace(a, e=b.e, hour=hour, alone_ok=True, kind_name=(a.kind_name or a.kind) + "+clock")
    if lang == "en" and a.kind == "clock" and b.kind == "day" and b.hour is None:
        hour = _clock_hour(a.hour or 0, b.part, a.meridiem_fixed)
        return replace(b, s=a.s, hour=hour, kind_name=b.kind_name + "+clock")
    if lang == "en" and a.kind == "clock" and b.kind == "part" and a.hour is not None:
        # "3 in the afternoon": a part attached after the clock.
        return replace(b, s=a.s, hour=_clock_hour(a.hour, b.part, a.meridiem_fixed), kind_name="part+clock")
    return None


def resolve(a: Atom, tz: tzinfo, today: date) -> tuple[datetime, datetime] | None:
    if a.kind == "range":
        assert a.start is not None and a.end is not None
        return a.start, a.end
    if a.kind == "daynum":
        return None if a.day is None or not a.alone_ok else day_range(tz, a.day)
    if a.kind == "clock":
        if not a.alone_ok or a.hour is None:
            return None
        return at(tz, today, a.hour), at(tz, today, a.hour + 1)
    if a.kind == "part" and not a.alone_ok:
        return None
    d = a.day if a.kind == "day" else today
    if d is None:
        return None
    if a.hour is not None:
        return at(tz, d, a.hour), at(tz, d, a.hour + 1)
    if a.part is not None:
        h0, h1 = PARTS[a.part]
        return at(tz, d, h0), at(tz, d, h1)
    return day_range(tz, d)


def _inherit(a: Atom, b: Atom) -> Atom:
    """Fill the fields the right end of a range left out from the left end."""
    if a.day is None:
        return b
    if b.kind == "daynum" and b.dom is not None:
        y, m = a.day.year, a.day.month
        for _ in range(3):
            d = valid_date(y, m, b.dom)
            if d is not None and d >= a.day:
                return replace(b, kind="day", day=d)
            y, m = shift_month(y, m, 1)
        return b
    if b.kind == "day" and not b.year_given and b.month is not None and b.dom is not None:
        for y in (a.day.year, a.day.year + 1):
            d = valid_date(y, b.month, b.dom)
            if d is not None and d >= a.day:
                return replace(b, day=d)
        return b
    if b.kind == "day" and b.bare_weekday is not None:
        d = a.day + timedelta(days=(b.bare_weekday - a.day.weekday()) % 7)
        return replace(b, day=d)
    return b


def compose(
    atoms: list[Atom],
    text: str,
    tz: tzinfo,
    today: date,
    lang: str,
    gap: re.Pattern[str],
    connector: re.Pattern[str],
    range_prefix: re.Pattern[str],
) -> list[Hit]:
    atoms = _drop_overlaps(atoms)
    units: list[Atom] = []
    for atom in atoms:
        if units and gap.fullmatch(text[units[-1].e : atom.s]):
            merged = _combine(units[-1], atom, lang)
            if merged is not None:
                units[-1] = merged
                continue
        units.append(atom)

    hits: list[Hit] = []
    i = 0
    while i < len(units):
        a = units[i]
        if i + 1 < len(units):
            b = units[i + 1]
            m = connector.fullmatch(text[a.e : b.s])
            if m is not None:
                pre = range_prefix.search(text[: a.s])
                needs_prefix = bool(m.groupdict().get("needs_prefix"))
                if not needs_prefix or pre is not None:
                    ra = resolve(replace(a, alone_ok=True), tz, today)
                    rb = resolve(replace(_inherit(a, b), alone_ok=True), tz, today)
                    if ra is not None and rb is not None and rb[1] > ra[0]:
                        s = pre.start() if pre is not None else a.s
                        hits.append(Hit((s, b.e), ra[0], rb[1], "range", lang))
                        i += 2
                        continue
        r = resolve(a, tz, today)
        if r is not None:
            hits.append(Hit((a.s, a.e), r[0], r[1], a.kind_name or a.kind, lang))
        i += 1
    return hits


def _drop_overlaps(atoms: list[Atom]) -> list[Atom]:
    """Keep the longest atom where candidates overlap (earliest on ties)."""
    chosen: list[Atom] = []
    for atom in sorted(atoms, key=lambda x: (-(x.e - x.s), x.s)):
        if all(atom.e <= c.s or atom.s >= c.e for c in chosen):
            chosen.append(atom)
    return sorted(chosen, key=lambda x: x.s)
