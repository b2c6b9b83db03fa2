"""English rules: what each pattern's match means, as atoms (calendar arithmetic, no dateparser).

Words that double as ordinary English ("may", "march", "sat", "sun", "wed",
"second", "we") only count when the context makes them a date: a day number,
a year, or a preposition/modifier in front.
"""

from __future__ import annotations

import re
from datetime import timedelta

from . import calendar as cal
from . import en_periods
from .atoms import Atom, Atoms, Ctx, Rule
from .en_patterns import RX as _RX
from .en_words import (
    COUPLE as _COUPLE,
    FEW as _FEW,
    MONTHS as _MONTHS,
    ORD_WORDS as _ORD_WORDS,
    PARTS as _PARTS,
    SAFE_MONTHS as _SAFE_MONTHS,
    WD_ABBR as _WD_ABBR,
    WD_ALONE as _WD_ALONE,
    WD_ANY,
    WEEKDAYS as _WEEKDAYS,
    festival_key as _festival_key,
    festival_word as _festival_word,
    num as _num,
)
from .festivals import festival_date

_I = re.IGNORECASE
_APPROX_WORD = re.compile(r"around|about|approximately|roughly", _I)


def _offset(p: str) -> int:
    p = re.sub(r"\s+", " ", p.lower())
    return {"last": -1, "previous": -1, "the previous": -1, "this": 0, "the current": 0, "current": 0,
            "next": 1, "the coming": 1}[p]


