"""Language-neutral composition of atoms into resolved hits.

Each grammar finds small *atoms* (a day, a part of day, a clock hour, a bare
day-of-month, or an already-resolved range) and this module glues adjacent
ones: day + part of day + clock, then ``A to B`` ranges.  Keeping the glue in
one place makes both languages agree on precedence and on range inheritance
("5月1日至3日", "May 1-3", "从周一到周三").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta, tzinfo

from .atoms import Atom
from .calendar import Hit, at, shift_month, valid_date
from .resolve import resolve

# Parts whose small clock hours belong to the next morning: 晚上一点, "last night at 1".
_LATE = ("evening", "night")


def _clock_hour(hour: int, part: str | None, fixed: bool) -> int:
    """The hour on the part's day (past 23 = the next day): 下午三点 15, 晚上一点 25, 中午一点 13."""
    if part in _LATE:
        # Midnight ends the night (晚上12点, "last night at 12am"); 0–4 o'clock are the small
        # hours after it, written by the day before (昨晚两点才睡 = 02:00 today).
        if hour in (0, 12) and (not fixed or hour == 0):
            return 24
        if hour < 5:
            return hour + 24
        return hour if fixed or hour >= 12 else hour + 12
    if fixed or part is None:
        return hour
    if part in ("afternoon", "dusk") and hour < 12:
        return hour + 12
    if part == "noon" and hour <= 5:
        return hour + 12
    return hour


def _anchor(period: Atom, inner: Atom, s: int, e: int) -> Atom | None:
    """Resolve a day-of-month / bare weekday / bare weekend inside a month or week atom."""
    if period.period is None or period.start is None:
        return None
    first = period.start.date()
    tz = period.start.tzinfo
    assert tz is not None
    if period.period == "month" and inner.kind == "daynum" and inner.dom is not None:
        d = valid_date(first.year, first.month, inner.dom)
        if d is None:  # 上个月31号 in a 30-day month: keep the month, swallow the number
            return replace(period, s=s, e=e)
        return Atom(s, e, "day", day=d, month=first.month, dom=inner.dom, kind_name="month+day_of_month")
    if period.period == "week" and inner.kind == "day" and inner.bare_weekday is not None:
        d = first + timedelta(days=inner.bare_weekday)
        return replace(inner, s=s, e=e, day=d, bare_weekday=None, kind_name="week+weekday")
    if period.period == "week" and inner.kind == "range" and inner.bare_weekday is not None:
        # A bare weekend (周末, "the weekend") carries bare_weekday=5: its Saturday.
        sat = first + timedelta(days=inner.bare_weekday)
        return Atom(s, e, "range", start=at(tz, sat), end=at(tz, sat + timedelta(days=2)), kind_name="weekend")
    return None


def _bare_weekday(a: Atom) -> bool:
    return a.kind == "day" and a.bare_weekday is not None and a.hour is None and a.part is None


def _dated(a: Atom) -> bool:
    """A day named by its month and day of the month (a year optional), nothing added to it."""
    return (a.kind == "day" and a.bare_weekday is None and a.month is not None and a.dom is not None
            and a.hour is None and a.part is None)


def _has_edges(a: Atom) -> bool:
    return a.kind == "range" and a.start is not None and (a.period is not None or a.kind_name == "year")


def _edge_day(period: Atom, edge: Atom, s: int, e: int) -> Atom:
    """上个月最后一天, "the first day of this month": that day of the month, week or year."""
    assert period.start is not None and period.end is not None
    first = edge.kind_name == "first_day"
    d = period.start.date() if first else period.end.date() - timedelta(days=1)
    return Atom(s, e, "day", day=d, kind_name=edge.kind_name)


