"""English time expressions: table-driven, gold values from calendar arithmetic.

Expected ranges are written by hand (helpers below only build datetimes for a
stated calendar day / week / month); they never call the parser's helpers.
Calendar facts used: 2026-03-18 is a Wednesday; 2026-01-01 a Thursday;
2028-02-29 a Tuesday; 2026-06-01 a Monday; US DST 2026 starts 03-08, ends 11-01.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from engine.timeparse import TimeExpressionError, parse_time_ranges

from timeparse_gold import (
    DST_OFF,
    DST_ON,
    MON,
    NEWYEAR,
    NY,
    SH,
    SUN,
    WED,
    back,
    day,
    days,
    hours,
    month,
    week,
    year,
)

C = pytest.param
WED_NY = datetime(2026, 3, 18, 14, 30, tzinfo=NY)
NEWYEAR_NY = datetime(2026, 1, 1, 0, 5, tzinfo=NY)
LEAP_NY = datetime(2028, 2, 29, 10, 0, tzinfo=NY)
AFTER_LEAP_NY = datetime(2028, 3, 1, 0, 10, tzinfo=NY)
DST_DAY = datetime(2026, 3, 8, 12, 0, tzinfo=NY)  # the 23-hour day itself
NOV22 = datetime(2026, 11, 22, 20, 30, tzinfo=SH)  # Sunday evening; October has 31 days, November 30

CASES = [
    # --- relative days and parts ---
    C(WED, "today", [("today", day(2026, 3, 18))], id="today"),
    C(WED, "yesterday", [("yesterday", day(2026, 3, 17))], id="yesterday"),
    C(WED, "the day before yesterday", [("day before yesterday", day(2026, 3, 16))], id="the-day-before-yesterday"),
    C(WED, "day before yesterday", [("day before yesterday", day(2026, 3, 16))], id="day-before-yesterday"),
    C(WED, "tomorrow", [("tomorrow", day(2026, 3, 19))], id="tomorrow"),
    C(WED, "the day after tomorrow", [("day after tomorrow", day(2026, 3, 20))], id="day-after-tomorrow"),
    C(WED, "What did we talk about yesterday?", [("yesterday", day(2026, 3, 17))], id="sentence-yesterday"),
    C(WED, "Yesterday was fun", [("Yesterday", day(2026, 3, 17))], id="capital-Yesterday"),
    C(WED, "tonight", [("tonight", hours(2026, 3, 18, 18, 24))], id="tonight"),
    C(WED, "last night", [("last night", hours(2026, 3, 17, 18, 24))], id="last-night"),
    C(WED, "this morning", [("this morning", hours(2026, 3, 18, 5, 12))], id="this-morning"),
    C(WED, "this afternoon", [("this afternoon", hours(2026, 3, 18, 12, 18))], id="this-afternoon"),
    C(WED, "this evening", [("this evening", hours(2026, 3, 18, 18, 24))], id="this-evening"),
    C(WED, "yesterday morning", [("yesterday morning", hours(2026, 3, 17, 5, 12))], id="yesterday-morning"),
    C(WED, "yesterday afternoon", [("yesterday afternoon", hours(2026, 3, 17, 12, 18))], id="yesterday-afternoon"),
    C(WED, "yesterday evening", [("yesterday evening", hours(2026, 3, 17, 18, 24))], id="yesterday-evening"),
    C(WED, "tomorrow morning", [("tomorrow morning", hours(2026, 3, 19, 5, 12))], id="tomorrow-morning"),
    C(WED, "Monday night", [("Monday night", hours(2026, 3, 16, 18, 24))], id="monday-night"),
    C(WED, "on Tuesday afternoon", [("Tuesday afternoon", hours(2026, 3, 17, 12, 18))], id="on-tuesday-afternoon"),
    C(WED, "yesterday in the afternoon", [("yesterday", hours(2026, 3, 17, 12, 18))], id="yesterday-in-the-afternoon"),
    C(WED, "yesterday at noon", [("yesterday", hours(2026, 3, 17, 11, 13))], id="yesterday-at-noon"),
    # --- clock ---
    C(WED, "at 3pm yesterday", [("3pm yesterday", hours(2026, 3, 17, 15, 16))], id="at-3pm-yesterday"),
    C(WED, "yesterday at 3pm", [("yesterday at 3pm", hours(2026, 3, 17, 15, 16))], id="yesterday-at-3pm"),
    C(WED, "yesterday at 3:30 pm", [("yesterday", hours(2026, 3, 17, 15, 16))], id="yesterday-at-3:30pm"),
    C(WED, "at 9am", [("9am", hours(2026, 3, 18, 9, 10))], id="at-9am-today"),
    C(WED, "at 15:00", [("15:00", hours(2026, 3, 18, 15, 16))], id="at-15:00"),
    C(WED, "last Friday at 8 p.m.", [("last Friday", hours(2026, 3, 13, 20, 21))], id="last-friday-8pm"),
    C(WED, "yesterday at 12am", [("yesterday", hours(2026, 3, 17, 0, 1))], id="12am-is-midnight"),
    C(WED, "yesterday at 12pm", [("yesterday", hours(2026, 3, 17, 12, 13))], id="12pm-is-noon"),
    # --- weeks ---
    C(WED, "last week", [("last week", week(2026, 3, 9))], id="last-week"),
    C(WED, "this week", [("this week", week(2026, 3, 16))], id="this-week"),
    C(WED, "next week", [("next week", week(2026, 3, 23))], id="next-week"),
    C(WED, "the week before last", [("week before last", week(2026, 3, 2))], id="week-before-last"),
    C(WED, "the previous week", [("previous week", week(2026, 3, 9))], id="previous-week"),
    C(WED, "earlier this week", [("this week", week(2026, 3, 16))], id="earlier-this-week"),
    # --- weekends ---
    C(WED, "last weekend", [("last weekend", days(2026, 3, 14, 2026, 3, 15))], id="last-weekend"),
    C(WED, "this weekend", [("this weekend", days(2026, 3, 21, 2026, 3, 22))], id="this-weekend"),
    C(WED, "the weekend", [("weekend", days(2026, 3, 14, 2026, 3, 15))], id="the-weekend"),
    C(WED, "over the weekend", [("weekend", days(2026, 3, 14, 2026, 3, 15))], id="over-the-weekend"),
    C(WED, "the weekend before last", [("weekend before last", days(2026, 3, 7, 2026, 3, 8))], id="weekend-before-last"),
    C(WED, "How was your weekend?", [("weekend", days(2026, 3, 14, 2026, 3, 15))], id="your-weekend"),
    # --- weekdays ---
    C(WED, "last Wednesday", [("last Wednesday", day(2026, 3, 11))], id="last-wednesday-is-a-week-ago"),
    C(WED, "on Wednesday", [("Wednesday", day(2026, 3, 18))], id="on-wednesday-today"),
    C(WED, "Wednesday", [("Wednesday", day(2026, 3, 18))], id="bare-wednesday-today"),
    C(WED, "this Wednesday", [("this Wednesday", day(2026, 3, 18))], id="this-wednesday"),
    C(WED, "next Wednesday", [("next Wednesday", day(2026, 3, 25))], id="next-wednesday"),
    C(WED, "last Monday", [("last Monday", day(2026, 3, 16))], id="last-monday"),
    C(WED, "Monday", [("Monday", day(2026, 3, 16))], id="bare-monday"),
    C(WED, "on Friday", [("Friday", day(2026, 3, 13))], id="on-friday"),
    C(WED, "this Friday", [("this Friday", day(2026, 3, 20))], id="this-friday"),
    C(WED, "last Sunday", [("last Sunday", day(2026, 3, 15))], id="last-sunday"),
    C(WED, "Sunday", [("Sunday", day(2026, 3, 15))], id="bare-sunday"),
    C(WED, "on Sat", [("Sat", day(2026, 3, 14))], id="on-sat"),
    C(WED, "last Thurs", [("last Thurs", day(2026, 3, 12))], id="last-thurs"),
    C(WED, "wednesday last week", [("wednesday last week", day(2026, 3, 11))], id="wednesday-last-week"),
    C(WED, "friday of last week", [("friday of last week", day(2026, 3, 13))], id="friday-of-last-week"),
    C(WED, "on Thursday", [("Thursday", day(2026, 3, 12))], id="on-thursday"),
    # --- months and years ---
    C(WED, "last month", [("last month", month(2026, 2))], id="last-month"),
    C(WED, "this month", [("this month", month(2026, 3))], id="this-month"),
    C(WED, "next month", [("next month", month(2026, 4))], id="next-month"),
    C(WED, "the month before last", [("month before last", month(2026, 1))], id="month-before-last"),
    C(WED, "last year", [("last year", year(2025))], id="last-year"),
    C(WED, "this year", [("this year", year(2026))], id="this-year"),
    C(WED, "the year before last", [("year before last", year(2024))], id="year-before-last"),
    C(WED, "in 2024", [("2024", year(2024))], id="in-2024"),
    C(WED, "in April", [("April", month(2025, 4))], id="in-april"),
    C(WED, "April", [("April", month(2025, 4))], id="bare-april"),
    C(WED, "in March", [("March", month(2026, 3))], id="in-march-current"),
    C(WED, "in May", [("May", month(2025, 5))], id="in-may"),
    C(WED, "April 2025", [("April 2025", month(2025, 4))], id="april-2025"),
    C(WED, "December", [("December", month(2025, 12))], id="december"),
    C(WED, "in Dec", [("Dec", month(2025, 12))], id="in-dec"),
    C(WED, "last April", [("last April", month(2025, 4))], id="last-april"),
    C(WED, "last February", [("last February", month(2026, 2))], id="last-february"),
    C(WED, "this April", [("this April", month(2026, 4))], id="this-april"),
    C(WED, "back in September", [("September", month(2025, 9))], id="back-in-september"),
    C(WED, "We met in early June", [("early June", days(2025, 6, 1, 2025, 6, 10))], id="early-june"),
    # --- explicit dates ---
    C(WED, "May 3", [("May 3", day(2025, 5, 3))], id="may-3"),
    C(WED, "May 3rd", [("May 3rd", day(2025, 5, 3))], id="may-3rd"),
    C(WED, "May 3, 2025", [("May 3, 2025", day(2025, 5, 3))], id="may-3-2025"),
    C(WED, "3 May", [("3 May", day(2025, 5, 3))], id="3-may"),
    C(WED, "the 3rd of May", [("3rd of May", day(2025, 5, 3))], id="3rd-of-may"),
    C(WED, "March 18", [("March 18", day(2026, 3, 18))], id="march-18-today"),
    C(WED, "March 19", [("March 19", day(2025, 3, 19))], id="march-19-last-year"),
    C(WED, "Dec 25", [("Dec 25", day(2025, 12, 25))], id="dec-25"),
    C(WED, "Sept. 9th", [("Sept. 9th", day(2025, 9, 9))], id="sept-9th"),
    C(WED, "2025-05-03", [("2025-05-03", day(2025, 5, 3))], id="iso"),
    C(WED, "2025/5/3", [("2025/5/3", day(2025, 5, 3))], id="ymd-slash"),
    C(WED, "5/3", [("5/3", day(2025, 5, 3))], id="m/d"),
    C(WED, "on 3/17", [("3/17", day(2026, 3, 17))], id="m/d-this-year"),
    C(WED, "12/25/2024", [("12/25/2024", day(2024, 12, 25))], id="m/d/y"),
    C(WED, "on the 3rd", [("the 3rd", day(2026, 3, 3))], id="on-the-3rd"),
    C(WED, "on the 20th", [("the 20th", day(2026, 2, 20))], id="on-the-20th-previous-month"),
    # --- explicit ranges ---
    C(WED, "from May 1 to May 3", [("May 1 to May 3", days(2025, 5, 1, 2025, 5, 3))], id="from-may1-to-may3"),
    C(WED, "between May 1 and 3", [("May 1 and 3", days(2025, 5, 1, 2025, 5, 3))], id="between-may1-and-3"),
    C(WED, "May 1-3", [("May 1-3", days(2025, 5, 1, 2025, 5, 3))], id="may-1-3"),
    C(WED, "May 28 - June 2", [("May 28 - June 2", days(2025, 5, 28, 2025, 6, 2))], id="may28-june2"),
    C(WED, "from Monday to Wednesday", [("Monday to Wednesday", days(2026, 3, 16, 2026, 3, 18))], id="monday-to-wednesday"),
    C(WED, "March 1-5", [("March 1-5", days(2026, 3, 1, 2026, 3, 5))], id="march-1-5"),
    C(WED, "from March 10 to March 12", [("March 10 to March 12", days(2026, 3, 10, 2026, 3, 12))], id="march10-to-12"),
    C(WED, "between March 2 and March 4", [("March 2 and March 4", days(2026, 3, 2, 2026, 3, 4))], id="between-march2-and-march4"),
    # --- rolling windows ---
    C(WED, "past 3 days", [("past 3 days", back(WED, days=3))], id="past-3-days"),
    C(WED, "the last 3 days", [("last 3 days", back(WED, days=3))], id="the-last-3-days"),
    C(WED, "in the past 3 days", [("past 3 days", back(WED, days=3))], id="in-the-past-3-days"),
    C(WED, "last 5 days", [("last 5 days", back(WED, days=5))], id="last-5-days"),
    C(WED, "in the past 24 hours", [("past 24 hours", back(WED, hours=24))], id="past-24-hours"),
    C(WED, "the past week", [("past week", back(WED, days=7))], id="the-past-week-rolling"),
    C(WED, "over the past two weeks", [("past two weeks", back(WED, weeks=2))], id="past-two-weeks"),
    C(WED, "the last few days", [("last few days", back(WED, days=3))], id="last-few-days"),
    C(WED, "the past couple of days", [("past couple of days", back(WED, days=2))], id="past-couple-of-days"),
    C(WED, "recently", [("recently", back(WED, days=7))], id="recently"),
    C(WED, "lately", [("lately", back(WED, days=7))], id="lately"),
    C(WED, "the past month", [("past month", (datetime(2026, 2, 18, 14, 30, tzinfo=SH), WED))], id="past-month"),
    # --- N units ago / ahead ---
    C(WED, "3 days ago", [("3 days ago", day(2026, 3, 15))], id="3-days-ago"),
    C(WED, "three days ago", [("three days ago", day(2026, 3, 15))], id="three-days-ago"),
    C(WED, "a day ago", [("a day ago", day(2026, 3, 17))], id="a-day-ago"),
    C(WED, "ten days ago", [("ten days ago", day(2026, 3, 8))], id="ten-days-ago"),
    C(WED, "2 weeks ago", [("2 weeks ago", week(2026, 3, 2))], id="2-weeks-ago"),
    C(WED, "a week ago", [("a week ago", week(2026, 3, 9))], id="a-week-ago"),
    C(WED, "two months ago", [("two months ago", month(2026, 1))], id="two-months-ago"),
    C(WED, "a month ago", [("a month ago", month(2026, 2))], id="a-month-ago"),
    C(WED, "a year ago", [("a year ago", year(2025))], id="a-year-ago"),
    C(WED, "2 years ago", [("2 years ago", year(2024))], id="2-years-ago"),
    C(WED, "a few days ago", [("a few days ago", days(2026, 3, 11, 2026, 3, 17))], id="a-few-days-ago"),
    C(WED, "the other day", [("the other day", days(2026, 3, 11, 2026, 3, 17))], id="the-other-day"),
    C(WED, "in 3 days", [("in 3 days", day(2026, 3, 21))], id="in-3-days"),
    # --- festivals ---
    C(WED, "Christmas", [("Christmas", day(2025, 12, 25))], id="christmas"),
    C(WED, "on Christmas Eve", [("Christmas Eve", day(2025, 12, 24))], id="christmas-eve"),
    C(WED, "last Christmas", [("last Christmas", day(2025, 12, 25))], id="last-christmas"),
    C(WED, "Christmas 2024", [("Christmas 2024", day(2024, 12, 25))], id="christmas-2024"),
    C(WED, "New Year's Day", [("New Year's Day", day(2026, 1, 1))], id="new-years-day"),
    C(WED, "New Year's Eve", [("New Year's Eve", day(2025, 12, 31))], id="new-years-eve"),
    C(WED, "Valentine's Day", [("Valentine's Day", day(2026, 2, 14))], id="valentines"),
    C(WED, "Halloween", [("Halloween", day(2025, 10, 31))], id="halloween"),
    C(WED, "Thanksgiving", [("Thanksgiving", day(2025, 11, 27))], id="thanksgiving"),
    C(WED, "Easter", [("Easter", day(2025, 4, 20))], id="easter"),
    C(WED, "Chinese New Year", [("Chinese New Year", day(2026, 2, 17))], id="chinese-new-year"),
    C(WED, "Mother's Day", [("Mother's Day", day(2025, 5, 11))], id="mothers-day"),
    C(WED, "Mid-Autumn Festival", [("Mid-Autumn Festival", day(2025, 10, 6))], id="mid-autumn"),
    # --- several expressions ---
    C(WED, "yesterday and the day before", [("yesterday", day(2026, 3, 17)), ("the day before", day(2026, 3, 16))],
      id="yesterday-and-the-day-before"),
    C(WED, "last Monday and last Tuesday", [("last Monday", day(2026, 3, 16)), ("last Tuesday", day(2026, 3, 17))],
      id="two-weekdays"),
    C(WED, "Monday or Tuesday", [("Monday", day(2026, 3, 16)), ("Tuesday", day(2026, 3, 17))], id="monday-or-tuesday"),
    C(WED, "last week and this week", [("last week", week(2026, 3, 9)), ("this week", week(2026, 3, 16))],
      id="last-week-and-this-week"),
    C(WED, "today and yesterday", [("today", day(2026, 3, 18)), ("yesterday", day(2026, 3, 17))], id="today-and-yesterday"),
    C(WED, "I may go tomorrow", [("tomorrow", day(2026, 3, 19))], id="may-modal-with-tomorrow"),
    # --- must not fire ---
    C(WED, "we should talk", [], id="neg-we"),
    C(WED, "I may be late", [], id="neg-may-modal"),
    C(WED, "May I ask something?", [], id="neg-May-sentence-start"),
    C(WED, "they march on", [], id="neg-march-verb"),
    C(WED, "She sat down", [], id="neg-sat"),
    C(WED, "the sun is out", [], id="neg-sun"),
    C(WED, "wait a second", [], id="neg-second"),
    C(WED, "now", [], id="neg-now"),
    C(WED, "right now I'm busy", [], id="neg-right-now"),
    C(WED, "we went there", [], id="neg-we-went"),
    C(WED, "every day", [], id="neg-every-day"),
    C(WED, "three days", [], id="neg-three-days"),
    C(WED, "Good morning!", [], id="neg-good-morning"),
    C(WED, "I have 3 cats", [], id="neg-number"),
    C(WED, "Mondays are hard", [], id="neg-plural-mondays"),
    C(WED, "how are you doing", [], id="neg-chitchat"),
    C(WED, "at least", [], id="neg-at-least"),
    C(WED, "We'll meet on the 5th floor", [], id="neg-5th-floor"),
    C(WED, "I'll be there at 3", [], id="neg-bare-at-3"),
    # --- day of month inside a relative month / weekday inside a week (NOV22 = Sunday 2026-11-22) ---
    C(NOV22, "what did I say the 10th of last month?", [("the 10th of last month", day(2026, 10, 10))], id="10th-of-last-month"),
    C(NOV22, "last month on the 10th", [("last month on the 10th", day(2026, 10, 10))], id="last-month-on-the-10th"),
    C(NOV22, "on the 10th last month", [("on the 10th last month", day(2026, 10, 10))], id="on-the-10th-last-month"),
    C(NOV22, "from the 10th to the 15th of last month", [("the 10th to the 15th of last month", days(2026, 10, 10, 2026, 10, 15))],
      id="10th-to-15th-of-last-month"),
    C(NOV22, "10th-15th of last month", [("10th-15th of last month", days(2026, 10, 10, 2026, 10, 15))], id="10th-15th-of-last-month"),
    C(NOV22, "the 3rd of this month", [("the 3rd of this month", day(2026, 11, 3))], id="3rd-of-this-month"),
    C(NOV22, "the 5th of the month before last", [("5th of the month before last", day(2026, 9, 5))], id="5th-month-before-last"),
    C(NOV22, "Tuesday night last week", [("Tuesday night last week", hours(2026, 11, 10, 18, 24))], id="tuesday-night-last-week"),
    C(NOV22, "last week on Monday", [("last week on Monday", day(2026, 11, 9))], id="last-week-on-monday"),
    C(NOV22, "earlier this month", [("this month", month(2026, 11))], id="earlier-this-month-whole-month"),
    C(NEWYEAR_NY, "the 25th of last month", [("25th of last month", day(2025, 12, 25, NY))], id="newyear-25th-of-last-month"),
    C(DST_OFF, "the 1st of this month", [("1st of this month", day(2026, 11, 1, NY))], id="dst-off-1st-of-this-month-25h"),
    C(DST_ON, "the 8th of this month", [("8th of this month", day(2026, 3, 8, NY))], id="dst-on-8th-of-this-month-23h"),
    C(NOV22, "from Monday to Wednesday last week", [("Monday to Wednesday last week", days(2026, 11, 9, 2026, 11, 11))],
      id="monday-to-wednesday-last-week"),
    C(NOV22, "the 10th of last month at 3pm", [("10th of last month at 3pm", hours(2026, 10, 10, 15, 16))],
      id="10th-of-last-month-at-3pm"),
    C(NOV22, "on the 10th of last month in the evening", [("10th of last month in the evening", hours(2026, 10, 10, 18, 24))],
      id="10th-of-last-month-evening"),
    C(NOV22, "last Saturday night around 11", [("last Saturday night around 11", hours(2026, 11, 21, 22, 25))],
      id="last-saturday-night-around-11"),
    C(NOV22, "the 10th and the 12th of last month", [("the 10th", day(2026, 10, 10)), ("12th of last month", day(2026, 10, 12))],
      id="10th-and-12th-of-last-month"),
    C(NOV22, "May 3 and the 5th", [("May 3", day(2026, 5, 3)), ("the 5th", day(2026, 5, 5))], id="may-3-and-the-5th"),
    C(NOV22, "I'll be there around 3", [], id="neg-around-bare-3"),
    # --- parts of a month: early 1-10, mid 11-20, late 21-end ---
    C(NOV22, "early last month", [("early last month", days(2026, 10, 1, 2026, 10, 10))], id="early-last-month"),
    C(NOV22, "late last month", [("late last month", days(2026, 10, 21, 2026, 10, 31))], id="late-last-month"),
    C(NOV22, "mid last month", [("mid last month", days(2026, 10, 11, 2026, 10, 20))], id="mid-last-month"),
    C(NOV22, "in the middle of last month", [("middle of last month", days(2026, 10, 11, 2026, 10, 20))], id="middle-of-last-month"),
    C(NOV22, "at the beginning of last month", [("beginning of last month", days(2026, 10, 1, 2026, 10, 10))], id="beginning-of-last-month"),
    C(NOV22, "at the end of last month", [("end of last month", days(2026, 10, 21, 2026, 10, 31))], id="end-of-last-month"),
    C(NOV22, "the end of the month", [("end of the month", days(2026, 11, 21, 2026, 11, 30))], id="end-of-the-month"),
    C(NOV22, "early October", [("early October", days(2026, 10, 1, 2026, 10, 10))], id="early-october"),
    C(NOV22, "mid-October", [("mid-October", days(2026, 10, 11, 2026, 10, 20))], id="mid-october"),
    C(NOV22, "the end of October 2025", [("end of October 2025", days(2025, 10, 21, 2025, 10, 31))], id="end-of-october-2025"),
    C(NOV22, "I was late last month", [("last month", month(2026, 10))], id="was-late-is-not-a-month-part"),
    C(NEWYEAR_NY, "late last month", [("late last month", days(2025, 12, 21, 2025, 12, 31, NY))], id="newyear-late-last-month"),
    C(LEAP_NY, "the end of the month", [("end of the month", days(2028, 2, 21, 2028, 2, 29, NY))], id="leap-end-of-the-month"),
    C(DST_OFF, "early last month", [("early last month", days(2026, 10, 1, 2026, 10, 10, NY))], id="dst-off-early-last-month"),
    # --- weeks of a month: week n = days 7n-6..7n, last = the final 7 days ---
    C(NOV22, "the first week of October", [("first week of October", days(2026, 10, 1, 2026, 10, 7))], id="first-week-of-october"),
    C(NOV22, "the last week of last month", [("last week of last month", days(2026, 10, 25, 2026, 10, 31))], id="last-week-of-last-month"),
    C(NOV22, "the second week of this month", [("second week of this month", days(2026, 11, 8, 2026, 11, 14))], id="second-week-of-this-month"),
    # --- the same day in another period ---
    C(NOV22, "this time last year", [("this time last year", days(2025, 11, 15, 2025, 11, 29))], id="this-time-last-year"),
    C(NOV22, "this time last month", [("this time last month", days(2026, 10, 19, 2026, 10, 25))], id="this-time-last-month"),
    C(NOV22, "this time last week", [("this time last week", day(2026, 11, 15))], id="this-time-last-week"),
    C(NOV22, "this day last year", [("this day last year", day(2025, 11, 22))], id="this-day-last-year"),
    C(NOV22, "a week ago today", [("a week ago today", day(2026, 11, 15))], id="a-week-ago-today"),
    C(NOV22, "a week ago yesterday", [("a week ago yesterday", day(2026, 11, 14))], id="a-week-ago-yesterday"),
    C(NOV22, "a year ago today", [("a year ago today", day(2025, 11, 22))], id="a-year-ago-today"),
    C(LEAP_NY, "this day last year", [("this day last year", day(2027, 2, 28, NY))], id="leap-this-day-last-year-clamps"),
    C(NOV22, "the night before last", [("the night before last", hours(2026, 11, 20, 18, 24))], id="night-before-last"),
    C(NOV22, "two weekends ago", [("two weekends ago", days(2026, 11, 7, 2026, 11, 8))], id="two-weekends-ago"),
    C(SUN, "two weekends ago", [("two weekends ago", days(2026, 3, 7, 2026, 3, 8))], id="sun-two-weekends-ago"),
    C(MON, "two weekends ago", [("two weekends ago", days(2026, 3, 7, 2026, 3, 8))], id="mon-two-weekends-ago"),
    C(NOV22, "over the weekend before last", [("weekend before last", days(2026, 11, 7, 2026, 11, 8))], id="over-the-weekend-before-last"),
    C(NOV22, "the Monday before last", [("the Monday before last", day(2026, 11, 9))], id="monday-before-last"),
    C(MON, "the Monday before last", [("the Monday before last", day(2026, 3, 2))], id="mon-monday-before-last"),
    # "N <weekday>s ago" counts like "last <weekday>" = one ago: Sunday 11-22 -> Fridays 11-20, 11-13.
    C(NOV22, "remember what I said two Fridays ago?", [("two Fridays ago", day(2026, 11, 13))], id="two-fridays-ago"),
    C(NOV22, "3 Sundays ago", [("3 Sundays ago", day(2026, 11, 1))], id="three-sundays-ago-on-sunday"),
    C(MON, "two Mondays ago", [("two Mondays ago", day(2026, 3, 2))], id="two-mondays-ago-on-monday"),
    # --- approximately: a day +-3 days, an hour +-1 hour ---
    C(NOV22, "around the 10th", [("around the 10th", days(2026, 11, 7, 2026, 11, 13))], id="around-the-10th"),
    C(NOV22, "around Christmas", [("around Christmas", days(2025, 12, 22, 2025, 12, 28))], id="around-christmas"),
    C(NOV22, "around October 10", [("around October 10", days(2026, 10, 7, 2026, 10, 13))], id="around-october-10"),
    C(NOV22, "around 3pm yesterday", [("around 3pm yesterday", hours(2026, 11, 21, 14, 17))], id="around-3pm-yesterday"),
    C(NOV22, "at about 3 yesterday afternoon", [("about 3 yesterday afternoon", hours(2026, 11, 21, 14, 17))],
      id="about-3-yesterday-afternoon"),
    C(NOV22, "what did we talk about yesterday", [("yesterday", day(2026, 11, 21))], id="talk-about-yesterday-not-approx"),
    # --- must not fire (new families) ---
    C(NOV22, "on the 10th floor", [], id="neg-10th-floor"),
    C(NOV22, "for the 10th time", [], id="neg-10th-time"),
    C(NOV22, "the 2nd time", [], id="neg-2nd-time"),
    C(NOV22, "it's just around the corner", [], id="neg-around-the-corner"),
    C(NOV22, "roughly 10 people came", [], id="neg-roughly-10-people"),
    C(NOV22, "my 5th book", [], id="neg-5th-book"),
    # --- edge: year boundary (New York) ---
    C(NEWYEAR_NY, "yesterday", [("yesterday", day(2025, 12, 31, NY))], id="newyear-yesterday"),
    C(NEWYEAR_NY, "last week", [("last week", week(2025, 12, 22, NY))], id="newyear-last-week"),
    C(NEWYEAR_NY, "this week", [("this week", week(2025, 12, 29, NY))], id="newyear-this-week"),
    C(NEWYEAR_NY, "last month", [("last month", month(2025, 12, NY))], id="newyear-last-month"),
    C(NEWYEAR_NY, "last year", [("last year", year(2025, NY))], id="newyear-last-year"),
    C(NEWYEAR_NY, "Dec 25", [("Dec 25", day(2025, 12, 25, NY))], id="newyear-dec-25"),
    C(NEWYEAR_NY, "Christmas", [("Christmas", day(2025, 12, 25, NY))], id="newyear-christmas"),
    C(NEWYEAR_NY, "New Year's Day", [("New Year's Day", day(2026, 1, 1, NY))], id="newyear-new-years-day"),
    C(NEWYEAR_NY, "in December", [("December", month(2025, 12, NY))], id="newyear-december"),
    C(NEWYEAR_NY, "January", [("January", month(2026, 1, NY))], id="newyear-january"),
    C(NEWYEAR, "yesterday", [("yesterday", day(2025, 12, 31))], id="newyear-sh-yesterday"),
    C(NEWYEAR, "last month", [("last month", month(2025, 12))], id="newyear-sh-last-month"),
    # --- edge: leap day ---
    C(LEAP_NY, "yesterday", [("yesterday", day(2028, 2, 28, NY))], id="leap-yesterday"),
    C(LEAP_NY, "Feb 29", [("Feb 29", day(2028, 2, 29, NY))], id="leap-feb-29"),
    C(LEAP_NY, "last month", [("last month", month(2028, 1, NY))], id="leap-last-month"),
    C(LEAP_NY, "this week", [("this week", week(2028, 2, 28, NY))], id="leap-this-week"),
    C(LEAP_NY, "last Tuesday", [("last Tuesday", day(2028, 2, 22, NY))], id="leap-last-tuesday"),
    C(AFTER_LEAP_NY, "yesterday", [("yesterday", day(2028, 2, 29, NY))], id="after-leap-yesterday"),
    C(AFTER_LEAP_NY, "last month", [("last month", month(2028, 2, NY))], id="after-leap-last-month"),
    C(AFTER_LEAP_NY, "February 29", [("February 29", day(2028, 2, 29, NY))], id="after-leap-february-29"),
    C(AFTER_LEAP_NY, "the day before yesterday", [("day before yesterday", day(2028, 2, 28, NY))], id="after-leap-dby"),
    # --- edge: Monday / Sunday ---
    C(MON, "last week", [("last week", week(2026, 3, 9))], id="mon-last-week"),
    C(MON, "on Monday", [("Monday", day(2026, 3, 16))], id="mon-on-monday-today"),
    C(MON, "last Monday", [("last Monday", day(2026, 3, 9))], id="mon-last-monday"),
    C(MON, "this weekend", [("this weekend", days(2026, 3, 21, 2026, 3, 22))], id="mon-this-weekend"),
    C(MON, "the weekend", [("weekend", days(2026, 3, 14, 2026, 3, 15))], id="mon-the-weekend"),
    C(MON, "last weekend", [("last weekend", days(2026, 3, 14, 2026, 3, 15))], id="mon-last-weekend"),
    C(SUN, "last week", [("last week", week(2026, 3, 9))], id="sun-last-week"),
    C(SUN, "this week", [("this week", week(2026, 3, 16))], id="sun-this-week"),
    C(SUN, "the weekend", [("weekend", days(2026, 3, 21, 2026, 3, 22))], id="sun-the-weekend-current"),
    C(SUN, "last weekend", [("last weekend", days(2026, 3, 14, 2026, 3, 15))], id="sun-last-weekend"),
    C(SUN, "Sunday", [("Sunday", day(2026, 3, 22))], id="sun-sunday-today"),
    C(SUN, "last Sunday", [("last Sunday", day(2026, 3, 15))], id="sun-last-sunday"),
    C(SUN, "this Sunday", [("this Sunday", day(2026, 3, 22))], id="sun-this-sunday"),
    C(SUN, "last night", [("last night", hours(2026, 3, 21, 18, 24))], id="sun-last-night"),
    C(SUN, "tonight", [("tonight", hours(2026, 3, 22, 18, 24))], id="sun-tonight"),
    # --- edge: DST in New York ---
    C(DST_ON, "yesterday", [("yesterday", day(2026, 3, 8, NY))], id="dst-on-yesterday"),
    C(DST_ON, "last week", [("last week", week(2026, 3, 2, NY))], id="dst-on-last-week"),
    C(DST_ON, "past 24 hours", [("past 24 hours", (datetime(2026, 3, 8, 10, 0, tzinfo=NY), DST_ON))], id="dst-on-past-24h"),
    C(DST_ON, "past 3 days", [("past 3 days", (datetime(2026, 3, 6, 9, 0, tzinfo=NY), DST_ON))], id="dst-on-past-3-days"),
    C(DST_ON, "last night", [("last night", hours(2026, 3, 8, 18, 24, NY))], id="dst-on-last-night"),
    C(DST_DAY, "today", [("today", day(2026, 3, 8, NY))], id="dst-day-today"),
    C(DST_DAY, "this morning", [("this morning", hours(2026, 3, 8, 5, 12, NY))], id="dst-day-this-morning"),
    C(DST_OFF, "yesterday", [("yesterday", day(2026, 11, 1, NY))], id="dst-off-yesterday"),
    C(DST_OFF, "past 3 days", [("past 3 days", (datetime(2026, 10, 30, 11, 0, tzinfo=NY), DST_OFF))], id="dst-off-past-3-days"),
    C(DST_OFF, "past 24 hours", [("past 24 hours", (datetime(2026, 11, 1, 10, 0, tzinfo=NY), DST_OFF))], id="dst-off-past-24h"),
    C(DST_OFF, "last weekend", [("last weekend", days(2026, 10, 31, 2026, 11, 1, NY))], id="dst-off-last-weekend"),
    C(DST_OFF, "Halloween", [("Halloween", day(2026, 10, 31, NY))], id="dst-off-halloween"),
    C(WED_NY, "yesterday", [("yesterday", day(2026, 3, 17, NY))], id="ny-yesterday"),
]


@pytest.mark.parametrize("now, text, expected", CASES)
def test_en(now: datetime, text: str, expected: list[tuple[str, tuple[datetime, datetime]]]) -> None:
    got = parse_time_ranges(text, now=now)
    assert [(g.start, g.end) for g in got] == [rng for _, rng in expected], [
        (g.text, g.start.isoformat(), g.end.isoformat()) for g in got
    ]
    for g, (frag, _) in zip(got, expected):
        assert frag.lower() in g.text.lower() or g.text.lower() in frag.lower(), (g.text, frag)
        assert text[g.span[0] : g.span[1]] == g.text


def test_dst_lengths() -> None:
    (got,) = parse_time_ranges("today", now=DST_DAY)
    assert got.end.astimezone(timezone.utc) - got.start.astimezone(timezone.utc) == timedelta(hours=23)
    (got,) = parse_time_ranges("last weekend", now=DST_OFF)
    assert got.end.astimezone(timezone.utc) - got.start.astimezone(timezone.utc) == timedelta(hours=49)


def test_naive_now_raises() -> None:
    with pytest.raises(TimeExpressionError):
        parse_time_ranges("yesterday", now=datetime(2026, 3, 18, 12, 0))
