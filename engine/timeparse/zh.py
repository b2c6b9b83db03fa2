"""Chinese rule grammar.

The product conventions (ISO weeks, 18–05 nights, Sat–Mon weekends, "most
recent not after today" for dates without a year, rolling windows in absolute
time) differ from jionlp's defaults in many places, so every family the
conventions name is handled here; jionlp is only a fallback for the long tail
(see ``jionlp_fallback.py``).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from . import calendar as cal
from . import zh_periods
from .atoms import Atom, Atoms, Ctx, Rule, run_rules
from .calendar import Hit
from .compose import Since, compose
from .festivals import LunarDay, festival_date
from .zh_patterns import RX as _RX
from .zh_words import DAY_WORDS as _DAY_WORDS
from .zh_words import FESTIVALS as _FESTIVALS
from .zh_words import GOING_OVER as _GOING_OVER
from .zh_words import HOLIDAY_WEEKS as _HOLIDAY_WEEKS
from .zh_words import PART_AFTER_DAY as _PART_AFTER_DAY
from .zh_words import PART_WORDS as _PART_WORDS
from .zh_words import UNITS, cn_int
from .zh_words import WEEKDAY as _WEEKDAY
from .zh_words import period_offset as _week_offset
from .zh_words import year_of as _year_of

# 5月3号那天晚上: 那天 / 当天 may stand between a day and what follows it.
_GAP = re.compile(r"(?:的|那天|当天|那日|这天)?\s*")
_CONNECTOR = re.compile(r"\s*(?:到|至|~|～|-|—|–|－|一直到)\s*")
_RANGE_PREFIX = re.compile(r"从\s*$")
_ENUM = re.compile(r"\s*(?:和|跟|与|及|、|或者|或|还是|，|,)\s*")


def _rolling(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    pre, unit, raw = m.group("pre"), m.group("u"), m.group("n")
    if raw == "半":  # 近半个月, 这半年: half a month is 15 days, half a year six months
        if unit == "月":
            out.range(m, cal.rolling(c.now, timedelta(days=15)), "rolling")
        elif unit == "年":
            out.range(m, cal.rolling_months(c.now, 6), "rolling")
        return
    n = cn_int(raw) if raw != "几" else (3 if pre == "这" else 7)
    if n is None or n == 0:
        return
    if pre == "这" and (unit not in ("天", "日") or raw == "两"):
        return  # 这两天 is the idiom "these days" (rolling_vague), not literally 2
    if pre == "最近" and _near_not_recent(c.text, m.start()):
        return
    # 这几天 / 最近几个月 count as vaguely as 最近: they give way to a day the message names
    kind = "recent" if raw == "几" else "rolling"
    if unit in ("天", "日"):
        out.range(m, cal.rolling(c.now, timedelta(days=n)), kind)
    elif unit in ("小时", "钟头"):
        out.range(m, cal.rolling(c.now, timedelta(hours=n)), kind)
    elif unit in ("周", "星期", "礼拜"):
        out.range(m, cal.rolling(c.now, timedelta(weeks=n)), kind)
    elif unit == "月":
        out.range(m, cal.rolling_months(c.now, n), kind)
    else:
        out.range(m, cal.rolling_months(c.now, 12 * n), kind)


def _rolling_vague(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    w, today = m.group(), c.today
    if w == "最近" and _near_not_recent(c.text, m.start()):
        return
    if w in ("前几天", "前些天"):
        out.range(m, cal.days_range(c.tz, today - timedelta(days=7), today - timedelta(days=1)), "few_days_ago")
    elif w == "前两天":
        # "a couple of days ago": the three calendar days before today.
        out.range(m, cal.couple_ago(c.tz, today, "day"), "few_days_ago")
    elif w == "这两天":
        out.range(m, cal.calendar_days_back(c.now, 2), "recent")
    elif w in ("前些日子", "前阵子", "前段时间"):
        out.range(m, cal.rolling(c.now, timedelta(days=30)), "recent")
    else:
        out.range(m, cal.rolling(c.now, timedelta(days=7)), "recent")


def _ago(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    raw, unit, sign = m.group("n").replace("俩", "两").replace("仨", "三"), m.group("u"), (-1 if m.group("dir") == "前" else 1)
    today = c.today
    if raw == "几":
        if unit in ("天", "日") and sign < 0:
            out.range(m, cal.days_range(c.tz, today - timedelta(days=7), today - timedelta(days=1)), "few_days_ago")
        elif sign < 0 and unit in UNITS:
            out.range(m, cal.few_ago(c.tz, today, UNITS[unit]), "ago")
        return
    if unit in ("小时", "钟头"):
        n = 0 if raw == "半" else (cn_int(raw) if raw != "几" else None)
        if n is not None and sign < 0:
            out.range(m, cal.hours_ago(c.now, n), "ago")  # as "2 hours ago"
        return
    if raw == "半":
        if unit == "年":
            out.range(m, cal.month_range(c.tz, *cal.shift_month(today.year, today.month, 6 * sign)), "ago")
        return
    n = cn_int(raw)
    if n is None:
        return
    if unit in ("天", "日"):
        out.day(m, today + timedelta(days=sign * n), "ago")
    elif unit in ("周", "星期", "礼拜"):
        out.range(m, cal.week_range(c.tz, today, sign * n), "ago", period="week")
    elif unit == "月":
        out.range(m, cal.month_range(c.tz, *cal.shift_month(today.year, today.month, sign * n)), "ago", period="month")
    else:
        out.range(m, cal.year_range(c.tz, today.year + sign * n), "ago")


# 前晚 (the night before last) starts a phrase: after these, not after a word ending in 前 (以前晚上,
# 睡前晚, 三天前晚上).
_BEFORE_NIGHT_BEFORE_LAST = set("我你他她们咱的在是就那这说和跟了也都，。！？、,.!? \n")


def _few_back(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.few_ago(c.tz, c.today, UNITS[m.group("u")]), "ago")


def _dayword(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    if m.group() == "后天" and c.text[max(0, m.start() - 1) : m.start()] in ("以", "之", "然", "最"):
        return  # 以后天天… is "from now on", not the day after tomorrow
    if m.group() == "前晚" and m.start() > 0 and c.text[m.start() - 1] not in _BEFORE_NIGHT_BEFORE_LAST:
        return
    if m.group() == "前儿" and (c.text[max(0, m.start() - 1) : m.start()] in tuple("跟眼面门身以从之提目")
                               or c.text[m.end() : m.end() + 1] in tuple("子媳女时科童歌")):
        return  # 跟前儿 (near), 以前儿时, 前儿媳, 儿科: not the day before yesterday
    offset, part = _DAY_WORDS[m.group()]
    out.day(m, c.today + timedelta(days=offset), "day", part=part)


def _week(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    if m.group("p") == "下" and m.group("wd") and c.text.endswith(_GOING_OVER, 0, m.start()):
        return  # 回忆下周五: the bare weekday's rule reads 周五
    off = _week_offset(m.group("p"))
    if m.group("we"):
        out.range(m, cal.weekend_of_week(c.tz, c.today, off), "weekend")
    elif m.group("wd"):
        out.day(m, cal.weekday_in_week(c.today, off, _WEEKDAY[m.group("wd")]), "weekday")
    else:
        out.range(m, cal.week_range(c.tz, c.today, off), "week", period="week")


def _bare_weekday(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    wd = _WEEKDAY[m.group("wd")]
    out.day(m, cal.weekday_not_after(c.today, wd), "weekday", bare_weekday=wd)


def _bare_weekend(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, cal.recent_weekend(c.tz, c.today), "weekend", bare_weekday=5)


def _month_rel(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    off = _week_offset(m.group("p") or m.group("p2"))
    ym = cal.shift_month(c.today.year, c.today.month, off)
    out.range(m, cal.month_range(c.tz, *ym), "month", period="month")


def _md_sep(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    month, dom = int(m.group("m") or m.group("m2")), int(m.group("d") or m.group("d2"))
    d = cal.recent_date(c.today, month, dom)
    if d is not None:
        out.day(m, d, "date", year_given=False, month=month, dom=dom)


def _date(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    month = cn_int(m.group("m"))
    if month is None or not 1 <= month <= 12:
        return
    year = _year_of(m, c.today)
    raw_day = m.group("d") or m.group("bare")
    if not raw_day:
        if year is None:
            year = cal.recent_month(c.today, month)
        out.range(m, cal.month_range(c.tz, year, month), "month", period="month")
        return
    dom = cn_int(raw_day)
    if dom is None:
        return
    d = cal.valid_date(year, month, dom) if year is not None else cal.recent_date(c.today, month, dom)
    if d is not None:
        out.day(m, d, "date", year_given=year is not None, month=month, dom=dom)


def _year(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    year = _year_of(m, c.today)
    if year is not None and 1900 <= year <= 2200:
        out.range(m, cal.year_range(c.tz, year), "year")


def _festival(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = m.group("f")
    if word in ("元宵",) and c.text[max(0, m.start() - 1) : m.start()] == "吃":
        return
    key = _FESTIVALS[word]
    try:
        d = festival_date(key, c.today, year=_year_of(m, c.today))
    except (ValueError, IndexError):
        return
    hol = m.group("hol")
    if hol and key in _HOLIDAY_WEEKS:
        out.range(m, _holiday(c, key, d), "holiday")
    elif hol:
        # Other festivals' breaks vary by year; the festival day is the anchor.
        out.range(m, cal.day_range(c.tz, d), "festival")
    else:
        out.day(m, d, "festival")


def _holiday(c: Ctx, key: str, festival: date) -> tuple[datetime, datetime]:
    """The statutory break of a festival (`_HOLIDAY_WEEKS`) as a range."""
    first, length = _HOLIDAY_WEEKS[key]
    d = festival + timedelta(days=first)
    return cal.days_range(c.tz, d, d + timedelta(days=length - 1))


def _guonian(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    try:
        d = festival_date("spring_festival", c.today, year=_year_of(m, c.today))
    except (ValueError, IndexError):
        return
    out.range(m, _holiday(c, "spring_festival", d), "holiday")


_LUNAR_MONTHS = {"正月": 1, "大年": 1, "冬月": 11, "腊月": 12}


def _lunar_day(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    if m.group(0) in _FESTIVALS:
        return  # 正月十五, 腊月三十 ...: the festival's own rule (腊月三十 is the eve even in a 29-day 腊月)
    raw = m.group("ld")
    day = cn_int(raw[1:]) if raw.startswith("初") else cn_int(raw)
    if day is None or not 1 <= day <= 30:
        return
    try:
        d = festival_date(LunarDay(_LUNAR_MONTHS[m.group("lm")], day), c.today, year=_year_of(m, c.today))
    except (ValueError, IndexError, KeyError, TypeError):
        return  # a day the lunar month does not have (a 29-day 腊月's 三十)
    out.day(m, d, "festival")


def _daynum(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    dom = cn_int(m.group("d"))
    if dom is None or not 1 <= dom <= 31:
        return
    # 3日 alone reads as "three days" too often; only 号 and digit+日 stand alone.
    alone = m.group("suf") == "号" or m.group("d").isdigit()
    out.append(Atom(m.start(), m.end(), "daynum", day=cal.recent_day_of_month(c.today, dom),
                    dom=dom, alone_ok=alone, kind_name="day_of_month"))


def _edge(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.edge(m, first=m.group("w") in ("第一天", "头一天"))


def _part(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    word = m.group()
    alone = word in _PART_WORDS  # 晚 / 一早 only with a day before them (`_PART_AFTER_DAY`)
    part = _PART_WORDS[word] if alone else _PART_AFTER_DAY[word]
    out.append(Atom(m.start(), m.end(), "part", part=part, alone_ok=alone, kind_name="part"))


def _approx(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    # Only meaningful glued after a day or clock (春节前后, 10号左右, 三点左右); alone it resolves to nothing.
    out.append(Atom(m.start(), m.end(), "approx", kind_name="approx"))


def _clock(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    if m.group("hh"):
        h, ok = int(m.group("hh")), int(m.group("mm")) < 60
    else:
        h_ = cn_int(m.group("h"))
        h, ok = (h_ or 0), h_ is not None
    if ok and 0 <= h <= 24:
        # A bare "三点" is as often "three points" as 3 o'clock: only with a day/part.
        out.append(Atom(m.start(), m.end(), "clock", hour=h % 24, alone_ok=False, kind_name="clock"))


RULES: list[Rule] = [
    (_RX["rolling"], _rolling),
    (_RX["rolling_vague"], _rolling_vague),
    (_RX["few_back"], _few_back),
    (_RX["ago"], _ago),
    (_RX["dayword"], _dayword),
    (_RX["week"], _week),
    (_RX["bare_weekday"], _bare_weekday),
    (_RX["bare_weekend"], _bare_weekend),
    (_RX["month_rel"], _month_rel),
    (_RX["date"], _date),
    (_RX["md_sep"], _md_sep),
    (_RX["year"], _year),
    (_RX["festival"], _festival),
    (_RX["guonian"], _guonian),
    (_RX["edge"], _edge),
    (_RX["lunar_day"], _lunar_day),
    (_RX["daynum"], _daynum),
    (_RX["part"], _part),
    (_RX["part_after_day"], _part),
    (_RX["approx"], _approx),
    (_RX["clock"], _clock),
    *zh_periods.RULES,
]


def atoms(text: str, now: datetime) -> list[Atom]:
    return run_rules(RULES, text, now)


def _near_not_recent(text: str, pos: int) -> bool:
    # 离我家最近的 = "nearest", not "recently".
    return "离" in text[max(0, pos - 8) : pos] or "距" in text[max(0, pos - 8) : pos]


# After a day: 国庆节前一天 (the day before), 5月4号的后两天 (the two days after), 除夕之前三天.
_SHIFT = re.compile(r"的?(?:之|以)?(?P<dir>前|后)(?:(?P<n>\d{1,2}|[一二两三四五六七八九十]{1,3})天|(?P<week>一个?(?:周|星期|礼拜)))")


def _shift(text: str, atom: Atom) -> tuple[int, int, int, int] | None:
    """前N天 after a day is the N days before it, 后N天 the N days after (N = 1: the day before /
    after); without a day in front, 前两天 is the rolling "past couple of days" (`_rolling_vague`)."""
    m = _SHIFT.match(text, atom.e)
    if m is not None and m.group("week"):  # 国庆节前一周: the seven days before it
        return atom.s, m.end(), *((-7, -1) if m.group("dir") == "前" else (1, 7))
    n = cn_int(m.group("n")) if m and m.group("n") else None
    if m is None or not n or n > 31:
        return None
    first, last = (-n, -1) if m.group("dir") == "前" else (1, n)
    return atom.s, m.end(), first, last


# 自从上周三, 上周以来, 从周一到现在, 五一至今: to now (从 alone is only "from": 从周一到周三).
_SINCE = Since(re.compile(r"自从|(?<!来)自(?=[上这本去前昨今\d一二三四五六七八九十])"),
               re.compile(r"(?:以来|开始到现在|到现在|至今|到今天为止|到目前为止)"))


def parse(text: str, now: datetime) -> list[Hit]:
    assert now.tzinfo is not None
    return compose(atoms(text, now), text, now.tzinfo, now.date(), "zh", _GAP, _CONNECTOR, _RANGE_PREFIX, _ENUM,
                   shift=_shift, since=_SINCE)