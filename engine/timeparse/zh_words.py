"""Chinese vocabulary shared by the grammar (``zh.py``, ``zh_patterns.py``, ``zh_periods.py``)."""

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

GOING_OVER = ("回忆", "回想", "回顾", "复述", "复盘", "总结")
"""Verbs of going over the past: after them 下 is 一下 ("回忆下周五我们聊了什么", "总结下周三聊的"), so 下周五
is a bare 周五; nobody recalls next Friday."""

WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6,
           "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}

DAY_WORDS = {
    "大前天": (-3, None), "前天": (-2, None), "昨天": (-1, None), "昨日": (-1, None),
    "前儿个": (-2, None), "前儿": (-2, None), "昨儿个": (-1, None), "昨儿": (-1, None), "昨个": (-1, None),
    "今天": (0, None), "今日": (0, None), "今儿个": (0, None), "今儿": (0, None),
    "明天": (1, None), "明日": (1, None), "明儿": (1, None), "后天": (2, None), "大后天": (3, None),
    "今早": (0, "morning"), "今晨": (0, "morning"), "今晚": (0, "night"), "今夜": (0, "night"),
    "昨晚": (-1, "night"), "昨夜": (-1, "night"), "昨早": (-1, "morning"), "前晚": (-2, "night"),
    "明早": (1, "morning"), "明晚": (1, "night"),
}

# 晚上 and 夜里 are one night, 18:00 to 05:00 (昨晚两点才睡 is 02:00 today); 清晨 is dawn only.
PART_WORDS = {
    "凌晨": "early", "清晨": "dawn", "早上": "morning", "早晨": "morning", "上午": "morning",
    "中午": "noon", "正午": "noon", "下午": "afternoon", "午后": "afternoon",
    "傍晚": "dusk", "黄昏": "dusk", "晚上": "night", "夜里": "night", "夜晚": "night", "晚间": "night",
    "夜间": "night", "半夜": "night", "深夜": "night",
}
# Said only right after a day (昨儿晚, 周日晚, 昨天一早); alone 晚 is "late" (太晚了) and 一早 "all
# along" (我一早就知道).
PART_AFTER_DAY = {"晚": "night", "一早": "morning", "一大早": "morning"}

FESTIVALS = {
    "五一劳动节": "labour_day", "五一节": "labour_day", "劳动节": "labour_day", "五一": "labour_day",
    "国庆节": "national_day", "国庆": "national_day", "元旦节": "new_year", "元旦": "new_year",
    "圣诞节": "christmas", "圣诞": "christmas", "平安夜": "christmas_eve", "情人节": "valentine",
    "万圣节": "halloween", "春节": "spring_festival", "大年初一": "spring_festival",
    "正月初一": "spring_festival", "正月十五": "lantern", "腊月初八": "laba", "腊月三十": "chuxi",
    "除夕夜": "chuxi", "除夕": "chuxi", "大年三十": "chuxi", "年三十": "chuxi",
    "元宵节": "lantern", "元宵": "lantern", "端午节": "dragon_boat", "端午": "dragon_boat",
    "中秋节": "mid_autumn", "中秋": "mid_autumn", "七夕节": "qixi", "七夕": "qixi",
    "重阳节": "double_ninth", "重阳": "double_ninth", "腊八节": "laba", "腊八": "laba",
    "清明节": "qingming", "清明": "qingming", "母亲节": "mothers_day", "父亲节": "fathers_day",
    "感恩节": "thanksgiving", "教师节": "teachers_day", "六一儿童节": "childrens_day",
    "儿童节": "childrens_day", "三八妇女节": "womens_day", "妇女节": "womens_day",
    "愚人节": "april_fools", "跨年夜": "new_years_eve", "复活节": "easter",
    "双十一": "singles_day", "双11": "singles_day", "光棍节": "singles_day", "双十二": "double_twelve", "双12": "double_twelve",
}
# Holiday weeks (the statutory break), as opposed to the festival day itself.
# (first day relative to the festival, length in days).  春节: 除夕 to 初七, the
# traditional week that the statutory break (which shifts year to year) overlaps.
HOLIDAY_WEEKS = {"national_day": (0, 7), "labour_day": (0, 5), "spring_festival": (-1, 8)}
