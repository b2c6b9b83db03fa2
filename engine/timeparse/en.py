"""English rule grammar (regexes + calendar arithmetic, no dateparser).

Words that double as ordinary English ("may", "march", "sat", "sun", "wed",
"second", "we") only count when the context makes them a date: a day number,
a year, or a preposition/modifier in front.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from . import calendar as cal
from . import en_periods
from .calendar import Hit
from .compose import Atom, Atoms, compose
from .en_words import (
    FEST_RX as _FEST_RX,
    FESTIVALS as _FESTIVALS,
    MONTH,
    MONTHS as _MONTHS,
    NUMS as _NUMS,
    NUMW,
    ORD,
    PARTS as _PARTS,
    SAFE_MONTHS as _SAFE_MONTHS,
    WD_ABBR as _WD_ABBR,
    WD_ANY,
    WEEKDAYS as _WEEKDAYS,
)
from .festivals import festival_date

_I = re.IGNORECASE
_RX = {
    "rolling": re.compile(
        r"\b(?:(?:in|over|during|for|within)\s+)?(?P<the>the\s+)?(?P<pre>past|last|previous|recent)\s+"
        r"(?:(?P<n>" + NUMW + r")\s+)?(?P<u>days?|hours?|weeks?|months?|years?)\b", _I),
    "recent": re.compile(r"\b(?:recently|lately|as of late|of late)\b", _I),
    "ago": re.compile(r"\b(?P<n>" + NUMW + r")\s+(?P<u>days?|weeks?|months?|years?|hours?)\s+(?:ago|back|before now)\b", _I),
    "later": re.compile(r"\b(?:in\s+(?P<n1>" + NUMW + r")\s+(?P<u1>days?|weeks?)|(?P<n2>" + NUMW
                        + r")\s+(?P<u2>days?|weeks?)\s+from\s+(?:now|today))\b", _I),
    "few_days": re.compile(r"\b(?:the other day|a few days ago|several days ago|a couple of days back)\b", _I),
    "dayword": re.compile(
        r"\b(?:(?P<dby>(?:the\s+)?day\s+before\s+yesterday)|(?P<dat>(?:the\s+)?day\s+after\s+tomorrow)"
        r"|(?P<yd>yesterday)|(?P<td>today|earlier today)|(?P<tm>tomorrow)|(?P<tn>tonight|tonite)"
        r"|(?P<ln>last\s+night)|(?:this|earlier\s+this)\s+(?P<tp>morning|afternoon|evening))\b", _I),
    "day_before": re.compile(r"\bthe\s+day\s+before\b(?!\s+yesterday)", _I),
    "week": re.compile(
        r"\b(?:(?P<two_back>the\s+week\s+before\s+last)|(?P<two_fwd>the\s+week\s+after\s+next)"
        r"|(?:earlier\s+|later\s+)?(?P<p>last|this|next|the\s+previous|previous|the\s+coming|the\s+current|current)\s+week)\b(?!end)", _I),
    "weekend": re.compile(
        r"\b(?:(?P<wb>(?:over\s+)?the\s+weekend\s+before\s+last)|(?P<p>last|this|next|this\s+past|this\s+coming|the\s+previous|the|over\s+the|your|my|our)\s+weekend)\b", _I),
    "weekday": re.compile(
        r"\b(?:(?P<p>last|this|next|on|this\s+past|this\s+coming|the\s+previous)\s+)?(?P<wd>" + WD_ANY + r")(?!s\b)"
        r"(?:\s+(?:of\s+)?(?P<wk>last|this|next)\s+week)?\b", _I),
    "month_rel": re.compile(
        r"\b(?:(?P<two_back>the\s+month\s+before\s+last)|(?P<p>last|this|next|the\s+previous|previous|the\s+current)\s+month)\b", _I),
    "year_rel": re.compile(
        r"\b(?:(?P<two_back>the\s+year\s+before\s+last)|(?P<p>last|this|next|the\s+previous|previous)\s+year)\b", _I),
    "year": re.compile(r"\b(?P<pre>in|during|since|throughout|back\s+in|of)\s+(?P<y>(?:19|20|21)\d{2})\b(?![-/.]\d)", _I),
    "md": re.compile(
        r"\b(?P<m>" + MONTH + r")\.?\s+(?P<d>\d{1,2})" + ORD + r"?(?!\d|:|\s*(?:am|pm|a\.m|p\.m)\b)(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?\b", _I),
    "dm": re.compile(
        r"\b(?:the\s+)?(?P<d>\d{1,2})" + ORD + r"?\s+(?:of\s+)?(?P<m>" + MONTH + r")\b\.?(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?", _I),
    "md_range": re.compile(
        r"\b(?:(?P<pre>from|between)\s+)?(?P<m>" + MONTH + r")\.?\s+(?P<d1>\d{1,2})" + ORD + r"?\s*(?P<c>-|–|—|to|through|thru|until|till|and)\s*(?P<d2>\d{1,2})"
        + ORD + r"?\b(?!\s*(?:" + MONTH + r")\b|:)(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?", _I),
    "month_year": re.compile(r"\b(?P<m>" + MONTH + r")\.?,?\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2})\b", _I),
    "month": re.compile(
        r"\b(?:(?P<pre>in|during|since|of|last|this|next|early|late|mid|until|till|back\s+in|through|throughout|from|by|before|after|to)\s+(?:early\s+|late\s+|mid-?)?)?(?P<m>" + MONTH + r")\b(?!-)", _I),
    "iso": re.compile(r"(?<![\d/.-])(?P<y>(?:19|20|21)\d{2})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\d/.-]|:\d)"),
    "mdy": re.compile(r"(?<![\d/.-])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:/(?P<y>(?:19|20|21)?\d{2}))?(?![\d/])"),
    "ordinal": re.compile(r"\b(?P<on>on\s+)?(?:the\s+)?(?P<d>\d{1,2})" + ORD + r"\b(?!\s+(?:of\s+)?" + MONTH + r"\b)"
        r"(?!\s+(?:floor|time|times|place|row|grade|century|anniversary|attempt|try|round|person|one|street|avenue|birthday)\b)", _I),
    "festival": re.compile(
        r"\b(?:(?P<p>last|this|next|on)\s+)?(?P<f>" + _FEST_RX + r")(?:,?\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2}))?(?![\w'])", _I),
    "approx": re.compile(r"\b(?:sometime\s+|some\s*time\s+)?(?:around|approximately|roughly|circa)\b", _I),
    "part": re.compile(r"\b(?:in\s+the\s+|at\s+|during\s+the\s+)?(?P<p>morning|afternoon|evening|night|noon|midday)\b", _I),
    "clock": re.compile(
        r"\b(?:(?:at\s+)?(?P<pre1>at|around|about|approximately|roughly)\s+)?(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ap>a\.?m\.?|p\.?m\.?)(?!\w)"
        r"|\b(?:at\s+)?(?P<at>at|around|about|approximately|roughly)\s+(?P<h2>\d{1,2})(?::(?P<mi2>\d{2}))?(?:\s*o['’]?clock)?\b(?!\s*(?:%|percent|days?|weeks?|hours?|minutes?|people|of\b))"
        r"|\b(?P<h3>\d{1,2}):(?P<mi3>\d{2})\b", _I),
}

# "of"/"in" only glue a day-of-month or weekday to its month or week ("the 10th of last month").
_GAP = re.compile(r"\s*,?\s*(?:(?:of|in)\s+)?", _I)
_ENUM = re.compile(r"\s*(?:,|,?\s*and|,?\s*or)\s*", _I)
_APPROX_WORD = re.compile(r"around|about|approximately|roughly", _I)
_CONNECTOR = re.compile(r"\s*(?:-|–|—|to|through|thru|until|till|(?P<needs_prefix>and))\s*", _I)
_RANGE_PREFIX = re.compile(r"\b(?:from|between)\s+$", _I)


def _num(s: str | None, default: int = 1) -> int | None:
    if s is None:
        return default
    s = re.sub(r"\s+", " ", s.lower())
    return int(s) if s.isdigit() else _NUMS.get(s)


def _offset(p: str) -> int:
    p = re.sub(r"\s+", " ", p.lower())
    return {"last": -1, "previous": -1, "the previous": -1, "this": 0, "the current": 0, "current": 0,
            "next": 1, "the coming": 1}[p]


def atoms(text: str, now: datetime) -> list[Atom]:
    tz = now.tzinfo
    assert tz is not None
    today = now.date()
    out = Atoms()
    rng, day = out.range, out.day

    for m in _RX["rolling"].finditer(text):
        unit = m.group("u").lower().rstrip("s")
        n = _num(m.group("n"))
        if n is None or n == 0:
            continue
        # "last week" / "last month" are calendar periods; "the last week" and
        # "past week" are rolling windows.
        pre = m.group("pre").lower()
        if not m.group("n") and unit != "hour" and (pre == "previous" or (pre == "last" and not m.group("the"))):
            continue
        if unit == "day":
            rng(m, cal.rolling(now, timedelta(days=n)), "rolling")
        elif unit == "hour":
            rng(m, cal.rolling(now, timedelta(hours=n)), "rolling")
        elif unit == "week":
            rng(m, cal.rolling(now, timedelta(weeks=n)), "rolling")
        elif unit == "month":
            rng(m, cal.rolling_months(now, n), "rolling")
        else:
            rng(m, cal.rolling_months(now, 12 * n), "rolling")

    for m in _RX["recent"].finditer(text):
        rng(m, cal.rolling(now, timedelta(days=7)), "recent")

    for m in _RX["few_days"].finditer(text):
        rng(m, cal.days_range(tz, today - timedelta(days=7), today - timedelta(days=1)), "few_days_ago")

    for m in _RX["ago"].finditer(text):
        raw = m.group("n").lower()
        unit = m.group("u").lower().rstrip("s")
        n = _num(raw)
        if n is None:
            continue
        if unit == "day" and raw in ("few", "a few", "several"):
            rng(m, cal.days_range(tz, today - timedelta(days=7), today - timedelta(days=1)), "few_days_ago")
        elif unit == "day":
            day(m, today - timedelta(days=n), "ago")
        elif unit == "week":
            rng(m, cal.week_range(tz, today, -n), "ago", period="week")
        elif unit == "month":
            rng(m, cal.month_range(tz, *cal.shift_month(today.year, today.month, -n)), "ago", period="month")
        elif unit == "year":
            rng(m, cal.year_range(tz, today.year - n), "ago")
        else:
            # "N hours ago": a two-hour window around the moment.
            s, _ = cal.rolling(now, timedelta(hours=n + 1))
            e, _ = cal.rolling(now, timedelta(hours=max(n - 1, 0)))
            rng(m, (s, e), "ago")

    for m in _RX["later"].finditer(text):
        n = _num(m.group("n1") or m.group("n2"))
        unit = (m.group("u1") or m.group("u2")).lower().rstrip("s")
        if n is None:
            continue
        if unit == "day":
            day(m, today + timedelta(days=n), "later")
        else:
            rng(m, cal.week_range(tz, today, n), "later")

    for m in _RX["dayword"].finditer(text):
        g = m.lastgroup
        if g == "dby":
            day(m, today - timedelta(days=2), "day")
        elif g == "dat":
            day(m, today + timedelta(days=2), "day")
        elif g == "yd":
            day(m, today - timedelta(days=1), "day")
        elif g == "td":
            day(m, today, "day")
        elif g == "tm":
            day(m, today + timedelta(days=1), "day")
        elif g == "tn":
            day(m, today, "day", part="evening")
        elif g == "ln":
            day(m, today - timedelta(days=1), "day", part="evening")
        elif g == "tp":
            day(m, today, "day", part=_PARTS[m.group("tp").lower()])

    for m in _RX["week"].finditer(text):
        if m.group("two_back"):
            rng(m, cal.week_range(tz, today, -2), "week", period="week")
        elif m.group("two_fwd"):
            rng(m, cal.week_range(tz, today, 2), "week", period="week")
        else:
            rng(m, cal.week_range(tz, today, _offset(m.group("p"))), "week", period="week")

    for m in _RX["weekend"].finditer(text):
        p = re.sub(r"\s+", " ", (m.group("p") or "").lower())
        if m.group("wb"):
            rng(m, cal.weekend_of_week(tz, today, -2), "weekend")
        elif p in ("last", "the previous"):
            rng(m, cal.weekend_of_week(tz, today, -1), "weekend")
        elif p == "this":
            rng(m, cal.weekend_of_week(tz, today, 0), "weekend")
        elif p in ("next", "this coming"):
            rng(m, cal.weekend_of_week(tz, today, 1 if today.weekday() < 5 or p == "next" else 1), "weekend")
        else:
            rng(m, cal.recent_weekend(tz, today), "weekend", bare_weekday=5)

    for m in _RX["weekday"].finditer(text):
        word = m.group("wd").lower()
        p = re.sub(r"\s+", " ", (m.group("p") or "").lower())
        if word in _WEEKDAYS:
            wd = _WEEKDAYS[word]
        elif p:
            wd = _WD_ABBR[word]
        else:
            continue  # "sat", "sun", "wed" alone are ordinary words
        if m.group("wk"):
            day(m, cal.weekday_in_week(today, _offset(m.group("wk")), wd), "weekday")
        elif p in ("last", "the previous", "this past"):
            day(m, cal.weekday_before(today, wd), "weekday")
        elif p == "this":
            day(m, cal.weekday_in_week(today, 0, wd), "weekday")
        elif p == "next":
            day(m, cal.weekday_in_week(today, 1, wd), "weekday")
        elif p == "this coming":
            day(m, cal.weekday_after(today, wd), "weekday")
        else:
            day(m, cal.weekday_not_after(today, wd), "weekday", bare_weekday=wd)

    for m in _RX["month_rel"].finditer(text):
        off = -2 if m.group("two_back") else _offset(m.group("p"))
        rng(m, cal.month_range(tz, *cal.shift_month(today.year, today.month, off)), "month", period="month")

    for m in _RX["year_rel"].finditer(text):
        off = -2 if m.group("two_back") else _offset(m.group("p"))
        rng(m, cal.year_range(tz, today.year + off), "year")

    for m in _RX["year"].finditer(text):
        rng(m, cal.year_range(tz, int(m.group("y"))), "year", s=m.start("y"))

    for rx in ("md", "dm"):
        for m in _RX[rx].finditer(text):
            _date_atom(m, today, out)

    for m in _RX["md_range"].finditer(text):
        month = _MONTHS[m.group("m").lower()]
        d1, d2 = int(m.group("d1")), int(m.group("d2"))
        if m.group("c").lower() == "and" and not m.group("pre"):
            continue
        y = int(m.group("y")) if m.group("y") else None
        first = cal.valid_date(y, month, d1) if y else cal.recent_date(today, month, d1)
        if first is None or d2 < d1:
            continue
        last = cal.valid_date(first.year, month, d2)
        if last is not None:
            rng(m, cal.days_range(tz, first, last), "range")

    for m in _RX["month_year"].finditer(text):
        rng(m, cal.month_range(tz, int(m.group("y")), _MONTHS[m.group("m").lower()]), "month", period="month")

    for m in _RX["month"].finditer(text):
        _month_atom(m, text, today, out, tz)

    for m in _RX["iso"].finditer(text):
        d = cal.valid_date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
        if d is not None:
            day(m, d, "date")

    for m in _RX["mdy"].finditer(text):
        mo, dd = int(m.group("m")), int(m.group("d"))
        if m.group("y"):
            y = int(m.group("y"))
            y = y + 2000 if y < 100 else y
            d = cal.valid_date(y, mo, dd)
        else:
            d = cal.recent_date(today, mo, dd) if cal.valid_date(2000, mo, dd) else None
        if d is not None:
            day(m, d, "date", year_given=bool(m.group("y")), month=mo, dom=dd)

    for m in _RX["ordinal"].finditer(text):
        dd = int(m.group("d"))
        if 1 <= dd <= 31:
            # Alone only as "on the 3rd"; "the 3rd" / "3rd" need a month, a range or "around".
            out.append(Atom(m.start(), m.end(), "daynum", day=cal.recent_day_of_month(today, dd), dom=dd,
                            alone_ok=bool(m.group("on")), kind_name="day_of_month"))

    for m in _RX["festival"].finditer(text):
        key = _FESTIVALS[re.sub(r"\s+", " ", m.group("f").lower().replace("’", "'"))]
        p = (m.group("p") or "").lower()
        y = int(m.group("y")) if m.group("y") else (today.year if p == "this" else None)
        mode = {"last": "last", "next": "next"}.get(p, "recent")
        try:
            d = festival_date(key, today, year=y, mode=mode)
        except (ValueError, IndexError):
            continue
        day(m, d, "festival")

    for m in _RX["part"].finditer(text):
        out.append(Atom(m.start(), m.end(), "part", part=_PARTS[m.group("p").lower()], alone_ok=False,
                        kind_name="part"))

    for m in _RX["clock"].finditer(text):
        _clock_atom(m, out)

    for m in _RX["approx"].finditer(text):
        # Glued onto the following day / day-of-month / clock by compose; alone it is nothing.
        out.append(Atom(m.start(), m.end(), "approx", kind_name="approx"))

    out.extend(en_periods.atoms(text, now))
    _resolve_day_before(text, out)
    return out


def _date_atom(m: re.Match[str], today: date, out: list[Atom]) -> None:
    month, dd = _MONTHS[m.group("m").lower()], int(m.group("d"))
    y = int(m.group("y")) if m.group("y") else None
    d = cal.valid_date(y, month, dd) if y else cal.recent_date(today, month, dd)
    if d is not None:
        out.append(Atom(m.start(), m.end(), "day", day=d, kind_name="date", year_given=y is not None,
                        month=month, dom=dd))


def _month_atom(m: re.Match[str], text: str, today: date, out: list[Atom], tz: object) -> None:
    word = m.group("m")
    low = word.lower()
    pre = re.sub(r"\s+", " ", (m.group("pre") or "").lower())
    if not pre:
        if low in ("may", "march"):
            # Capitalised mid-sentence reads as the month; "I may go" / "March on" do not.
            before = text[: m.start()].rstrip()
            if not word[0].isupper() or not before or before[-1] in ".!?\n\"“":
                return
        elif low not in _SAFE_MONTHS:
            return
    month = _MONTHS[low]
    if pre == "last":
        year = today.year if month < today.month else today.year - 1
    elif pre == "this":
        year = today.year
    elif pre == "next":
        year = today.year if month > today.month else today.year + 1
    else:
        year = cal.recent_month(today, month)
    start, end = cal.month_range(tz, year, month)  # type: ignore[arg-type]
    s = m.start() if pre in ("last", "this", "next") else m.start("m")
    out.append(Atom(s, m.end(), "range", start=start, end=end, kind_name="month", period="month"))


def _clock_atom(m: re.Match[str], out: list[Atom]) -> None:
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


def _resolve_day_before(text: str, out: list[Atom]) -> None:
    """'yesterday and the day before': the day before the previous day mentioned."""
    for m in _RX["day_before"].finditer(text):
        prev = [a for a in out if a.kind == "day" and a.e <= m.start() and a.day is not None]
        if prev:
            anchor = max(prev, key=lambda a: a.e)
            assert anchor.day is not None
            out.append(Atom(m.start(), m.end(), "day", day=anchor.day - timedelta(days=1), kind_name="day"))


def parse(text: str, now: datetime) -> list[Hit]:
    assert now.tzinfo is not None
    return compose(atoms(text, now), text, now.tzinfo, now.date(), "en", _GAP, _CONNECTOR, _RANGE_PREFIX, _ENUM)