def _combine(a: Atom, b: Atom, lang: str) -> Atom | None:
    """Glue b onto a if they form one expression, else None."""
    if a.kind == "edge" and _has_edges(b):
        return _edge_day(b, a, a.s, b.e)
    if b.kind == "edge" and _has_edges(a):
        return _edge_day(a, b, a.s, b.e)
    if a.period is not None and a.kind == "range":
        anchored = _anchor(a, b, a.s, b.e)
        if anchored is not None:
            return anchored
    if lang == "en" and b.period is not None and b.kind == "range":
        anchored = _anchor(b, a, a.s, b.e)  # "the 10th of last month", "Tuesday night last week"
        if anchored is not None:
            return anchored
    # A weekday beside a day of the month names that date ("Thursday the 30th", 30号周四): the
    # number decides, the weekday only confirms it.
    if _bare_weekday(a) and b.kind == "daynum":
        return replace(b, s=a.s, kind="day", alone_ok=True, kind_name="weekday+day_of_month")
    if a.kind == "daynum" and _bare_weekday(b):
        return replace(a, e=b.e, kind="day", alone_ok=True, kind_name="day_of_month+weekday")
    # The same beside a full date ("Thursday, March 5", 周四3月5号, 3月5号周四): read apart, the
    # weekday was the most recent Thursday, a second and usually wrong day. The date keeps its
    # kind, so a yearless one in a sentence about the future still moves ahead (`tense.py`).
    if _bare_weekday(a) and _dated(b):
        return replace(b, s=a.s)
    if _dated(a) and _bare_weekday(b):
        return replace(a, e=b.e)
    if a.kind == "daynum" and a.day is not None and b.kind == "part":
        # 3号晚上: the part of that day of the month (read apart, 晚上 was tonight, a second range).
        return replace(a, e=b.e, kind="day", alone_ok=True, part=b.part, kind_name="day_of_month+part")
    if a.kind == "range" and b.kind == "part":
        # 前几天晚上, "the past few days in the evening": the part of several days is those days
        # (a range holds no part of day); read apart, 晚上 became tonight, a wrong extra range.
        return replace(a, e=b.e)
    if a.kind == "day" and a.part is None and b.kind == "part":
        if a.hour is not None:
            # "at 3 yesterday afternoon": the part fixes an am/pm-less hour.
            return replace(a, e=b.e, part=b.part, hour=_clock_hour(a.hour, b.part, a.meridiem_fixed),
                           kind_name=a.kind_name + "+part")
        return replace(a, e=b.e, part=b.part, kind_name=a.kind_name + "+part")
    if a.kind in ("day", "part") and a.hour is None and b.kind == "clock":
        hour = _clock_hour(b.hour or 0, a.part, b.meridiem_fixed)
        return replace(a, e=b.e, hour=hour, alone_ok=True, approx=a.approx or b.approx,
                       meridiem_fixed=b.meridiem_fixed or a.part is not None,
                       kind_name=(a.kind_name or a.kind) + "+clock")
    if lang == "en" and a.kind == "clock" and b.kind == "day" and b.hour is None:
        hour = _clock_hour(a.hour or 0, b.part, a.meridiem_fixed)
        return replace(b, s=a.s, hour=hour, approx=a.approx, meridiem_fixed=a.meridiem_fixed or b.part is not None,
                       kind_name=b.kind_name + "+clock")
    # "Around" lets a day-of-month stand alone ("around the 10th") but not a bare clock:
    # 三点左右 without a day or part of day is still ambiguous between 3am and 3pm.
    if lang == "zh" and b.kind == "approx" and a.kind in ("day", "daynum", "clock") and not a.approx:
        return replace(a, e=b.e, approx=True, alone_ok=a.alone_ok or a.kind != "clock")
    if lang == "en" and a.kind == "approx" and b.kind in ("day", "daynum", "clock"):
        return replace(b, s=a.s, approx=True, alone_ok=b.alone_ok or b.kind != "clock")
    if lang == "en" and a.kind == "clock" and b.kind == "part" and a.hour is not None:
        # "3 in the afternoon": a part attached after the clock.
        return replace(b, s=a.s, hour=_clock_hour(a.hour, b.part, a.meridiem_fixed), kind_name="part+clock")
    return None


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


def _inherit_left(a: Atom, b: Atom, today: date) -> Atom:
    """The left end of a range takes what it left out from a more specific right end.

    'from the 10th to the 15th of last month': the day-of-month takes the right end's month.
    """
    if a.kind == "day" and a.bare_weekday is not None and b.kind == "day" and b.bare_weekday is not None:
        # 从周一到周三 / "Monday to Wednesday": the span starts on the most recent such weekday
        # before today, so asked on a Monday it is last week's Monday to Wednesday (a span
        # starting today has nothing to recall yet); asked on Tuesday, this week's.
        return replace(a, day=today - timedelta(days=(today.weekday() - a.bare_weekday) % 7 or 7))
    if a.kind == "day" and a.bare_weekday is not None and b.kind == "day" and b.day is not None \
            and b.bare_weekday is None:
        # "Monday to Wednesday last week": the bare weekday is the one on or before the right end.
        return replace(a, day=b.day - timedelta(days=(b.day.weekday() - a.bare_weekday) % 7))
    if a.kind != "daynum" or a.dom is None or b.kind != "day" or b.day is None or b.month is None:
        return a
    y, m = b.day.year, b.day.month
    for _ in range(3):
        d = valid_date(y, m, a.dom)
        if d is not None and d <= b.day:
            return replace(a, kind="day", day=d)
        y, m = shift_month(y, m, -1)
    return a


def _same_month(a: Atom, b: Atom) -> Atom:
    """'上个月10号和20号', 'May 3 and the 5th': a listed day-of-month stays in the month just named."""
    if b.kind != "daynum" or b.dom is None or a.kind != "day" or a.day is None or a.month is None:
        return b
    d = valid_date(a.day.year, a.day.month, b.dom)
    return b if d is None else replace(b, kind="day", day=d, month=a.month, alone_ok=True)


def _same_week(a: Atom, b: Atom) -> Atom:
    """'上周三和周四', 'Wednesday and Thursday last week': a listed bare weekday is in the week of the
    weekday it is listed with (read alone it was the most recent one, often this week's)."""
    if b.kind != "day" or b.bare_weekday is None or a.kind != "day" or a.day is None or a.bare_weekday is not None:
        return b
    if a.kind_name.split("+")[0] not in ("weekday", "week"):
        return b
    monday = a.day - timedelta(days=a.day.weekday())
    return replace(b, day=monday + timedelta(days=b.bare_weekday), bare_weekday=None)


