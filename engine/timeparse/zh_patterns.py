"""The Chinese grammar's regex table: one pattern per expression family, for ``zh.py``.

Kept apart from the handlers because it is data: what text each family matches, not what it means.
"""

from __future__ import annotations

import re

from .zh_words import DAY_WORDS as _DAY_WORDS
from .zh_words import FESTIVALS as _FESTIVALS
from .zh_words import NUM
from .zh_words import PART_WORDS as _PART_WORDS
from .zh_words import YEAR as _YEAR


def _alt(words: dict[str, object] | list[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_DAY_NUM_STOP = r"(?![线楼房门车床位桌机口馆厅窗柜选球病院台码元块店厂站字键牌池舱])"
_WD_STOP = r"(?![天次个遍回位本件场顿直起样些般共切定同块边阵度])"
_WEEK_STOP = r"(?![围边到全期年岁刊报转长密旋折游])"

RX = {
    "rolling": re.compile(
        r"(?P<pre>最近|近|过去的?|这)(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3}|几|半)个?"
        r"(?P<u>天|日|小时|钟头|周|星期|礼拜|月|年)"
    ),
    "rolling_vague": re.compile(r"最近这段时间|最近一段时间|这段时间|这阵子|近来|近期|最近|前几天|前些天|前些日子|前阵子|前段时间|这两天|(?<![\d一二三四五六七八九十])前两天"),
    # 前几周 / 前几个月 / 前几年, "a few weeks / months / years ago" (前几天 is rolling_vague's).
    "few_back": re.compile(r"(?<![提目以之从眼面])前几个?(?P<u>周|星期|礼拜|月|年)(?!前|后|以|之)"),
    "ago": re.compile(
        r"(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3}|几|半|俩|仨)个?(?P<u>天|日|小时|钟头|周|星期|礼拜|月|年)(?:之|以)?(?P<dir>前|后)"
    ),
    "dayword": re.compile(_alt(_DAY_WORDS)),
    "week": re.compile(
        r"(?<![一以])(?P<p>上上|上|这|本|下下|下)一?个?(?:周|星期|礼拜|週)" + _WEEK_STOP
        + r"(?:(?P<we>末)|(?P<wd>[一二三四五六日天1-7])" + _WD_STOP + r")?"
    ),
    "bare_weekday": re.compile(r"(?<!每)(?:周|星期|礼拜|週)(?P<wd>[一二三四五六日天1-7])" + _WD_STOP),
    "bare_weekend": re.compile(r"(?<!每)周末"),
    "month_rel": re.compile(r"(?P<p>上上|上|这|本|下下|下)(?:一?个)月|(?P<p2>上上|上|这|本|下下|下)月(?![亮光球饼色经])"),
    # 5月6号, and in chat 5月6 without 号 when a day word, a part of day, a pronoun, a verb of
    # going or punctuation follows (5月6那天, 4月30我问你的): 5月6个 / 5月6次 stay the month.
    "date": re.compile(
        r"(?:" + _YEAR + r")?(?P<m>" + NUM + r")月(?!天)(?:(?P<d>" + NUM + r")[日号]" + _DAY_NUM_STOP
        + r"|(?P<bare>" + NUM + r")(?=那|当天|这天|早|晚|上午|中午|下午|傍晚|夜|凌晨|半夜|[我你他她咱在的去和到至跟给买吃看玩做见过，。！？、,!?\s~～—]|\.(?!\d)|$)"
        + r"|份)?"
    ),
    "year": re.compile(
        r"(?:(?P<y>\d{4}|[〇零一二三四五六七八九]{4})年(?!代|级|纪|前|后|龄|薪)|(?<![以之最然])(?P<yr>大前年|前年|去年|今年|明年|后年))"
    ),
    # 4.28 / 4-28 as a date only when a day word follows (4.28那天, 4.28号, 4-28晚上): alone it is as
    # often a price, a version or a score (4.28元, 版本4.28).
    "md_sep": re.compile(
        r"(?<![\d.\-/])(?P<m>1[0-2]|0?[1-9])[.\-](?P<d>3[01]|[12]\d|0?[1-9])[号日]"
        r"|(?<![\d.\-/])(?P<m2>1[0-2]|0?[1-9])[.\-](?P<d2>3[01]|[12]\d|0?[1-9])"
        r"(?=那天|当天|那日|这天|那晚|晚上|早上|早晨|上午|中午|下午|傍晚|夜里|凌晨|半夜)"
    ),
    "festival": re.compile(r"(?:" + _YEAR + r")?(?P<f>" + _alt(_FESTIVALS) + r")(?P<hol>假期|长假|黄金周|小长假|期间|那几天|放假|七天)?"),
    # 过年 is the Spring Festival break when said as a time (过年的时候, 过年那几天, 去年过年); alone it
    # is also a greeting or a verb (过年好, 要过年了, 过年回家吗: a plan, usually the coming one).
    "guonian": re.compile(r"(?:(?:" + _YEAR + r")过年|过年(?=的时候|时候|时|那几天|那阵子|那会儿|期间|假期|放假))"),
    # A day of the unmistakably lunar months (正月初五, 大年初三, 腊月二十三, 冬月十五); 二月 ... 十一月 are
    # Gregorian months in everyday speech.
    "lunar_day": re.compile(
        r"(?:" + _YEAR + r")?(?P<lm>正月|大年|冬月|腊月)(?P<ld>初[一二三四五六七八九十]|廿[一二三四五六七八九]?|"
        r"二十[一二三四五六七八九]?|十[一二三四五六七八九]?|三十)"
    ),
    # 月 may precede (上个月10号); a numeral may not (二十三号 is one number, 第10号 an ordinal).
    # A Chinese numeral after another is part of a bigger number (十四号 is not 四号); digits after
    # one are not (周四30号).
    "daynum": re.compile(r"(?P<d>(?<![\d第])\d{1,2}|(?<![\d第零〇一二两三四五六七八九十廿卅])(?:[廿卅][一二三四五六七八九]?|[一二三四五六七八九十]{1,3}))(?P<suf>号|日)"
                         + _DAY_NUM_STOP),
    "part": re.compile(_alt(_PART_WORDS)),
    # 晚 is "late" before a verb or an amount (晚睡, 晚回家, 晚一点, 晚两天): not a night.
    "part_after_day": re.compile(r"一大早|一早|晚(?![上间饭餐点些辈安会年期霞报归婚起到了睡回交走来去一两几半])"),
    "approx": re.compile(r"左右|前后"),
    # Only beside a month, week or year (上个月最后一天, 这周第一天); alone (第一天上班) it is no time.
    "edge": re.compile(r"的?(?P<w>第一天|头一天|最后一天|末一天)"),
    "clock": re.compile(
        r"(?P<h>\d{1,2}|[零一二两三四五六七八九十]{1,3})[点點](?:(?P<mi>\d{1,2}|[零一二三四五六七八九十]{1,3})分?|半|一刻|三刻|整|钟)?(?![儿都也点多不没吧])"
        r"|(?P<hh>\d{1,2})[:：](?P<mm>\d{2})"
    ),
}
