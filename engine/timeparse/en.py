"""English rule grammar (regexes + calendar arithmetic, no dateparser).

Words that double as ordinary English ("may", "march", "sat", "sun", "wed",
"second", "we") only count when the context makes them a date: a day number,
a year, or a preposition/modifier in front.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta

from . import calendar as cal
from . import en_periods, en_spelling
from .calendar import Hit
from .compose import Atom, Atoms, Ctx, Rule, Since, compose, run_rules
from .en_words import (
    COUPLE as _COUPLE,
    FEW as _FEW,
    FEST_RX as _FEST_RX,
    FESTIVALS as _FESTIVALS,
    MONTH,
    MONTHS as _MONTHS,
    NUMS as _NUMS,
    NUMW,
    ORD,
    ORD_WORDS as _ORD_WORDS,
    ORDW,
    PARTS as _PARTS,
    SAFE_MONTHS as _SAFE_MONTHS,
    WD_ABBR as _WD_ABBR,
    WD_ALONE as _WD_ALONE,
    WD_ANY,
    WEEKDAYS as _WEEKDAYS,
)
from .festivals import festival_date

_I = re.IGNORECASE
_RX = {
    "rolling": re.compile(
        r"\b(?:(?:in|over|during|for|within)\s+)?(?P<the>the\s+)?(?P<pre>past|last|previous|recent)\s+"
        r"(?:(?P<n>" + NUMW + r")\s+)?(?P<u>days?|hours?|weeks?|fortnights?|months?|years?)\b", _I),
    "recent": re.compile(r"\b(?:recently|lately|as of late|of late)\b", _I),
    "ago": re.compile(r"\b(?P<n>" + NUMW + r")\s+(?P<u>days?|nights?|weeks?|fortnights?|months?|years?|hours?|minutes?|mins?)\s+(?:ago|back|before now)\b", _I),
    "later": re.compile(r"\b(?:in\s+(?P<n1>" + NUMW + r")\s+(?P<u1>days?|weeks?)|(?P<n2>" + NUMW
                        + r")\s+(?P<u2>days?|weeks?)\s+from\s+(?:now|today))\b", _I),
    "few_days": re.compile(r"\b(?:the other (?:day|night|nite|evening|morning|afternoon)|a few days ago|several days ago)\b", _I),
    "dayword": re.compile(
        r"\b(?:(?P<dby>(?:the\s+)?day\s+before\s+yesterday)|(?P<dat>(?:the\s+)?day\s+after\s+tomorrow)"
        r"|(?P<yd>yesterday|y['’]?day|yest)|(?P<td>today|earlier today)|(?P<tm>tomorrow)|(?P<tn>tonight|tonite)"
        r"|(?<!the )(?:(?P<ln>last\s+(?:night|nite))|(?P<le>last\s+evening))|(?:this|earlier\s+this)\s+(?P<tp>morning|afternoon|evening))\b", _I),
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
    # "the first of May", "the twenty-first of last month": a written-out day only before "of" and a
    # month ("the first of all", "the second time" are no dates).
    "ordword": re.compile(
        r"\b(?P<on>on\s+)?the\s+(?P<d>" + ORDW + r")(?=\s+of\s+(?:" + MONTH
        + r"\b|(?:last|this|next|the\s+previous|previous)\s+month\b))", _I),
    # Only beside a month, week or year after it ("the last day of last month"); it wins over
    # "last day" (the past day) by being longer.
    "edge": re.compile(r"\b(?:on\s+)?the\s+(?P<w>first|last|final)\s+day\s+of\b", _I),
    "festival": re.compile(
        r"\b(?:(?P<p>last|this|next|on)\s+)?(?P<f>" + _FEST_RX + r")(?:,?\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2}))?(?![\w'])", _I),
    "approx": re.compile(r"\b(?:sometime\s+|some\s*time\s+)?(?:around|approximately|roughly|circa)\b", _I),
    "part": re.compile(r"\b(?:in\s+the\s+|at\s+|during\s+the\s+)?(?P<p>morning|afternoon|evening|night|nite|noon|midday)\b", _I),
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
    if unit == "day" and re.sub(r"\s+", " ", m.group("n") or "").lower() in _COUPLE:
        out.range(m, cal.calendar_days_back(c.now, 2), "rolling")  # the same rule as 这两天
    elif unit in ("month", "year"):
        out.range(m, cal.rolling_months(c.now, n * (12 if unit == "year" else 1)), "rolling")
    else:
        out.range(m, cal.rolling(c.now, timedelta(**{unit + "s": n})), "rolling")


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


def _festival_word(word: str) -> str:
    """A festival as written, in the form `FESTIVALS` lists it (lower case, one space, straight quote)."""
    return re.sub(r"\s+", " ", word.lower().replace("’", "'"))


def _festival_key(word: str) -> str:
    return _FESTIVALS[_festival_word(word)]


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