DayShift = Callable[[str, Atom], "tuple[int, int, int, int] | None"]
"""A grammar's words that move a day by whole days (国庆节前一天, "the day before Christmas"): given
the text and a day atom, (start, end) of the words and the day together and the first and last day
they mean as offsets from it (inclusive), or None."""


@dataclass(frozen=True)
class Since:
    """How a language says "from then until now" around an expression: words before it that are
    enough alone ("since", 自从) and words after it (以来, 到现在, 至今, "till now", "so far")."""

    before: re.Pattern[str]
    """Found ending where the expression starts ("since Monday"), or opening the expression itself
    (a rule that took "since" into its match: "since 2024")."""
    after: re.Pattern[str]
    """Matched right after the expression."""


def _since(hit: Hit, text: str, since: Since, tz: tzinfo, today: date) -> Hit:
    """The expression stretched to the end of today when it says "since" (the caller clips the
    future): "since Monday", 上周以来, 从周一到现在 are the whole stretch, not that day alone."""
    s, e = hit.span
    before = next((m for m in since.before.finditer(text, max(0, s - 16), e) if m.end() == s or m.start() == s), None)
    after = since.after.match(text, e)
    if before is None and after is None:
        return hit
    span = (min(s, before.start()) if before else s, after.end() if after else e)
    return Hit(span, hit.start, at(tz, today + timedelta(days=1)), "since", hit.lang)


def _shifted(atom: Atom, s: int, e: int, first: int, last: int, tz: tzinfo) -> Atom:
    """One day stays a day (a part of day or a clock may still follow: 国庆节前一天晚上); several
    become a range."""
    assert atom.day is not None
    name = f"{atom.kind_name or 'day'}+shift"
    if first == last:
        return replace(atom, s=s, e=e, kind="day", day=atom.day + timedelta(days=first), bare_weekday=None, month=None,
                       dom=None, approx=False, alone_ok=True, kind_name=name)
    return Atom(s, e, "range", start=at(tz, atom.day + timedelta(days=first)),
                end=at(tz, atom.day + timedelta(days=last + 1)), kind_name=name)


def compose(
    atoms: list[Atom],
    text: str,
    tz: tzinfo,
    today: date,
    lang: str,
    gap: re.Pattern[str],
    connector: re.Pattern[str],
    range_prefix: re.Pattern[str],
    enum: re.Pattern[str] | None = None,
    shift: DayShift | None = None,
    since: Since | None = None,
) -> list[Hit]:
    if shift is not None:
        # Longer than the day it moves, the moved atom wins the overlap below (and beats a
        # shorter reading of its own words: 国庆节前两天 is not 前两天, "the past two days").
        moved = []
        for a in atoms:
            if a.kind in ("day", "daynum") and a.day is not None and a.part is None and a.hour is None:
                found = shift(text, a)
                if found is not None:
                    moved.append(_shifted(a, *found, tz))
        atoms = atoms + moved
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
            if enum is not None and enum.fullmatch(text[a.e : units[i + 1].s]):
                units[i + 1] = _same_week(a, _same_month(a, units[i + 1]))
                a = units[i] = _same_week(units[i + 1], a)  # "Wednesday and Thursday last week"
                if a.kind == "daynum" and units[i + 1].month is not None:
                    # "the 10th and the 12th of last month": the listed day takes the later month.
                    a = units[i] = replace(_inherit_left(a, units[i + 1], today), alone_ok=True)
            b = units[i + 1]
            m = connector.fullmatch(text[a.e : b.s])
            if m is not None:
                pre = range_prefix.search(text[: a.s])
                needs_prefix = bool(m.groupdict().get("needs_prefix"))
                if not needs_prefix or pre is not None:
                    left = _inherit_left(a, b, today)
                    ra = resolve(replace(left, alone_ok=True), tz, today)
                    rb = resolve(replace(_inherit(left, b), alone_ok=True), tz, today)
                    if ra is not None and rb is not None and rb[1] > ra[0]:
                        s = pre.start() if pre is not None else a.s
                        hits.append(Hit((s, b.e), ra[0], rb[1], "range", lang))
                        i += 2
                        continue
        r = resolve(a, tz, today)
        if r is not None:
            hits.append(Hit((a.s, a.e), r[0], r[1], a.kind_name or a.kind, lang))
        i += 1
    if since is not None:
        hits = [_since(h, text, since, tz, today) for h in hits]
    return hits


def _drop_overlaps(atoms: list[Atom]) -> list[Atom]:
    """Keep the longest atom where candidates overlap (earliest on ties)."""
    chosen: list[Atom] = []
    for atom in sorted(atoms, key=lambda x: (-(x.e - x.s), x.s)):
        if all(atom.e <= c.s or atom.s >= c.e for c in chosen):
            chosen.append(atom)
    return sorted(chosen, key=lambda x: x.s)