"""English parts of a month and "the same day in another period".

Kept apart from ``en_rules.py`` (the core rules) because these families all lean on a
month or week reference that other rules already resolve on their own:
"early last month", "the end of October", "the first week of October",
"this time last year", "a week ago today", "two weekends ago", "the Monday
before last", "the night before last".  Their atoms are longer than the bare
reference, so they win the overlap in ``compose``.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

from . import calendar as cal
from .atoms import Atom, Atoms, Ctx, Rule
from .en_words import MONTH, MONTHS, NUMS, NUMW, WD_ANY, WD_ABBR, WEEKDAYS

_I = re.IGNORECASE

# A month reference: last/this/next month, the month, the month before last, October (2025).
_MREF = (
    r"(?:(?P<two_back>the\s+month\s+before\s+last)"
    r"|(?P<rel>last|this|next|the\s+previous|previous|the\s+current|the)\s+month"
    r"|(?P<mn>" + MONTH + r")\b\.?(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?)"
)
_PART_WORDS = {"early": "early", "beginning": "early", "start": "early", "mid": "mid", "middle": "mid",
               "late": "late", "end": "late"}
_WEEK_N = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
           "fifth": 5, "5th": 5, "last": -1, "final": -1}

_RX = {
    # "late" after a copula is lateness, not a date: "I was late last month".
    "month_part": re.compile(
        r"\b(?<!was\s)(?<!were\s)(?<!am\s)(?<!is\s)(?<!be\s)(?<!up\s)"
        r"(?:(?P<adj>early|mid|late)[-\s]+|(?:the\s+)?(?P<noun>beginning|start|middle|end)\s+of\s+)"
        r"(?:the\s+)?" + _MREF + r"(?![\w-])", _I),
    "month_week": re.compile(
        r"\bthe\s+(?P<n>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last|final)\s+week\s+(?:of|in)\s+"
        + _MREF + r"(?![\w-])", _I),
    "same_time": re.compile(
        r"\b(?:(?:around|about)\s+)?(?:this|the\s+same)\s+(?P<what>time|day|date)\s+"
        r"(?:(?P<rel>last|the\s+previous)\s+(?P<u>year|month|week)|(?P<n>a|one|two)\s+(?P<u2>years?)\s+ago)\b", _I),
    "ago_anchor": re.compile(
        r"\b(?P<n>" + NUMW + r")\s+(?P<u>years?|months?|weeks?)\s+ago\s+(?P<anchor>today|yesterday)\b", _I),
    # A season needs a determiner, a preposition or a year: "fall" and "spring" alone are words.
    "season": re.compile(
        r"\b(?:(?P<p>last|this|next|this\s+past|the\s+past|the\s+previous|the\s+coming)\s+"
        r"|(?:(?:in|during|over|through|throughout|since)\s+)?(?P<the>the\s+))?"
        r"(?P<s>spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2}))?\b(?!\s+(?:asleep|apart|behind|down|in\s+love|over)\b)", _I),
    # Early / late in a year, as 年初 / 年底: its first two months, its last two.
    "year_part": re.compile(
        r"\b(?<!was\s)(?<!were\s)(?<!am\s)(?<!is\s)(?<!be\s)"
        r"(?:(?P<adj>early|late)[-\s]+(?:in\s+)?|(?:towards?\s+)?(?:the\s+)?(?P<noun>beginning|start|end)\s+of\s+)"
        r"(?:(?P<rel>last|this|next|the\s+previous|previous|the)\s+year|(?P<y>(?:19|20|21)\d{2}))\b", _I),
    "night_before_last": re.compile(r"\bthe\s+night\s+before\s+last\b", _I),
    "weekends_ago": re.compile(r"\b(?P<n>" + NUMW + r")\s+weekends?\s+ago\b", _I),
    "weekday_before_last": re.compile(r"\b(?:on\s+)?(?:the\s+)?(?P<wd>" + WD_ANY + r")\s+before\s+last\b", _I),
    "weekdays_ago": re.compile(
        r"\b(?P<n>" + NUMW + r")\s+(?P<wd>" + "|".join(WEEKDAYS) + r")s?\s+ago\b", _I),
}

# "this time last year" is vague: a window around the same date, wider for longer periods.
_SAME_TIME_SPREAD = {"year": 7, "month": 3, "week": 0}


def _month_of(m: re.Match[str], today: date) -> tuple[int, int]:
    if m.group("two_back"):
        return cal.shift_month(today.year, today.month, -2)
    if m.group("rel"):
        off = {"last": -1, "previous": -1, "next": 1}.get(re.sub(r"^the\s+", "", m.group("rel").lower()), 0)
        return cal.shift_month(today.year, today.month, off)
    month = MONTHS[m.group("mn").lower()]
    year = int(m.group("y")) if m.group("y") else cal.recent_month(today, month)
    return year, month


def _n(raw: str) -> int | None:
    return int(raw) if raw.isdigit() else NUMS.get(raw.lower())


def _month_part(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = (m.group("adj") or m.group("noun")).lower()
    out.range(m, cal.month_part_range(c.tz, *_month_of(m, c.today), _PART_WORDS[word]), "month_part")


def _month_week(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.month_week_range(c.tz, *_month_of(m, c.today), _WEEK_N[m.group("n").lower()]), "month_week")


def _same_time(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    unit = (m.group("u") or "year").lower()
    back = 1 if m.group("rel") else (NUMS.get(m.group("n").lower()) or 1)
    _same_day(m, c.tz, c.today, unit, back, m.group("what").lower() == "time", out)


def _ago_anchor(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    n = _n(m.group("n"))
    if n is None:
        return
    unit = m.group("u").lower().rstrip("s")
    base = c.today - timedelta(days=1) if m.group("anchor").lower() == "yesterday" else c.today
    _same_day(m, c.tz, base, unit, n, False, out)


_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
"""Meteorological seasons of the northern hemisphere, three months each; a winter is named by the
year its December is in (the winter of 2025 = December 2025 to February 2026)."""


def season_range(tz: tzinfo, year: int, start_month: int) -> tuple[datetime, datetime]:
    first = cal.month_range(tz, year, start_month)[0]
    ey, em = cal.shift_month(year, start_month, 3)
    return first, cal.month_range(tz, ey, em)[0]


def _season(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    p, y = re.sub(r"\s+", " ", (m.group("p") or "").lower()), m.group("y")
    if not (p or m.group("the") or y):
        return
    start = _SEASON_START[m.group("s").lower()]
    today = c.today
    if y:
        year = int(y)
    else:
        # The occurrences around today, by the year of their first month.
        def starts(yr: int) -> date:
            return date(yr, start, 1)

        def ends(yr: int) -> date:
            return season_range(c.tz, yr, start)[1].date()

        years = range(today.year - 2, today.year + 2)
        if p in ("last", "this past", "the past", "the previous"):
            year = max(yr for yr in years if ends(yr) <= today)  # the last one that ended
        elif p in ("next", "the coming"):
            year = min(yr for yr in years if starts(yr) > today)
        elif p == "this":
            current = [yr for yr in years if starts(yr) <= today < ends(yr)]
            year = current[0] if current else today.year
        else:  # "in the summer": the most recent one that has begun
            year = max(yr for yr in years if starts(yr) <= today)
    out.range(m, season_range(c.tz, year, start), "season", s=m.start("p") if p else m.start("the") if m.group("the") else m.start("s"))


def _year_part(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    rel = re.sub(r"\s+", " ", (m.group("rel") or "").lower())
    year = int(m.group("y")) if m.group("y") else c.today.year + {"last": -1, "previous": -1, "the previous": -1,
                                                                   "next": 1}.get(rel, 0)
    late = (m.group("adj") or m.group("noun")).lower() in ("late", "end")
    first, last = (11, 12) if late else (1, 2)
    out.range(m, (cal.month_range(c.tz, year, first)[0], cal.month_range(c.tz, year, last)[1]), "year_part")


def _night_before_last(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.day(m, c.today - timedelta(days=2), "day", part="night")


def _weekends_ago(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    n = _n(m.group("n"))
    if n:
        # Counted like "last weekend" (= 1 weekend ago): ISO-week weekends back.
        out.range(m, cal.weekend_of_week(c.tz, c.today, -n), "weekend")


def _weekday_before_last(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = m.group("wd").lower()
    wd = WEEKDAYS.get(word, WD_ABBR.get(word))
    if wd is not None:
        out.day(m, cal.weekday_before(c.today, wd) - timedelta(days=7), "weekday")


def _weekdays_ago(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    n = _n(m.group("n"))
    if n:
        # Counted like "last Friday" (= one Friday ago): the n-th such day strictly before today.
        wd = WEEKDAYS[m.group("wd").lower()]
        out.day(m, cal.weekday_before(c.today, wd) - timedelta(days=7 * (n - 1)), "weekday")


RULES: list[Rule] = [
    (_RX["month_part"], _month_part),
    (_RX["month_week"], _month_week),
    (_RX["same_time"], _same_time),
    (_RX["ago_anchor"], _ago_anchor),
    (_RX["season"], _season),
    (_RX["year_part"], _year_part),
    (_RX["night_before_last"], _night_before_last),
    (_RX["weekends_ago"], _weekends_ago),
    (_RX["weekday_before_last"], _weekday_before_last),
    (_RX["weekdays_ago"], _weekdays_ago),
]


def _same_day(m: re.Match[str], tz: tzinfo, base: date, unit: str, n: int, vague: bool, out: list[Atom]) -> None:
    if unit == "year":
        d = cal.same_day_shifted(base, years=-n)
    elif unit == "month":
        d = cal.same_day_shifted(base, months=-n)
    else:
        d = base - timedelta(weeks=n)
    spread = _SAME_TIME_SPREAD[unit] if vague else 0
    start, end = cal.days_range(tz, d - timedelta(days=spread), d + timedelta(days=spread))
    out.append(Atom(m.start(), m.end(), "range", start=start, end=end, kind_name="same_day"))
