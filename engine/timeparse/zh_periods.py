"""Chinese parts of a month, weeks of a month, "the same day in another period", fuzzy "ago".

Kept apart from ``zh.py`` (the core grammar) because these families lean on a month
reference the core already resolves on its own: 上个月初 / 十月中旬 / 月底,
十月第一周 / 上个月最后一周, 去年的今天 / 去年这个时候 / 一年前的今天, 半个月前 /
一个多月前 / 十多天前.  Their atoms are longer than the bare reference, so they
win the overlap in ``compose`` (and beat jionlp's 月初 = days 1–5 on the same span).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

from . import calendar as cal
from .atoms import Atoms, Ctx, Rule
from .zh_words import NUM, UNITS, YEAR, cn_int, period_offset, year_of

_MREF = r"(?:(?P<rel>上上|上|这|本|下下|下)一?个?月|(?:" + YEAR + r")?(?P<m>" + NUM + r")月份?)"
# 初 followed by a numeral is a lunar day (正月初一), not "early in the month".
_PART = r"(?P<part>上旬|中旬|下旬|初(?![一二三四五六七八九十])|中(?![午国心间学秋旬])|底(?![薪线层部下子气牌])|末)"
_PARTS = {"上旬": "early", "初": "early", "中旬": "mid", "中": "mid", "下旬": "late", "底": "late", "末": "late"}
_WEEK = r"(?:周|星期|礼拜)(?![一二三四五六日天1-7末])"
_EXACT = r"今天|这一天|这天|同一天"
_VAGUE = r"这个时候|这时候|这会儿|此时|同期|这个时间|这段时间|同一时间"

_RX = {
    # 这个月月初 / 上个月的月底: the month said twice.
    "month_part": re.compile(_MREF + r"的?(?:月(?=初|中|底|末))?" + _PART),
    # Bare 月初 / 月中 / 月底 / 中旬 mean this month; 岁月 / 个月 / 正月 / 腊月 are other words.
    "bare_part": re.compile(r"(?<![岁个正腊冬年])月(?P<part>初(?![一二三四五六七八九十])|中(?![午国心间学秋旬])|底|末)"
                           r"|(?<!月)(?P<xun>上旬|中旬|下旬)"),
    "month_week": re.compile(_MREF + r"的?(?:第(?P<n>[一二三四五1-5])个?|(?P<last>最后一个?|最后))" + _WEEK),
    "same_day": re.compile(
        r"(?:(?P<ref>大前年|前年|去年|上上个?月|上一?个?月|上上个?(?:周|星期|礼拜)|上一?个?(?:周|星期|礼拜))"
        r"|(?P<n>" + NUM + r")个?(?P<u>年|月|周|星期|礼拜)(?:之|以)?前)"
        r"的?(?:(?P<exact>" + _EXACT + r")|(?P<vague>" + _VAGUE + r"))"),
    "fuzzy_ago": re.compile(
        r"(?:(?P<half>半个月)|(?P<n>" + NUM + r")个?(?P<more>多|几|来)个?(?P<u>天|日|周|星期|礼拜|月|年))(?:之|以)?前"),
}

_REF = {"大前年": ("year", 3), "前年": ("year", 2), "去年": ("year", 1)}
# 去年这个时候 is vague: a window around the same date, wider for longer periods.
_VAGUE_SPREAD = {"year": 7, "month": 3, "week": 0}


def _month_of(m: re.Match[str], today: date) -> tuple[int, int] | None:
    if m.group("rel"):
        return cal.shift_month(today.year, today.month, period_offset(m.group("rel")))
    month = cn_int(m.group("m"))
    if month is None or not 1 <= month <= 12:
        return None
    year = year_of(m, today)
    return (year if year is not None else cal.recent_month(today, month)), month


def _ref_of(ref: str) -> tuple[str, int]:
    if ref in _REF:
        return _REF[ref]
    unit = "month" if "月" in ref else "week"
    return unit, 2 if ref.startswith("上上") else 1


def _month_part(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    ym = _month_of(m, c.today)
    if ym is not None:
        out.range(m, cal.month_part_range(c.tz, *ym, _PARTS[m.group("part")]), "month_part")


def _bare_part(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    part = _PARTS[m.group("part")[0] if m.group("part") else m.group("xun")]
    out.range(m, cal.month_part_range(c.tz, c.today.year, c.today.month, part), "month_part")


def _month_week(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    ym = _month_of(m, c.today)
    n = -1 if m.group("last") else cn_int(m.group("n"))
    if ym is not None and n is not None:
        out.range(m, cal.month_week_range(c.tz, *ym, n), "month_week")


def _same_day_rule(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    if m.group("ref"):
        unit, back = _ref_of(m.group("ref"))
    else:
        n = cn_int(m.group("n"))
        if n is None:
            return
        unit, back = UNITS[m.group("u")], n
    spread = _VAGUE_SPREAD[unit] if m.group("vague") else 0
    out.range(m, _same_day(c.tz, c.today, unit, back, spread), "same_day")


def _fuzzy_ago_rule(m: re.Match[str], c: Ctx, out: Atoms) -> None:
    out.range(m, _fuzzy_ago(m, c.tz, c.today), "ago")


RULES: list[Rule] = [
    (_RX["month_part"], _month_part),
    (_RX["bare_part"], _bare_part),
    (_RX["month_week"], _month_week),
    (_RX["same_day"], _same_day_rule),
    (_RX["fuzzy_ago"], _fuzzy_ago_rule),
]


def _same_day(tz: tzinfo, today: date, unit: str, back: int, spread: int) -> tuple[datetime, datetime]:
    if unit == "year":
        d = cal.same_day_shifted(today, years=-back)
    elif unit == "month":
        d = cal.same_day_shifted(today, months=-back)
    else:
        d = today - timedelta(weeks=back)
    return cal.days_range(tz, d - timedelta(days=spread), d + timedelta(days=spread))


def _fuzzy_ago(m: re.Match[str], tz: tzinfo, today: date) -> tuple[datetime, datetime] | None:
    """半个月前 = the 7 days around today−15; N多<unit>前 = more than N and less than N+1 units
    back, both ends open as in 十多天 = 11–19 days (exactly one month back is 一个月前); 十几天 is
    十多天; 十来天 / 二十来天 (about ten, twenty) are the 7 days around today−N, as 左右 widens a day."""
    if m.group("half"):
        return cal.days_range(tz, today - timedelta(days=18), today - timedelta(days=12))
    n = cn_int(m.group("n"))
    if n is None or n == 0:
        return None
    unit, more = m.group("u"), m.group("more")
    tens = n % 10 == 0
    if more == "来":  # about ten / twenty days; 三来个月 is not said
        if unit not in ("天", "日") or not tens:
            return None
        return cal.days_range(tz, today - timedelta(days=n + 3), today - timedelta(days=n - 3))
    if more == "几" and not tens:
        return None  # 两几天 is not said
    if tens:
        # 十多天 / 十几年 / 二十多个月: after a ten, 多 and 几 are "and some": n+1 … n+9 units back.
        return cal.units_back(tz, today, UNITS[unit], n + 1, n + 9)
    if unit in ("天", "日"):
        return None  # 两天多 is not written this way
    if unit in ("周", "星期", "礼拜"):
        lo, hi = today - timedelta(weeks=n + 1), today - timedelta(weeks=n)
    elif unit == "月":
        lo, hi = cal.same_day_shifted(today, months=-(n + 1)), cal.same_day_shifted(today, months=-n)
    else:
        lo, hi = cal.same_day_shifted(today, years=-(n + 1)), cal.same_day_shifted(today, years=-n)
    return cal.days_range(tz, lo + timedelta(days=1), hi - timedelta(days=1))
