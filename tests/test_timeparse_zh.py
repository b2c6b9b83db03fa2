"""Chinese time expressions: table-driven, gold values from calendar arithmetic.

Expected ranges are written by hand (the helpers in timeparse_gold.py only build datetimes
for a stated calendar day / week / month, and name the calendar facts used); they never call
the parser's helpers. Each row is checked by timeparse_cases.assert_parses.
Lunar facts: 春节 2025-01-29, 2026-02-17, 2028-01-26; 中秋 2025-10-06;
端午 2025-05-31; 元宵 2026-03-03; 七夕 2025-08-29.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from engine.timeparse import TimeExpressionError, parse_time_ranges

from timeparse_cases import Expected, assert_parses, utc_length
from timeparse_gold import (AFTER_LEAP, DEC20, DEC28, DST_OFF, DST_ON, JUNE1, LEAP, MAR1, MAR31, MAY10, MON, NEWYEAR,
                            NOV22, NY, OCT5, SH, SUN, TUE, WED, back, day, days, hours, month, since, week, year)

DEC5 = datetime(2026, 12, 5, 9, 0, tzinfo=SH)       # Saturday; November has 30 days

C = pytest.param
CASES = [
    # --- relative days ---
    C(WED, "今天", [("今天", day(2026, 3, 18))], id="今天"),
    C(WED, "昨天", [("昨天", day(2026, 3, 17))], id="昨天"),
    C(WED, "前天", [("前天", day(2026, 3, 16))], id="前天"),
    C(WED, "大前天", [("大前天", day(2026, 3, 15))], id="大前天"),
    C(WED, "明天", [("明天", day(2026, 3, 19))], id="明天"),
    C(WED, "后天", [("后天", day(2026, 3, 20))], id="后天"),
    C(WED, "大后天", [("大后天", day(2026, 3, 21))], id="大后天"),
    C(WED, "昨日的事", [("昨日", day(2026, 3, 17))], id="昨日"),
    C(WED, "今天天气真好", [("今天", day(2026, 3, 18))], id="今天天气真好"),
    C(WED, "我昨天去了超市", [("昨天", day(2026, 3, 17))], id="sentence-昨天"),
    C(WED, "你还记得前天我们聊了什么吗", [("前天", day(2026, 3, 16))], id="sentence-前天"),
    # --- parts of day ---
    C(WED, "昨晚", [("昨晚", hours(2026, 3, 17, 18, 29))], id="昨晚"),
    C(WED, "昨天晚上", [("昨天晚上", hours(2026, 3, 17, 18, 29))], id="昨天晚上"),
    C(WED, "昨天下午", [("昨天下午", hours(2026, 3, 17, 12, 18))], id="昨天下午"),
    C(WED, "昨天上午", [("昨天上午", hours(2026, 3, 17, 5, 12))], id="昨天上午"),
    C(WED, "昨天早上", [("昨天早上", hours(2026, 3, 17, 5, 12))], id="昨天早上"),
    C(WED, "昨天早晨", [("昨天早晨", hours(2026, 3, 17, 5, 12))], id="昨天早晨"),
    C(WED, "今天凌晨", [("今天凌晨", hours(2026, 3, 18, 0, 5))], id="今天凌晨"),
    C(WED, "昨天中午", [("昨天中午", hours(2026, 3, 17, 11, 13))], id="昨天中午"),
    C(WED, "今晚", [("今晚", hours(2026, 3, 18, 18, 29))], id="今晚"),
    C(WED, "今早", [("今早", hours(2026, 3, 18, 5, 12))], id="今早"),
    C(WED, "前天晚上", [("前天晚上", hours(2026, 3, 16, 18, 29))], id="前天晚上"),
    C(WED, "昨天傍晚", [("昨天傍晚", hours(2026, 3, 17, 16, 20))], id="昨天傍晚"),
    C(WED, "昨天的晚上", [("昨天的晚上", hours(2026, 3, 17, 18, 29))], id="昨天的晚上"),
    C(WED, "上午说的", [("上午", hours(2026, 3, 18, 5, 12))], id="bare-上午"),
    C(WED, "今天下午", [("今天下午", hours(2026, 3, 18, 12, 18))], id="今天下午"),
    C(WED, "明天早上", [("明天早上", hours(2026, 3, 19, 5, 12))], id="明天早上"),
    C(WED, "上周三晚上", [("上周三晚上", hours(2026, 3, 11, 18, 29))], id="上周三晚上"),
    # --- clock times ---
    C(WED, "昨天下午三点", [("昨天下午三点", hours(2026, 3, 17, 15, 16))], id="昨天下午三点"),
    C(WED, "昨天下午3点半", [("昨天下午3点半", hours(2026, 3, 17, 15, 16))], id="昨天下午3点半"),
    C(WED, "昨晚8点", [("昨晚8点", hours(2026, 3, 17, 20, 21))], id="昨晚8点"),
    C(WED, "今天上午10点", [("今天上午10点", hours(2026, 3, 18, 10, 11))], id="今天上午10点"),
    C(WED, "昨天15:30", [("昨天15:30", hours(2026, 3, 17, 15, 16))], id="昨天15:30"),
    C(WED, "晚上九点", [("晚上九点", hours(2026, 3, 18, 21, 22))], id="晚上九点"),
    C(WED, "昨天凌晨两点", [("昨天凌晨两点", hours(2026, 3, 17, 2, 3))], id="昨天凌晨两点"),
    # --- weeks ---
    C(WED, "上周", [("上周", week(2026, 3, 9))], id="上周"),
    C(WED, "上星期", [("上星期", week(2026, 3, 9))], id="上星期"),
    C(WED, "上礼拜", [("上礼拜", week(2026, 3, 9))], id="上礼拜"),
    C(WED, "上个星期", [("上个星期", week(2026, 3, 9))], id="上个星期"),
    C(WED, "上个礼拜", [("上个礼拜", week(2026, 3, 9))], id="上个礼拜"),
    C(WED, "上上周", [("上上周", week(2026, 3, 2))], id="上上周"),
    C(WED, "上上个星期", [("上上个星期", week(2026, 3, 2))], id="上上个星期"),
    C(WED, "本周", [("本周", week(2026, 3, 16))], id="本周"),
    C(WED, "这周", [("这周", week(2026, 3, 16))], id="这周"),
    C(WED, "这个星期", [("这个星期", week(2026, 3, 16))], id="这个星期"),
    C(WED, "下周", [("下周", week(2026, 3, 23))], id="下周"),
    C(WED, "上周一直很忙", [("上周", week(2026, 3, 9))], id="上周一直-not-monday"),
    C(WED, "这周三天都在加班", [("这周", week(2026, 3, 16))], id="这周三天-not-wednesday"),
    # --- weekdays ---
    C(WED, "上周三", [("上周三", day(2026, 3, 11))], id="上周三"),
    C(WED, "上星期三", [("上星期三", day(2026, 3, 11))], id="上星期三"),
    C(WED, "上礼拜三", [("上礼拜三", day(2026, 3, 11))], id="上礼拜三"),
    C(WED, "上周日", [("上周日", day(2026, 3, 15))], id="上周日"),
    C(WED, "上周一", [("上周一", day(2026, 3, 9))], id="上周一"),
    C(WED, "上个星期天", [("上个星期天", day(2026, 3, 15))], id="上个星期天"),
    C(WED, "这周三", [("这周三", day(2026, 3, 18))], id="这周三"),
    C(WED, "本周三", [("本周三", day(2026, 3, 18))], id="本周三"),
    C(WED, "本周五", [("本周五", day(2026, 3, 20))], id="本周五-future"),
    C(WED, "下周一", [("下周一", day(2026, 3, 23))], id="下周一"),
    C(WED, "周三", [("周三", day(2026, 3, 18))], id="bare-周三-today"),
    C(WED, "星期一", [("星期一", day(2026, 3, 16))], id="bare-星期一"),
    C(WED, "礼拜天", [("礼拜天", day(2026, 3, 15))], id="bare-礼拜天"),
    C(WED, "周五", [("周五", day(2026, 3, 13))], id="bare-周五-last-week"),
    C(WED, "星期六", [("星期六", day(2026, 3, 14))], id="bare-星期六"),
    C(WED, "礼拜三", [("礼拜三", day(2026, 3, 18))], id="bare-礼拜三"),
    C(WED, "周四下午", [("周四下午", hours(2026, 3, 12, 12, 18))], id="bare-周四下午"),
    # --- weekends ---
    C(WED, "上周末", [("上周末", days(2026, 3, 14, 2026, 3, 15))], id="上周末"),
    C(WED, "上个周末", [("上个周末", days(2026, 3, 14, 2026, 3, 15))], id="上个周末"),
    C(WED, "这周末", [("这周末", days(2026, 3, 21, 2026, 3, 22))], id="这周末"),
    C(WED, "本周末", [("本周末", days(2026, 3, 21, 2026, 3, 22))], id="本周末"),
    C(WED, "周末", [("周末", days(2026, 3, 14, 2026, 3, 15))], id="bare-周末-midweek"),
    C(WED, "上上周末", [("上上周末", days(2026, 3, 7, 2026, 3, 8))], id="上上周末"),
    # --- months ---
    C(WED, "上个月", [("上个月", month(2026, 2))], id="上个月"),
    C(WED, "上月", [("上月", month(2026, 2))], id="上月"),
    C(WED, "本月", [("本月", month(2026, 3))], id="本月"),
    C(WED, "这个月", [("这个月", month(2026, 3))], id="这个月"),
    C(WED, "上上个月", [("上上个月", month(2026, 1))], id="上上个月"),
    C(WED, "下个月", [("下个月", month(2026, 4))], id="下个月"),
    C(WED, "4月份", [("4月份", month(2025, 4))], id="4月份"),
    C(WED, "四月", [("四月", month(2025, 4))], id="四月"),
    C(WED, "4月", [("4月", month(2025, 4))], id="4月"),
    C(WED, "3月", [("3月", month(2026, 3))], id="3月-current"),
    C(WED, "十二月", [("十二月", month(2025, 12))], id="十二月"),
    C(WED, "二月份", [("二月份", month(2026, 2))], id="二月份"),
    C(WED, "2025年4月", [("2025年4月", month(2025, 4))], id="2025年4月"),
    C(WED, "去年4月", [("去年4月", month(2025, 4))], id="去年4月"),
    C(WED, "去年的十月", [("去年的十月", month(2025, 10))], id="去年的十月"),
    C(WED, "今年1月", [("今年1月", month(2026, 1))], id="今年1月"),
    # --- years ---
    C(WED, "去年", [("去年", year(2025))], id="去年"),
    C(WED, "前年", [("前年", year(2024))], id="前年"),
    C(WED, "今年", [("今年", year(2026))], id="今年"),
    C(WED, "大前年", [("大前年", year(2023))], id="大前年"),
    C(WED, "2024年", [("2024年", year(2024))], id="2024年"),
    # --- explicit dates ---
    C(WED, "5月3日", [("5月3日", day(2025, 5, 3))], id="5月3日"),
    C(WED, "5月3号", [("5月3号", day(2025, 5, 3))], id="5月3号"),
    C(WED, "3月18日", [("3月18日", day(2026, 3, 18))], id="3月18日-today"),
    C(WED, "3月19日", [("3月19日", day(2026, 3, 19))], id="3月19日-tomorrow-is-coming"),
    C(WED, "3月26日", [("3月26日", day(2025, 3, 26))], id="3月26日-8-days-ahead-is-last-year"),
    C(WED, "2025年5月3日", [("2025年5月3日", day(2025, 5, 3))], id="2025年5月3日"),
    C(WED, "二〇二五年五月三日", [("二〇二五年五月三日", day(2025, 5, 3))], id="二〇二五年五月三日"),
    C(WED, "三月五号", [("三月五号", day(2026, 3, 5))], id="三月五号"),
    C(WED, "十二月二十五日", [("十二月二十五日", day(2025, 12, 25))], id="十二月二十五日"),
    C(WED, "去年12月31号", [("去年12月31号", day(2025, 12, 31))], id="去年12月31号"),
    C(WED, "15号那天", [("15号", day(2026, 3, 15))], id="15号"),
    C(WED, "20号", [("20号", day(2026, 2, 20))], id="20号-previous-month"),
    C(WED, "2025-05-03", [("2025-05-03", day(2025, 5, 3))], id="iso-date"),
    C(WED, "2025/5/3", [("2025/5/3", day(2025, 5, 3))], id="slash-date"),
    # --- explicit ranges ---
    C(WED, "5月1日到5月3日", [("5月1日到5月3日", days(2025, 5, 1, 2025, 5, 3))], id="5月1日到5月3日"),
    C(WED, "5月1日至3日", [("5月1日至3日", days(2025, 5, 1, 2025, 5, 3))], id="5月1日至3日"),
    C(WED, "4月28日至30日", [("4月28日至30日", days(2025, 4, 28, 2025, 4, 30))], id="4月28日至30日"),
    C(WED, "4月28号到5月2号", [("4月28号到5月2号", days(2025, 4, 28, 2025, 5, 2))], id="4月28号到5月2号"),
    C(WED, "从周一到周三", [("周一到周三", days(2026, 3, 16, 2026, 3, 18))], id="从周一到周三"),
    C(WED, "3月1日到3月5日", [("3月1日到3月5日", days(2026, 3, 1, 2026, 3, 5))], id="3月1日到3月5日"),
    C(WED, "从前天到今天", [("前天到今天", days(2026, 3, 16, 2026, 3, 18))], id="从前天到今天"),
    C(WED, "上周一到上周三", [("上周一到上周三", days(2026, 3, 9, 2026, 3, 11))], id="上周一到上周三"),
    # --- rolling windows ---
    C(WED, "最近3天", [("最近3天", back(WED, days=3))], id="最近3天"),
    C(WED, "近3天", [("近3天", back(WED, days=3))], id="近3天"),
    C(WED, "过去7天", [("过去7天", back(WED, days=7))], id="过去7天"),
    C(WED, "最近三天", [("最近三天", back(WED, days=3))], id="最近三天"),
    C(WED, "过去的两周", [("过去的两周", back(WED, weeks=2))], id="过去的两周"),
    C(WED, "这几天", [("这几天", back(WED, days=3))], id="这几天"),
    C(WED, "这两天", [("这两天", since(2026, 3, 16, WED))], id="这两天-today-and-two-days-before"),
    C(WED, "最近", [("最近", back(WED, days=7))], id="最近"),
    C(WED, "最近几天", [("最近几天", back(WED, days=7))], id="最近几天"),
    C(WED, "最近24小时", [("最近24小时", back(WED, hours=24))], id="最近24小时"),
    C(WED, "最近两周", [("最近两周", back(WED, weeks=2))], id="最近两周"),
    C(WED, "近5天", [("近5天", back(WED, days=5))], id="近5天"),
    C(WED, "最近一个月", [("最近一个月", (datetime(2026, 2, 18, 14, 30, tzinfo=SH), WED))], id="最近一个月"),
    C(WED, "前几天", [("前几天", days(2026, 3, 11, 2026, 3, 17))], id="前几天"),
    # --- N units ago ---
    C(WED, "3天前", [("3天前", day(2026, 3, 15))], id="3天前"),
    C(WED, "三天前", [("三天前", day(2026, 3, 15))], id="三天前"),
    C(WED, "两天前", [("两天前", day(2026, 3, 16))], id="两天前"),
    C(WED, "十天前", [("十天前", day(2026, 3, 8))], id="十天前"),
    C(WED, "1周前", [("1周前", week(2026, 3, 9))], id="1周前"),
    C(WED, "两周前", [("两周前", week(2026, 3, 2))], id="两周前"),
    C(WED, "两个星期前", [("两个星期前", week(2026, 3, 2))], id="两个星期前"),
    C(WED, "3个月前", [("3个月前", month(2025, 12))], id="3个月前"),
    C(WED, "一个月前", [("一个月前", month(2026, 2))], id="一个月前"),
    C(WED, "两年前", [("两年前", year(2024))], id="两年前"),
    C(WED, "3天后", [("3天后", day(2026, 3, 21))], id="3天后"),
    C(WED, "三天之前", [("三天之前", day(2026, 3, 15))], id="三天之前"),
    # --- festivals ---
    C(WED, "五一", [("五一", day(2025, 5, 1))], id="五一"),
    C(WED, "劳动节", [("劳动节", day(2025, 5, 1))], id="劳动节"),
    C(WED, "国庆节", [("国庆节", day(2025, 10, 1))], id="国庆节"),
    C(WED, "国庆", [("国庆", day(2025, 10, 1))], id="国庆"),
    C(WED, "国庆假期", [("国庆假期", days(2025, 10, 1, 2025, 10, 7))], id="国庆假期"),
    C(WED, "元旦", [("元旦", day(2026, 1, 1))], id="元旦"),
    C(WED, "圣诞节", [("圣诞节", day(2025, 12, 25))], id="圣诞节"),
    C(WED, "圣诞", [("圣诞", day(2025, 12, 25))], id="圣诞"),
    C(WED, "平安夜", [("平安夜", day(2025, 12, 24))], id="平安夜"),
    C(WED, "情人节", [("情人节", day(2026, 2, 14))], id="情人节"),
    C(WED, "万圣节", [("万圣节", day(2025, 10, 31))], id="万圣节"),
    C(WED, "春节", [("春节", day(2026, 2, 17))], id="春节"),
    C(WED, "除夕", [("除夕", day(2026, 2, 16))], id="除夕"),
    C(WED, "元宵节", [("元宵节", day(2026, 3, 3))], id="元宵节"),
    C(WED, "端午节", [("端午节", day(2025, 5, 31))], id="端午节"),
    C(WED, "中秋节", [("中秋节", day(2025, 10, 6))], id="中秋节"),
    C(WED, "七夕", [("七夕", day(2025, 8, 29))], id="七夕"),
    C(WED, "去年春节", [("去年春节", day(2025, 1, 29))], id="去年春节"),
    C(WED, "去年中秋", [("去年中秋", day(2025, 10, 6))], id="去年中秋"),
    C(WED, "2025年国庆节", [("2025年国庆节", day(2025, 10, 1))], id="2025年国庆节"),
    C(WED, "除夕晚上", [("除夕晚上", hours(2026, 2, 16, 18, 29))], id="除夕晚上"),
    # --- several expressions ---
    C(WED, "昨天和前天", [("昨天", day(2026, 3, 17)), ("前天", day(2026, 3, 16))], id="昨天和前天"),
    C(WED, "上周三和这周一", [("上周三", day(2026, 3, 11)), ("这周一", day(2026, 3, 16))], id="上周三和这周一"),
    C(WED, "昨天晚上和今天早上", [("昨天晚上", hours(2026, 3, 17, 18, 29)), ("今天早上", hours(2026, 3, 18, 5, 12))],
      id="昨天晚上和今天早上"),
    C(WED, "上个月和这个月", [("上个月", month(2026, 2)), ("这个月", month(2026, 3))], id="上个月和这个月"),
    C(WED, "去年圣诞节和今年元旦", [("去年圣诞节", day(2025, 12, 25)), ("今年元旦", day(2026, 1, 1))], id="两个节日"),
    C(WED, "昨天 and last Monday", [("昨天", day(2026, 3, 17)), ("last Monday", day(2026, 3, 16))], id="mixed-zh-en"),
    # --- conventions the README's table settles (issue 10); one rule each ---
    # 这两天: today and the two calendar days before it, up to now (not a rolling 48 hours).
    C(NEWYEAR, "这两天我们聊了什么", [("这两天", since(2025, 12, 30, NEWYEAR))], id="conv-这两天-after-midnight"),
    # 前两天 ("a couple of days ago"): one to three days back, as calendar days.
    C(WED, "前两天", [("前两天", days(2026, 3, 15, 2026, 3, 17))], id="conv-前两天"),
    # 清晨 is dawn 05–09; 晚上 夜里 半夜 昨晚 are one night 18:00–05:00, and their small hours
    # (0–4 o'clock) are the next morning; 12 o'clock at night is midnight.
    C(WED, "昨天清晨", [("昨天清晨", hours(2026, 3, 17, 5, 9))], id="conv-昨天清晨"),
    C(WED, "清晨六点", [("清晨六点", hours(2026, 3, 18, 6, 7))], id="conv-清晨六点"),
    C(WED, "昨天夜里", [("昨天夜里", hours(2026, 3, 17, 18, 29))], id="conv-昨天夜里"),
    C(WED, "昨天夜里两点", [("昨天夜里两点", hours(2026, 3, 18, 2, 3))], id="conv-昨天夜里两点-is-today"),
    C(WED, "昨晚两点才睡", [("昨晚两点", hours(2026, 3, 18, 2, 3))], id="conv-昨晚两点"),
    C(WED, "昨晚11点", [("昨晚11点", hours(2026, 3, 17, 23, 24))], id="conv-昨晚11点"),
    C(WED, "昨天晚上12点", [("昨天晚上12点", hours(2026, 3, 18, 0, 1))], id="conv-晚上12点-midnight"),
    C(WED, "前天半夜", [("前天半夜", hours(2026, 3, 16, 18, 29))], id="conv-前天半夜"),
    # 中午 + clock: 11 and 12 as said, 1–5 in the afternoon; 傍晚 is dusk 16–20, its clock pm.
    C(WED, "昨天中午12点", [("昨天中午12点", hours(2026, 3, 17, 12, 13))], id="conv-中午12点"),
    C(WED, "昨天中午1点", [("昨天中午1点", hours(2026, 3, 17, 13, 14))], id="conv-中午1点"),
    C(WED, "昨天中午十一点", [("昨天中午十一点", hours(2026, 3, 17, 11, 12))], id="conv-中午十一点"),
    C(WED, "昨天傍晚6点", [("昨天傍晚6点", hours(2026, 3, 17, 18, 19))], id="conv-傍晚6点"),
    C(WED, "昨天傍晚五点半", [("昨天傍晚五点半", hours(2026, 3, 17, 17, 18))], id="conv-傍晚五点半"),
    C(WED, "昨天黄昏", [("昨天黄昏", hours(2026, 3, 17, 16, 20))], id="conv-黄昏"),
    # A clock with no day is today's (the caller clips what is still ahead); a bare 三点 is nothing.
    C(WED, "下午三点我们说了什么", [("下午三点", hours(2026, 3, 18, 15, 16))], id="conv-clock-no-day-today"),
    C(WED, "晚上八点", [("晚上八点", hours(2026, 3, 18, 20, 21))], id="conv-晚上八点-today"),
    C(WED, "三点我们说了什么", [], id="conv-bare-三点"),
    # A festival or dated day without a year: the coming one when at most 7 days ahead.
    C(DEC20, "圣诞节", [("圣诞节", day(2026, 12, 25))], id="conv-圣诞节-5-days-before"),
    C(DEC20, "平安夜", [("平安夜", day(2026, 12, 24))], id="conv-平安夜-4-days-before"),
    C(DEC20, "元旦", [("元旦", day(2026, 1, 1))], id="conv-元旦-12-days-before-is-last"),
    C(DEC28, "元旦", [("元旦", day(2027, 1, 1))], id="conv-元旦-across-the-year"),
    C(DEC20, "去年圣诞节", [("去年圣诞节", day(2025, 12, 25))], id="conv-去年圣诞节"),
    C(datetime(2026, 2, 12, 9, tzinfo=SH), "春节", [("春节", day(2026, 2, 17))], id="conv-春节-5-days-before"),
    C(datetime(2026, 9, 30, 9, tzinfo=SH), "国庆节", [("国庆节", day(2026, 10, 1))], id="conv-国庆节-eve"),
    C(datetime(2026, 9, 20, 9, tzinfo=SH), "国庆节", [("国庆节", day(2025, 10, 1))], id="conv-国庆节-11-days-before"),
    C(OCT5, "十月十号", [("十月十号", day(2026, 10, 10))], id="conv-十月十号-on-oct-5"),
    C(OCT5, "10月10号那天", [("10月10号", day(2026, 10, 10))], id="conv-10月10号-on-oct-5"),
    C(OCT5, "十月十五号", [("十月十五号", day(2025, 10, 15))], id="conv-十月十五号-10-days-ahead"),
    C(OCT5, "10号", [("10号", day(2026, 9, 10))], id="conv-bare-10号-stays-past"),
    # 除夕 is the day before 春节; in a lunar year whose 腊月 has 29 days (春节 2025-01-29)
    # 腊月三十, 大年三十 and 年三十 all mean that eve, 腊月二十九.
    C(datetime(2025, 3, 1, 9, tzinfo=SH), "除夕", [("除夕", day(2025, 1, 28))], id="conv-除夕-no-腊月三十"),
    C(datetime(2025, 3, 1, 9, tzinfo=SH), "腊月三十", [("腊月三十", day(2025, 1, 28))], id="conv-腊月三十-is-the-eve"),
    C(datetime(2025, 3, 1, 9, tzinfo=SH), "大年三十晚上", [("大年三十晚上", hours(2025, 1, 28, 18, 29))],
      id="conv-大年三十晚上"),
    # 从周一到周三: starts on the most recent such weekday before today.
    C(MON, "从周一到周三我们聊了什么", [("周一到周三", days(2026, 3, 9, 2026, 3, 11))], id="conv-周一到周三-on-monday"),
    C(TUE, "从周一到周三", [("周一到周三", days(2026, 3, 16, 2026, 3, 18))], id="conv-周一到周三-on-tuesday"),
    C(WED, "周三到周五", [("周三到周五", days(2026, 3, 11, 2026, 3, 13))], id="conv-周三到周五-on-wednesday"),
    C(WED, "周五到周一", [("周五到周一", days(2026, 3, 13, 2026, 3, 16))], id="conv-周五到周一-wraps"),
    # 第五周 = days 29–end; a 28-day February has none: the whole month, like 上个月31号.
    C(MAR1, "上个月第五周", [("上个月第五周", month(2026, 2))], id="conv-第五周-28-day-february"),
    C(MAR1, "二月第五周", [("二月第五周", month(2026, 2))], id="conv-二月第五周"),
    C(AFTER_LEAP, "上个月第五周", [("上个月第五周", day(2028, 2, 29))], id="conv-第五周-leap-february"),
    C(NOV22, "十月第五周", [("十月第五周", days(2026, 10, 29, 2026, 10, 31))], id="conv-十月第五周"),
    C(NOV22, "这个月第五周", [("这个月第五周", days(2026, 11, 29, 2026, 11, 30))], id="conv-30-day-第五周"),
    # N多<unit>前: more than N and less than N+1 units back, both ends open.
    C(NOV22, "一个多星期前", [("一个多星期前", days(2026, 11, 9, 2026, 11, 14))], id="conv-一个多星期前"),
    C(NOV22, "两个多月前", [("两个多月前", days(2026, 8, 23, 2026, 9, 21))], id="conv-两个多月前"),
    C(MAR31, "一个多月前", [("一个多月前", days(2026, 2, 1, 2026, 2, 27))], id="conv-一个多月前-clamped"),
    # 上个月这个时候: the same day last month (clamped to its end) ±3 days.
    C(NOV22, "上个月这个时候", [("上个月这个时候", days(2026, 10, 19, 2026, 10, 25))], id="conv-上个月这个时候"),
    C(MAR31, "上个月这个时候", [("上个月这个时候", days(2026, 2, 25, 2026, 3, 3))], id="conv-上个月这个时候-mar31"),
    # 最近一个月: from the same wall clock one calendar month back (day clamped to its end).
    C(MAR31, "最近一个月", [("最近一个月", (datetime(2026, 2, 28, 10, tzinfo=SH), MAR31))], id="conv-最近一个月-mar31"),
    C(MAR31, "最近两个月", [("最近两个月", (datetime(2026, 1, 31, 10, tzinfo=SH), MAR31))], id="conv-最近两个月-mar31"),
    # The real user questions of issue 10 (asked 2025-05-10).
    C(MAY10, "在5月6号我读了一本书，它的名字是？", [("5月6号", day(2025, 5, 6))], id="user-5月6号读了一本书"),
    C(MAY10, "5月4号的天气怎么样？我的心情怎么样？", [("5月4号", day(2025, 5, 4))], id="user-5月4号的天气"),
    C(MAY10, "在4月28号你给我推荐了一个笔记软件，它的名字是？", [("4月28号", day(2025, 4, 28))], id="user-4月28号笔记软件"),
    C(MAY10, "我4月30号为什么要问你舒缓压力和放松心情的办法？", [("4月30号", day(2025, 4, 30))], id="user-4月30号舒缓压力"),
    C(MAY10, "上周三我们聊了什么", [("上周三", day(2025, 4, 30))], id="user-上周三"),
    # --- must not fire ---
    C(WED, "每天", [], id="neg-每天"),
    C(WED, "三天", [], id="neg-三天"),
    C(WED, "一天", [], id="neg-一天"),
    C(WED, "天天开心", [], id="neg-天天"),
    C(WED, "我们每天都聊天", [], id="neg-每天都聊天"),
    C(WED, "三天的时间够吗", [], id="neg-三天的时间"),
    C(WED, "你好呀，吃饭了吗", [], id="neg-chitchat"),
    C(WED, "现在几点", [], id="neg-现在几点"),
    C(WED, "现在", [], id="neg-现在"),
    C(WED, "一点都不累", [], id="neg-一点都不"),
    C(WED, "离我家最近的超市", [], id="neg-最近-nearest"),
    C(WED, "看一下周围", [], id="neg-一下周围"),
    C(WED, "我有三点建议", [], id="neg-三点建议"),
    C(WED, "每周三开会", [], id="neg-每周三"),
    C(WED, "每个月都去", [], id="neg-每个月"),
    C(WED, "他坐3号线", [], id="neg-3号线"),
    # --- day of month inside a relative month (NOV22 = Sunday 2026-11-22) ---
    C(NOV22, "上个月10号到15号我们聊了什么", [("上个月10号到15号", days(2026, 10, 10, 2026, 10, 15))], id="上个月10号到15号"),
    C(NOV22, "上个月10号我们聊了什么", [("上个月10号", day(2026, 10, 10))], id="上个月10号"),
    C(NOV22, "上个月的10号那天我说了什么", [("上个月的10号", day(2026, 10, 10))], id="上个月的10号那天"),
    C(NOV22, "上个月十号", [("上个月十号", day(2026, 10, 10))], id="上个月十号"),
    C(NOV22, "上个月二十三号", [("上个月二十三号", day(2026, 10, 23))], id="上个月二十三号"),
    C(NOV22, "这个月3号", [("这个月3号", day(2026, 11, 3))], id="这个月3号"),
    C(NOV22, "本月3号到5号", [("本月3号到5号", days(2026, 11, 3, 2026, 11, 5))], id="本月3号到5号"),
    C(NOV22, "上上个月5号", [("上上个月5号", day(2026, 9, 5))], id="上上个月5号"),
    C(NOV22, "上个月5号至8号", [("上个月5号至8号", days(2026, 10, 5, 2026, 10, 8))], id="上个月5号至8号"),
    C(NOV22, "上个月10号和20号", [("上个月10号", day(2026, 10, 10)), ("20号", day(2026, 10, 20))], id="上个月10号和20号"),
    C(NOV22, "5月3号和10号", [("5月3号", day(2026, 5, 3)), ("10号", day(2026, 5, 10))], id="5月3号和10号-same-month"),
    C(NOV22, "三十一号那天", [("三十一号", day(2026, 10, 31))], id="三十一号-skips-november"),
    C(NOV22, "１０号那天我们说了啥", [("１０号", day(2026, 11, 10))], id="fullwidth-１０号"),
    C(NOV22, "上周的周三", [("上周的周三", day(2026, 11, 11))], id="上周的周三"),
    C(NOV22, "两周前的周末", [("两周前的周末", days(2026, 11, 7, 2026, 11, 8))], id="两周前的周末"),
    C(DEC5, "上个月31号", [("上个月31号", month(2026, 11))], id="dec5-上个月31号-no-such-day"),
    C(JUNE1, "上个月30号", [("上个月30号", day(2026, 5, 30))], id="june1-上个月30号"),
    C(JUNE1, "这个月1号", [("这个月1号", day(2026, 6, 1))], id="june1-这个月1号"),
    C(NEWYEAR, "上个月25号", [("上个月25号", day(2025, 12, 25))], id="newyear-上个月25号"),
    C(DST_OFF, "这个月1号", [("这个月1号", day(2026, 11, 1, NY))], id="dst-off-这个月1号-25h"),
    C(NOV22, "上个月10号晚上我们聊了什么", [("上个月10号晚上", hours(2026, 10, 10, 18, 29))], id="上个月10号晚上"),
    C(NOV22, "上个月10号下午三点", [("上个月10号下午三点", hours(2026, 10, 10, 15, 16))], id="上个月10号下午三点"),
    C(NOV22, "上上周的周五晚上", [("上上周的周五晚上", hours(2026, 11, 6, 18, 29))], id="上上周的周五晚上"),
    C(NOV22, "上周六晚上11点左右", [("上周六晚上11点左右", hours(2026, 11, 14, 22, 25))], id="上周六晚上11点左右"),
    C(NOV22, "从上个月底到这个月初", [("上个月底到这个月初", days(2026, 10, 21, 2026, 11, 10))], id="从上个月底到这个月初"),
    C(NOV22, "我们上个月底薪涨了", [("上个月", month(2026, 10))], id="上个月底薪-is-salary"),
    # --- parts of a month: early 1-10, mid 11-20, late 21-end ---
    C(NOV22, "上个月初", [("上个月初", days(2026, 10, 1, 2026, 10, 10))], id="上个月初"),
    C(NOV22, "上个月中旬我们聊过什么", [("上个月中旬", days(2026, 10, 11, 2026, 10, 20))], id="上个月中旬"),
    C(NOV22, "上个月底", [("上个月底", days(2026, 10, 21, 2026, 10, 31))], id="上个月底"),
    C(NOV22, "上月底", [("上月底", days(2026, 10, 21, 2026, 10, 31))], id="上月底"),
    C(NOV22, "上个月下旬", [("上个月下旬", days(2026, 10, 21, 2026, 10, 31))], id="上个月下旬"),
    C(NOV22, "月底", [("月底", days(2026, 11, 21, 2026, 11, 30))], id="bare-月底"),
    C(NOV22, "月初的时候", [("月初", days(2026, 11, 1, 2026, 11, 10))], id="bare-月初"),
    C(NOV22, "下旬的时候", [("下旬", days(2026, 11, 21, 2026, 11, 30))], id="bare-下旬"),
    C(NOV22, "十月初", [("十月初", days(2026, 10, 1, 2026, 10, 10))], id="十月初"),
    C(NOV22, "10月底", [("10月底", days(2026, 10, 21, 2026, 10, 31))], id="10月底"),
    C(NOV22, "十月份中旬", [("十月份中旬", days(2026, 10, 11, 2026, 10, 20))], id="十月份中旬"),
    C(NOV22, "去年十月底", [("去年十月底", days(2025, 10, 21, 2025, 10, 31))], id="去年十月底"),
    C(NOV22, "2025年3月初", [("2025年3月初", days(2025, 3, 1, 2025, 3, 10))], id="2025年3月初"),
    C(NEWYEAR, "上个月底", [("上个月底", days(2025, 12, 21, 2025, 12, 31))], id="newyear-上个月底"),
    C(LEAP, "月底", [("月底", days(2028, 2, 21, 2028, 2, 29))], id="leap-月底"),
    C(AFTER_LEAP, "上个月下旬", [("上个月下旬", days(2028, 2, 21, 2028, 2, 29))], id="after-leap-上个月下旬"),
    C(DST_OFF, "上个月底", [("上个月底", days(2026, 10, 21, 2026, 10, 31, NY))], id="dst-off-上个月底"),
    # --- weeks of a month: week n = days 7n-6..7n, last = the final 7 days ---
    C(NOV22, "十月第一周", [("十月第一周", days(2026, 10, 1, 2026, 10, 7))], id="十月第一周"),
    C(NOV22, "上个月最后一周", [("上个月最后一周", days(2026, 10, 25, 2026, 10, 31))], id="上个月最后一周"),
    C(NOV22, "这个月第二周", [("这个月第二周", days(2026, 11, 8, 2026, 11, 14))], id="这个月第二周"),
    C(AFTER_LEAP, "上个月最后一周", [("上个月最后一周", days(2028, 2, 23, 2028, 2, 29))], id="after-leap-最后一周"),
    # --- the same day in another period ---
    C(NOV22, "去年的今天", [("去年的今天", day(2025, 11, 22))], id="去年的今天"),
    C(NOV22, "去年今天", [("去年今天", day(2025, 11, 22))], id="去年今天"),
    C(NOV22, "一年前的今天", [("一年前的今天", day(2025, 11, 22))], id="一年前的今天"),
    C(NOV22, "去年这个时候我在干嘛", [("去年这个时候", days(2025, 11, 15, 2025, 11, 29))], id="去年这个时候"),
    C(NOV22, "去年的这个时候", [("去年的这个时候", days(2025, 11, 15, 2025, 11, 29))], id="去年的这个时候"),
    C(NOV22, "上个月的今天", [("上个月的今天", day(2026, 10, 22))], id="上个月的今天"),
    C(NOV22, "上周的今天", [("上周的今天", day(2026, 11, 15))], id="上周的今天"),
    C(LEAP, "去年的今天", [("去年的今天", day(2027, 2, 28))], id="leap-去年的今天-clamps"),
    # --- fuzzy "ago" ---
    C(NOV22, "半个月前", [("半个月前", days(2026, 11, 4, 2026, 11, 10))], id="半个月前"),
    C(NOV22, "一个多月前", [("一个多月前", days(2026, 9, 23, 2026, 10, 21))], id="一个多月前-ends-open"),
    C(NOV22, "两个多星期前", [("两个多星期前", days(2026, 11, 2, 2026, 11, 7))], id="两个多星期前-15-20-days"),
    C(NOV22, "十多天前", [("十多天前", days(2026, 11, 3, 2026, 11, 11))], id="十多天前"),
    C(NOV22, "前两天我们聊过", [("前两天", days(2026, 11, 19, 2026, 11, 21))], id="前两天"),
    # --- approximately: a day ±3 days, an hour ±1 hour ---
    C(NOV22, "10号左右", [("10号左右", days(2026, 11, 7, 2026, 11, 13))], id="10号左右"),
    C(NOV22, "10月10号前后", [("10月10号前后", days(2026, 10, 7, 2026, 10, 13))], id="10月10号前后"),
    C(NOV22, "春节前后", [("春节前后", days(2026, 2, 14, 2026, 2, 20))], id="春节前后"),
    C(NOV22, "国庆前后", [("国庆前后", days(2026, 9, 28, 2026, 10, 4))], id="国庆前后"),
    C(NOV22, "圣诞节前后", [("圣诞节前后", days(2025, 12, 22, 2025, 12, 28))], id="圣诞节前后"),
    C(NOV22, "昨天下午三点左右", [("昨天下午三点左右", hours(2026, 11, 21, 14, 17))], id="昨天下午三点左右"),
    C(NOV22, "昨天凌晨0点左右", [("昨天凌晨0点左右", (datetime(2026, 11, 20, 23, tzinfo=SH), datetime(2026, 11, 21, 2, tzinfo=SH)))],
      id="0点左右-borrows-previous-day"),
    # --- holiday periods ---
    C(NOV22, "国庆期间", [("国庆期间", days(2026, 10, 1, 2026, 10, 7))], id="国庆期间"),
    C(NOV22, "春节期间", [("春节期间", days(2026, 2, 16, 2026, 2, 23))], id="春节期间-除夕-to-初七"),
    C(NOV22, "正月初一那天", [("正月初一", day(2026, 2, 17))], id="正月初一-is-not-月初"),
    C(NOV22, "正月十五", [("正月十五", day(2026, 3, 3))], id="正月十五"),
    # --- must not fire (new families) ---
    C(NOV22, "我三点左右到", [], id="neg-bare-三点左右"),
    C(NOV22, "他坐10号线上班", [], id="neg-10号线"),
    C(NOV22, "我住3号楼", [], id="neg-3号楼"),
    C(NOV22, "第10号", [], id="neg-第10号"),
    C(NOV22, "10号球员进球了", [], id="neg-10号球员"),
    C(NOV22, "三号选手", [], id="neg-三号选手"),
    C(NOV22, "岁月中的点滴", [], id="neg-岁月中"),
    C(NOV22, "这几个月中", [], id="neg-几个月中"),
    C(NOV22, "左右为难", [], id="neg-左右为难"),
    C(NOV22, "前后门都关了", [], id="neg-前后门"),
    # --- edge: year boundary, just after midnight ---
    C(NEWYEAR, "昨天", [("昨天", day(2025, 12, 31))], id="newyear-昨天"),
    C(NEWYEAR, "前天", [("前天", day(2025, 12, 30))], id="newyear-前天"),
    C(NEWYEAR, "上个月", [("上个月", month(2025, 12))], id="newyear-上个月"),
    C(NEWYEAR, "上周", [("上周", week(2025, 12, 22))], id="newyear-上周"),
    C(NEWYEAR, "本周", [("本周", week(2025, 12, 29))], id="newyear-本周"),
    C(NEWYEAR, "去年", [("去年", year(2025))], id="newyear-去年"),
    C(NEWYEAR, "今年", [("今年", year(2026))], id="newyear-今年"),
    C(NEWYEAR, "十二月", [("十二月", month(2025, 12))], id="newyear-十二月"),
    C(NEWYEAR, "一月", [("一月", month(2026, 1))], id="newyear-一月"),
    C(NEWYEAR, "元旦", [("元旦", day(2026, 1, 1))], id="newyear-元旦"),
    C(NEWYEAR, "圣诞节", [("圣诞节", day(2025, 12, 25))], id="newyear-圣诞节"),
    C(NEWYEAR, "上周末", [("上周末", days(2025, 12, 27, 2025, 12, 28))], id="newyear-上周末"),
    C(NEWYEAR, "12月25日", [("12月25日", day(2025, 12, 25))], id="newyear-12月25日"),
    C(NEWYEAR, "最近3天", [("最近3天", (datetime(2025, 12, 29, 0, 5, tzinfo=SH), NEWYEAR))], id="newyear-最近3天"),
    # --- edge: leap day ---
    C(LEAP, "昨天", [("昨天", day(2028, 2, 28))], id="leap-昨天"),
    C(LEAP, "今天", [("今天", day(2028, 2, 29))], id="leap-今天"),
    C(LEAP, "上个月", [("上个月", month(2028, 1))], id="leap-上个月"),
    C(LEAP, "本月", [("本月", (datetime(2028, 2, 1, tzinfo=SH), datetime(2028, 3, 1, tzinfo=SH)))], id="leap-本月"),
    C(LEAP, "2月29日", [("2月29日", day(2028, 2, 29))], id="leap-2月29日"),
    C(LEAP, "本周", [("本周", week(2028, 2, 28))], id="leap-本周"),
    C(LEAP, "上周三", [("上周三", day(2028, 2, 23))], id="leap-上周三"),
    C(LEAP, "春节", [("春节", day(2028, 1, 26))], id="leap-春节"),
    C(AFTER_LEAP, "昨天", [("昨天", day(2028, 2, 29))], id="after-leap-昨天"),
    C(AFTER_LEAP, "前天", [("前天", day(2028, 2, 28))], id="after-leap-前天"),
    C(AFTER_LEAP, "上个月", [("上个月", month(2028, 2))], id="after-leap-上个月"),
    C(AFTER_LEAP, "上周", [("上周", week(2028, 2, 21))], id="after-leap-上周"),
    C(AFTER_LEAP, "周一", [("周一", day(2028, 2, 28))], id="after-leap-周一"),
    # --- edge: Monday / Sunday ---
    C(MON, "上周", [("上周", week(2026, 3, 9))], id="mon-上周"),
    C(MON, "周一", [("周一", day(2026, 3, 16))], id="mon-周一-today"),
    C(MON, "周日", [("周日", day(2026, 3, 15))], id="mon-周日"),
    C(MON, "周三", [("周三", day(2026, 3, 11))], id="mon-周三-last-week"),
    C(MON, "上周末", [("上周末", days(2026, 3, 14, 2026, 3, 15))], id="mon-上周末"),
    C(MON, "周末", [("周末", days(2026, 3, 14, 2026, 3, 15))], id="mon-周末"),
    C(MON, "这周末", [("这周末", days(2026, 3, 21, 2026, 3, 22))], id="mon-这周末"),
    C(MON, "昨天", [("昨天", day(2026, 3, 15))], id="mon-昨天"),
    C(SUN, "上周", [("上周", week(2026, 3, 9))], id="sun-上周"),
    C(SUN, "本周", [("本周", week(2026, 3, 16))], id="sun-本周"),
    C(SUN, "周末", [("周末", days(2026, 3, 21, 2026, 3, 22))], id="sun-周末-current"),
    C(SUN, "上周末", [("上周末", days(2026, 3, 14, 2026, 3, 15))], id="sun-上周末"),
    C(SUN, "周日", [("周日", day(2026, 3, 22))], id="sun-周日-today"),
    C(SUN, "周一", [("周一", day(2026, 3, 16))], id="sun-周一"),
    C(SUN, "上周日", [("上周日", day(2026, 3, 15))], id="sun-上周日"),
    C(SUN, "昨晚", [("昨晚", hours(2026, 3, 21, 18, 29))], id="sun-昨晚"),
    # --- edge: month start after midnight ---
    C(JUNE1, "昨天", [("昨天", day(2026, 5, 31))], id="june1-昨天"),
    C(JUNE1, "上个月", [("上个月", month(2026, 5))], id="june1-上个月"),
    C(JUNE1, "上周", [("上周", week(2026, 5, 25))], id="june1-上周"),
    C(JUNE1, "端午节", [("端午节", day(2025, 5, 31))], id="june1-端午-last-year"),
    C(JUNE1, "五一", [("五一", day(2026, 5, 1))], id="june1-五一"),
    C(JUNE1, "最近3天", [("最近3天", (datetime(2026, 5, 29, 0, 1, tzinfo=SH), JUNE1))], id="june1-最近3天"),
    # --- a day moved by whole days (MAY10 = Saturday 2025-05-10, NOV22 = Sunday 2026-11-22) ---
    C(MAY10, "劳动节前一天我们聊了什么", [("劳动节前一天", day(2025, 4, 30))], id="劳动节前一天"),
    C(MAY10, "五一后两天", [("五一后两天", days(2025, 5, 2, 2025, 5, 3))], id="五一后两天"),
    C(NOV22, "国庆节前两天", [("国庆节前两天", days(2026, 9, 29, 2026, 9, 30))], id="国庆节前两天-not-前两天"),
    C(NOV22, "国庆节的前一天晚上", [("国庆节的前一天晚上", hours(2026, 9, 30, 18, 29))], id="国庆节的前一天晚上"),
    C(NOV22, "11月3号之后一天", [("11月3号之后一天", day(2026, 11, 4))], id="11月3号之后一天"),
    C(NOV22, "前两天我说的", [("前两天", days(2026, 11, 19, 2026, 11, 21))], id="前两天-alone-still-rolling"),
    C(NOV22, "20号周五我们聊了啥", [("20号周五", day(2026, 11, 20))], id="20号周五"),
    C(NOV22, "周四12号我们聊了啥", [("周四12号", day(2026, 11, 12))], id="周四12号-digits-after-a-numeral"),
    C(NOV22, "周四11月12号我们聊了啥", [("周四11月12号", day(2026, 11, 12))], id="周四11月12号-not-also-this-周四"),
    C(NOV22, "11月5号周四晚上", [("11月5号周四晚上", hours(2026, 11, 5, 18, 29))], id="11月5号周四晚上"),
    C(NOV22, "周四和11月5号", [("周四", day(2026, 11, 19)), ("11月5号", day(2026, 11, 5))], id="周四和11月5号-two-days"),
    C(NOV22, "廿八号那天我们聊了什么", [("廿八号", day(2026, 10, 28))], id="廿八号-not-八号"),
    C(NOV22, "四月廿八日", [("四月廿八日", day(2026, 4, 28))], id="四月廿八日"),
    C(NOV22, "卅一号", [("卅一号", day(2026, 10, 31))], id="卅一号"),
    C(NOV22, "前儿个我说了什么", [("前儿个", day(2026, 11, 20))], id="前儿个"),
    C(NOV22, "近半个月我们聊了啥", [("近半个月", back(NOV22, days=15))], id="近半个月"),
    C(NOV22, "这半个月", [("这半个月", back(NOV22, days=15))], id="这半个月"),
    C(NOV22, "最近半年", [("最近半年", (NOV22.replace(month=5), NOV22))], id="最近半年"),
    C(NOV22, "月中那几天", [("月中", days(2026, 11, 11, 2026, 11, 20))], id="bare-月中"),
    C(NOV22, "岁月中的点滴", [], id="neg-岁月中"),
    C(NOV22, "10.28那天我们聊了什么", [("10.28", day(2026, 10, 28))], id="dotted-date-那天"),
    C(NOV22, "11-5晚上我说了什么", [("11-5晚上", hours(2026, 11, 5, 18, 29))], id="dashed-date-晚上"),
    C(NOV22, "4.28号", [("4.28号", day(2026, 4, 28))], id="dotted-date-号-keeps-its-month"),
    C(NOV22, "价格是4.28元", [], id="neg-dotted-price"),
    C(NOV22, "版本4.28发布了", [], id="neg-dotted-version"),
    C(NOV22, "体重下降了1.5，我很开心", [], id="neg-dotted-number-then-comma"),
    C(NOV22, "国庆节前一周我们聊了什么", [("国庆节前一周", days(2026, 9, 24, 2026, 9, 30))], id="国庆节前一周-not-from-now-until"),
    C(NOV22, "国庆节后一个星期", [("国庆节后一个星期", days(2026, 10, 2, 2026, 10, 8))], id="国庆节后一个星期"),
    C(NOV22, "两个小时前我说了啥", [("两个小时前", (NOV22 - timedelta(hours=3), NOV22 - timedelta(hours=1)))], id="两个小时前"),
    C(NOV22, "半小时前", [("半小时前", (NOV22 - timedelta(hours=1), NOV22))], id="半小时前-the-last-hour"),
    C(NOV22, "三小时后见", [], id="neg-三小时后-future"),
    C(MAY10, "正月初五我们聊了什么", [("正月初五", day(2025, 2, 2))], id="正月初五-lunar-day"),
    C(MAY10, "腊月二十三", [("腊月二十三", day(2025, 1, 22))], id="腊月二十三-小年"),
    C(MAY10, "腊月廿八", [("腊月廿八", day(2025, 1, 27))], id="腊月廿八"),
    C(MAY10, "冬月十五", [("冬月十五", day(2024, 12, 15))], id="冬月十五"),
    C(datetime(2026, 5, 9, 20, 0, tzinfo=SH), "冬月十五", [("冬月十五", day(2026, 1, 3))],
      id="冬月十五-when-last-gregorian-year-had-none"),
    C(datetime(2022, 6, 1, 12, 0, tzinfo=SH), "腊八那天", [("腊八", day(2022, 1, 10))],
      id="腊八-the-january-one-when-the-year-has-two"),
    C(NOV22, "国庆七天我都干嘛了", [("国庆七天", days(2026, 10, 1, 2026, 10, 7))], id="国庆七天-the-holiday"),
    C(NOV22, "前几天晚上我说了什么", [("前几天晚上", days(2026, 11, 15, 2026, 11, 21))], id="前几天晚上-not-also-tonight"),
    # A weekday listed after one of a named week is in that week (alone, 周四 was this week's).
    C(NOV22, "上周三和周四我们聊了什么", [("上周三", day(2026, 11, 11)), ("周四", day(2026, 11, 12))], id="上周三和周四"),
    C(NOV22, "上周一、周三和周五", [("上周一", day(2026, 11, 9)), ("周三", day(2026, 11, 11)), ("周五", day(2026, 11, 13))],
      id="上周一-周三和周五"),
    C(NOV22, "周三和周四我们聊了什么", [("周三", day(2026, 11, 18)), ("周四", day(2026, 11, 19))], id="周三和周四-this-week"),
    # 过年 said as a time is the Spring Festival break (除夕 to 初七, as 春节假期); alone, a greeting.
    C(NOV22, "过年的时候我们聊了什么", [("过年", days(2026, 2, 16, 2026, 2, 23))], id="过年的时候"),
    C(NOV22, "我过年回老家的时候说了什么", [("过年", days(2026, 2, 16, 2026, 2, 23))], id="过年回老家"),
    C(NOV22, "去年过年我们聊了什么", [("去年过年", days(2025, 1, 28, 2025, 2, 4))], id="去年过年"),
    C(NOV22, "过年好呀", [], id="neg-过年好-greeting"),
    C(NOV22, "快过年了", [], id="neg-快过年了"),
    # The first / last day of a named month, week or year is that day, not the whole period.
    C(NOV22, "上个月最后一天我说了什么", [("上个月最后一天", day(2026, 10, 31))], id="上个月最后一天"),
    C(NOV22, "这个月第一天我说了什么", [("这个月第一天", day(2026, 11, 1))], id="这个月第一天"),
    C(NOV22, "上周最后一天", [("上周最后一天", day(2026, 11, 15))], id="上周最后一天-sunday"),
    C(NOV22, "去年的最后一天我们聊了什么", [("去年的最后一天", day(2025, 12, 31))], id="去年的最后一天"),
    C(NOV22, "第一天上班感觉怎么样", [], id="neg-第一天-alone"),
    C(NOV22, "上周以来我们聊了什么", [("上周以来", days(2026, 11, 9, 2026, 11, 22))], id="上周以来-to-now"),
    C(NOV22, "自从上周三以来", [("自从上周三以来", days(2026, 11, 11, 2026, 11, 22))], id="自从上周三以来"),
    C(NOV22, "从周一到现在我说了啥", [("周一到现在", days(2026, 11, 16, 2026, 11, 22))], id="从周一到现在"),
    C(NOV22, "国庆至今", [("国庆至今", days(2026, 10, 1, 2026, 11, 22))], id="国庆至今"),
    C(NOV22, "十四号", [("十四号", day(2026, 11, 14))], id="十四号-not-四号"),
    # --- edge: DST in New York ---
    C(DST_ON, "昨天", [("昨天", day(2026, 3, 8, NY))], id="dst-on-昨天-23h"),
    C(DST_ON, "前天", [("前天", day(2026, 3, 7, NY))], id="dst-on-前天"),
    C(DST_ON, "上周", [("上周", week(2026, 3, 2, NY))], id="dst-on-上周"),
    C(DST_ON, "最近24小时", [("最近24小时", (datetime(2026, 3, 8, 10, 0, tzinfo=NY), DST_ON))], id="dst-on-最近24小时"),
    C(DST_ON, "最近3天", [("最近3天", (datetime(2026, 3, 6, 9, 0, tzinfo=NY), DST_ON))], id="dst-on-最近3天"),
    C(DST_ON, "昨晚", [("昨晚", hours(2026, 3, 8, 18, 29, NY))], id="dst-on-昨晚"),
    C(DST_OFF, "昨天", [("昨天", day(2026, 11, 1, NY))], id="dst-off-昨天-25h"),
    C(DST_OFF, "最近3天", [("最近3天", (datetime(2026, 10, 30, 11, 0, tzinfo=NY), DST_OFF))], id="dst-off-最近3天"),
    C(DST_OFF, "上周末", [("上周末", days(2026, 10, 31, 2026, 11, 1, NY))], id="dst-off-上周末"),
    C(DST_OFF, "上个月", [("上个月", month(2026, 10, NY))], id="dst-off-上个月"),
]


@pytest.mark.parametrize("now, text, expected", CASES)
def test_zh(now: datetime, text: str, expected: Expected) -> None:
    assert_parses(text, now=now, expected=expected)


def test_dst_day_lengths() -> None:
    (got,) = parse_time_ranges("昨天", now=DST_ON)
    assert utc_length(got) == timedelta(hours=23)
    (got,) = parse_time_ranges("昨天", now=DST_OFF)
    assert utc_length(got) == timedelta(hours=25)
    (got,) = parse_time_ranges("最近24小时", now=DST_ON)
    assert utc_length(got) == timedelta(hours=24)


def test_naive_now_raises() -> None:
    with pytest.raises(TimeExpressionError):
        parse_time_ranges("昨天", now=datetime(2026, 3, 18, 12, 0))


def test_deterministic_and_ordered() -> None:
    text = "前天晚上和昨天，还有上周三"
    a = parse_time_ranges(text, now=WED)
    b = parse_time_ranges(text, now=WED)
    assert a == b
    assert [g.span[0] for g in a] == sorted(g.span[0] for g in a)
    assert [g.text for g in a] == ["前天晚上", "昨天", "上周三"]


def test_import_prints_nothing() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import engine.timeparse as t; from datetime import datetime; "
         "from zoneinfo import ZoneInfo; t.parse_time_ranges('上半年', now=datetime(2026,3,18,tzinfo=ZoneInfo('Asia/Shanghai')))"],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout == ""