def _rolling(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    unit = m.group("u").lower().rstrip("s")
    n = _num(m.group("n"))
    if n is None or n == 0:
        return
    # "last week" / "last month" are calendar periods; "the last week" and "past week" are
    # rolling windows.
    pre = m.group("pre").lower()
    if unit == "fortnight":  # no calendar fortnight: "last fortnight" is the past 14 days too
        unit, n = "week", 2 * n
    elif not m.group("n") and unit != "hour" and (pre == "previous" or (pre == "last" and not m.group("the"))):
        return
    # "the last few days" counts as vaguely as "lately": it gives way to a day the message names
    count = re.sub(r"\s+", " ", m.group("n") or "").lower()
    kind = "recent" if count in _COUPLE or count in _FEW else "rolling"
    if unit == "day" and count in _COUPLE:
        out.range(m, cal.calendar_days_back(c.now, 2), kind)  # the same rule as 这两天
    elif unit in ("month", "year"):
        out.range(m, cal.rolling_months(c.now, n * (12 if unit == "year" else 1)), kind)
    else:
        out.range(m, cal.rolling(c.now, timedelta(**{unit + "s": n})), kind)


def _recent(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.rolling(c.now, timedelta(days=7)), "recent")


def _few_days(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.days_range(c.tz, c.today - timedelta(days=7), c.today - timedelta(days=1)), "few_days_ago")


def _ago(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    raw = m.group("n").lower()
    unit = m.group("u").lower().rstrip("s")
    n = _num(raw)
    today = c.today
    if n is None:
        return
    if unit == "fortnight":  # "a fortnight ago": the week two weeks back, as "two weeks ago"
        unit, n, raw = "week", 2 * n, str(2 * n)
    if unit in ("minute", "min"):  # "30 minutes ago": the hours window, as 半小时前
        unit, n = "hour", 0 if raw in _COUPLE or raw in _FEW else n // 60
    couple = re.sub(r"\s+", " ", raw) in _COUPLE
    if unit == "night":  # "two nights ago": that day's night (as "the night before last")
        if raw in _FEW:
            _few_days(m, c, out)  # "a few nights ago" as "the other night"
        elif couple:
            out.range(m, cal.couple_ago(c.tz, today, "day"), "ago")
        else:
            out.day(m, today - timedelta(days=n), "ago", part="night")
    elif unit == "day" and raw in _FEW:
        _few_days(m, c, out)
    elif unit != "hour" and couple:
        out.range(m, cal.couple_ago(c.tz, today, unit), "ago")
    elif unit in ("week", "month", "year") and raw in _FEW:
        out.range(m, cal.few_ago(c.tz, today, unit), "ago")
    elif unit == "day":
        out.day(m, today - timedelta(days=n), "ago")
    elif unit == "week":
        out.range(m, cal.week_range(c.tz, today, -n), "ago", period="week")
    elif unit == "month":
        out.range(m, cal.month_range(c.tz, *cal.shift_month(today.year, today.month, -n)), "ago", period="month")
    elif unit == "year":
        out.range(m, cal.year_range(c.tz, today.year - n), "ago")
    else:
        out.range(m, cal.hours_ago(c.now, n), "ago")


def _later(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    n = _num(m.group("n1") or m.group("n2"))
    unit = (m.group("u1") or m.group("u2")).lower().rstrip("s")
    if n is None:
        return
    if unit == "day":
        out.day(m, c.today + timedelta(days=n), "later")
    else:
        out.range(m, cal.week_range(c.tz, c.today, n), "later")


# dayword group -> (days from today, part of day)
_DAYWORDS = {"dby": (-2, None), "dat": (2, None), "yd": (-1, None), "td": (0, None), "tm": (1, None),
             "tn": (0, "night"), "ln": (-1, "night"), "le": (-1, "evening")}


def _dayword(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    g = m.lastgroup
    if g == "tp":
        out.day(m, c.today, "day", part=_PARTS[m.group("tp").lower()])
    elif g in _DAYWORDS:
        offset, part = _DAYWORDS[g]
        out.day(m, c.today + timedelta(days=offset), "day", part=part)


def _week(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    off = -2 if m.group("two_back") else 2 if m.group("two_fwd") else _offset(m.group("p"))
    out.range(m, cal.week_range(c.tz, c.today, off), "week", period="week")


def _weekend(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    p = re.sub(r"\s+", " ", (m.group("p") or "").lower())
    offset = -2 if m.group("wb") else {"last": -1, "the previous": -1, "this": 0, "next": 1, "this coming": 1}.get(p)
    if p == "this past" and c.today.weekday() >= 5:
        offset = -1  # asked on a Saturday or Sunday, "this past weekend" is the one that ended
    if offset is None:
        out.range(m, cal.recent_weekend(c.tz, c.today), "weekend", bare_weekday=5)
    else:
        out.range(m, cal.weekend_of_week(c.tz, c.today, offset), "weekend")


def _weekday(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = m.group("wd").lower()
    p = re.sub(r"\s+", " ", (m.group("p") or "").lower())
    if word in _WEEKDAYS:
        wd = _WEEKDAYS[word]
    elif p or word in _WD_ALONE or _in_weekday_span(c.text, m):
        wd = _WD_ABBR[word]
    else:
        return  # "sat", "sun", "wed" alone are ordinary words
    today = c.today
    if m.group("wk"):
        out.day(m, cal.weekday_in_week(today, _offset(m.group("wk")), wd), "weekday")
    elif p in ("last", "the previous", "this past"):
        out.day(m, cal.weekday_before(today, wd), "weekday")
    elif p in ("this", "next"):
        out.day(m, cal.weekday_in_week(today, _offset(p), wd), "weekday")
    elif p == "this coming":
        out.day(m, cal.weekday_after(today, wd), "weekday")
    else:
        out.day(m, cal.weekday_not_after(today, wd), "weekday", bare_weekday=wd)


_WD_SPAN_AFTER = re.compile(r"\s*(?:-|–|to|through|thru|till|until)\s*" + WD_ANY + r"\b", _I)
_WD_SPAN_BEFORE = re.compile(r"\b" + WD_ANY + r"\s*(?:-|–|to|through|thru|till|until)\s*$", _I)


def _in_weekday_span(text: str, m: re.Match[str]) -> bool:
    """An abbreviation that is also a word ("Mon", "Wed", "Sat", "Sun") names a day in a span of
    weekdays: "Mon-Wed", "from Sat to Sun"."""
    return bool(_WD_SPAN_AFTER.match(text, m.end()) or _WD_SPAN_BEFORE.search(text, 0, m.start()))


def _month_rel(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    off = -2 if m.group("two_back") else _offset(m.group("p"))
    ym = cal.shift_month(c.today.year, c.today.month, off)
    out.range(m, cal.month_range(c.tz, *ym), "month", period="month")


def _year_rel(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    off = -2 if m.group("two_back") else _offset(m.group("p"))
    out.range(m, cal.year_range(c.tz, c.today.year + off), "year")


def _year(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.year_range(c.tz, int(m.group("y"))), "year", s=m.start("y"))


def _date(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    month, dd = _MONTHS[m.group("m").lower()], int(m.group("d"))
    y = int(m.group("y")) if m.group("y") else None
    d = cal.valid_date(y, month, dd) if y else cal.recent_date(c.today, month, dd)
    if d is not None:
        out.day(m, d, "date", year_given=y is not None, month=month, dom=dd)


def _md_range(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    month = _MONTHS[m.group("m").lower()]
    d1, d2 = int(m.group("d1")), int(m.group("d2"))
    if m.group("c").lower() == "and" and not m.group("pre"):
        return
    y = int(m.group("y")) if m.group("y") else None
    first = cal.valid_date(y, month, d1) if y else cal.recent_date(c.today, month, d1)
    if first is None or d2 < d1:
        return
    last = cal.valid_date(first.year, month, d2)
    if last is not None:
        out.range(m, cal.days_range(c.tz, first, last), "range")


def _month_year(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.month_range(c.tz, int(m.group("y")), _MONTHS[m.group("m").lower()]), "month", period="month")


def _month(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = m.group("m")
    low = word.lower()
    pre = re.sub(r"\s+", " ", (m.group("pre") or "").lower())
    if not pre:
        if low in ("may", "march"):
            # Capitalised mid-sentence reads as the month; "I may go" / "March on" do not.
            before = c.text[: m.start()].rstrip()
            if not word[0].isupper() or not before or before[-1] in ".!?\n\"“":
                return
        elif low not in _SAFE_MONTHS:
            return
    month, today = _MONTHS[low], c.today
    if pre == "last":
        year = today.year if month < today.month else today.year - 1
    elif pre == "this":
        year = today.year
    elif pre == "next":
        year = today.year if month > today.month else today.year + 1
    else:
        year = cal.recent_month(today, month)
    s = m.start() if pre in ("last", "this", "next") else m.start("m")
    out.range(m, cal.month_range(c.tz, year, month), "month", s=s, period="month")


def _iso(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    d = cal.valid_date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
    if d is not None:
        out.day(m, d, "date")


def _mdy(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    mo, dd = int(m.group("m")), int(m.group("d"))
    if mo > 12 and dd <= 12:  # 28/4 cannot be month/day: day/month, as most of the world writes it
        mo, dd = dd, mo
    if m.group("y"):
        y = int(m.group("y"))
        d = cal.valid_date(y + 2000 if y < 100 else y, mo, dd)
    else:
        d = cal.recent_date(c.today, mo, dd) if cal.valid_date(2000, mo, dd) else None
    if d is not None:
        out.day(m, d, "date", year_given=bool(m.group("y")), month=mo, dom=dd)


def _ordinal(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    dd = int(m.group("d"))
    if 1 <= dd <= 31:
        # Alone only as "on the 3rd"; "the 3rd" / "3rd" need a month, a range or "around".
        out.append(Atom(m.start(), m.end(), "daynum", day=cal.recent_day_of_month(c.today, dd), dom=dd,
                        alone_ok=bool(m.group("on")), kind_name="day_of_month"))


def _ordword(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    dd = _ORD_WORDS[re.sub(r"[\s-]+", " ", m.group("d").lower())]
    out.append(Atom(m.start(), m.end(), "daynum", day=cal.recent_day_of_month(c.today, dd), dom=dd,
                    alone_ok=False, kind_name="day_of_month"))


def _edge(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.edge(m, first=m.group("w").lower() == "first")


# Festival names that are also ordinary words: a day only after a preposition of time ("over New
# Year", "on valentines"); "plans for the new year", "until new year" are the coming one, not a day
# to recall.
_NEEDS_PREPOSITION = {"new year", "new years", "valentines"}
_PREPOSITION = re.compile(r"\b(?:at|on|over|since|after|around|during)\s+(?:the\s+)?$", _I)


def _festival(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = m.group("f")
    p = (m.group("p") or "").lower()
    if word.lower().startswith("may ") and word[0] == "m" and not p:
        return  # "I may day-trip there": the modal verb, unless written as a name or after on / last / next
    if _festival_word(word) in _NEEDS_PREPOSITION and not p and not _PREPOSITION.search(c.text, 0, m.start()):
        return  # "happy new year", "we sent valentines": a greeting or a thing; "at New Year" is the day
    key = _festival_key(word)
    y = int(m.group("y")) if m.group("y") else (c.today.year if p == "this" else None)
    mode = {"last": "last", "next": "next"}.get(p, "recent")
    try:
        d = festival_date(key, c.today, year=y, mode=mode)
    except (ValueError, IndexError):
        return
    out.day(m, d, "festival")


def _part(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.append(Atom(m.start(), m.end(), "part", part=_PARTS[m.group("p").lower()], alone_ok=False, kind_name="part"))


def _approx(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    # Glued onto the following day / day-of-month / clock by compose; alone it is nothing.
    out.append(Atom(m.start(), m.end(), "approx", kind_name="approx"))


def _clock(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    if m.group("h") is not None:
        h = int(m.group("h"))
        ap = m.group("ap").lower().replace(".", "")
        if not 1 <= h <= 12:
            return
        h = (h % 12) + (12 if ap == "pm" else 0)
        out.append(Atom(m.start(), m.end(), "clock", hour=h, meridiem_fixed=True, alone_ok=True, kind_name="clock",
                        approx=_APPROX_WORD.match(m.group("pre1") or "") is not None))
    elif m.group("h2") is not None:
        h = int(m.group("h2"))
        if h <= 23:
            # "at 15:00" is unambiguous alone; "at 3" only next to a day.
            alone = m.group("mi2") is not None and h >= 13
            out.append(Atom(m.start(), m.end(), "clock", hour=h, meridiem_fixed=h >= 13, alone_ok=alone,
                            kind_name="clock", approx=_APPROX_WORD.match(m.group("at")) is not None))
    else:
        h = int(m.group("h3"))
        if h <= 23 and int(m.group("mi3")) < 60:
            out.append(Atom(m.start(), m.end(), "clock", hour=h, meridiem_fixed=h >= 13, alone_ok=False,
                            kind_name="clock"))


RULES: list[Rule] = [
    (_RX["rolling"], _rolling),
    (_RX["recent"], _recent),
    (_RX["few_days"], _few_days),
    (_RX["ago"], _ago),
    (_RX["later"], _later),
    (_RX["dayword"], _dayword),
    (_RX["week"], _week),
    (_RX["weekend"], _weekend),
    (_RX["weekday"], _weekday),
    (_RX["month_rel"], _month_rel),
    (_RX["year_rel"], _year_rel),
    (_RX["year"], _year),
    (_RX["md"], _date),
    (_RX["dm"], _date),
    (_RX["md_range"], _md_range),
    (_RX["month_year"], _month_year),
    (_RX["month"], _month),
    (_RX["iso"], _iso),
    (_RX["mdy"], _mdy),
    (_RX["ordinal"], _ordinal),
    (_RX["ordword"], _ordword),
    (_RX["edge"], _edge),
    (_RX["festival"], _festival),
    (_RX["part"], _part),
    (_RX["clock"], _clock),
    (_RX["approx"], _approx),
    *en_periods.RULES,
]
