"""Chinese numerals, year prefixes and period offsets shared by ``zh.py`` and ``zh_periods.py``."""

from __future__ import annotations

import re
from datetime import date

DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}

NUM = r"(?:\d{1,2}|[廿卅][一二三四五六七八九]?|[零〇一二两三四五六七八九十]{1,3})"


def cn_int(s: str) -> int | None:
    """Digits or Chinese numerals up to 99 (十二, 二十三, 两, 廿八)."""
    if s.isdigit():
        return int(s)
    if s in ("几",):
        return None
    if s[:1] in ("廿", "卅"):  # 廿八 = 28, 卅一 = 31: common in written dates
        ones = DIGITS.get(s[1:], -1) if s[1:] else 0
        return None if ones < 0 else (20 if s[0] == "廿" else 30) + ones
    if "十" in s:
        left, _, right = s.partition("十")
        tens = DIGITS.get(left, -1) if left else 1
        ones = DIGITS.get(right, -1) if right else 0
        if tens < 0 or ones < 0 or "十" in right:
            return None
        return tens * 10 + ones
    if len(s) == 1:
        return DIGITS.get(s)
    return None


def cn_year(s: str) -> int | None:
    if s.isdigit():
        return int(s)
    if len(s) == 4 and all(c in DIGITS and c not in "两十" for c in s):
        return int("".join(str(DIGITS[c]) for c in s))
    return None


REL_YEAR = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
YEAR = r"(?:(?P<y>\d{4}|[〇零一二三四五六七八九]{4})年|(?P<yr>大前年|前年|去年|今年|明年|后年))的?"


def year_of(m: re.Match[str], today: date) -> int | None:
    if m.groupdict().get("y"):
        return cn_year(m.group("y"))
    if m.groupdict().get("yr"):
        return today.year + REL_YEAR[m.group("yr")]
    return None


def period_offset(p: str) -> int:
    return {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}[p]


UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year"}
"""Calendar units as the shared calendar helpers name them."""
