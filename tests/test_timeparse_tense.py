"""Write-time resolution of yearless dates, bare weekdays and bare days of the month in statements: a sentence
about the future means the coming occurrence, one about the past the most recent one, even when the coming one
is within the parser's week of look-ahead; a date with no tense cue the nearest one; a bare day after a date
that named its month that month's; and a question about a time before today stores none. Every row of the
tables is tested by its example in test_timeparse_tense_rules.py, sentences written apart from the rules in
test_timeparse_tense_heldout.py."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from engine.stores.diary.dates import resolve_dates

TZ = ZoneInfo("Asia/Shanghai")
NOV_20 = datetime(2026, 11, 20, 20, 0, tzinfo=TZ)

CASES = [
    # future statements: the coming one
    ("正月十五见", "正月十五", "2027-02-20"),
    ("好啊，说定了，正月十五见。", "正月十五", "2027-02-20"),
    ("元宵节我们一起看灯吧", "元宵节", "2027-02-20"),
    ("see you on Christmas", "on Christmas", "2026-12-25"),
    ("I will visit on March 3", "March 3", "2027-03-03"),
    ("我们打算3月3号去北京", "3月3号", "2027-03-03"),
    ("can't wait for Valentine's Day", "Valentine's Day", "2027-02-14"),
    ("any plans for the summer?", "the summer", "2027-06-01–2027-08-31"),
    # past statements and plain mentions keep the parser's reading
    ("我3月3号去了北京", "3月3号", "2026-03-03"),
    ("我3月3号去了北京，下次还要去", "3月3号", "2026-03-03"),
    ("Christmas was fun", "Christmas", "2025-12-25"),
    ("情人节那天下雨", "情人节", "2026-02-14"),
    ("we went skiing in the winter", "the winter", "2025-12-01–2026-02-28"),
    ("last summer was hot", "last summer", "2026-06-01–2026-08-31"),
    # expressions that already say which one they mean never move
    ("下周五见", "下周五", "2026-11-27"),
    ("see you next Friday", "next Friday", "2026-11-27"),
    ("去年圣诞节我们要了一桌菜", "去年圣诞节", "2025-12-25"),
    # the coming one within a week was already the parser's choice
    ("see you on Thanksgiving", "on Thanksgiving", "2026-11-26"),
    ("感恩节那天有什么安排", "感恩节", "2026-11-26"),
    # ... but a sentence about the past means the one before (Thanksgiving is in six days)
    ("On Thanksgiving we ate way too much turkey", "On Thanksgiving", "2025-11-27"),
    ("感恩节那天我们吃了火鸡", "感恩节", "2025-11-27"),
    ("11月22号我去了医院", "11月22号", "2025-11-22"),
    # a bare weekday or weekend (NOV_20 is a Friday evening): the coming one when the sentence
    # speaks of the future, the last one otherwise; one that names its week never moves
    ("周三要考试", "周三", "2026-11-25"),
    ("不过周一还要跟客户汇报", "周一", "2026-11-23"),  # 不过 (but) is no past
    ("星期一见", "星期一", "2026-11-23"),
    ("see you Saturday night", "Saturday night", "2026-11-21"),
    ("we'll go hiking over the weekend", "over the weekend", "2026-11-21–2026-11-22"),
    ("周末打算去爬山", "周末", "2026-11-21–2026-11-22"),
    # Chinese tells a plan without 要 or 会 as often as with them, and a past day with 了, 过 or 那天
    ("那我周末去挑丝巾", "周末", "2026-11-21–2026-11-22"),
    ("我现在最紧张的是周三的汇报", "周三", "2026-11-25"),
    ("不客气，周一等你的好消息", "周一", "2026-11-23"),
    ("周末去爬山了", "周末", "2026-11-14–2026-11-15"),
    ("周三那天下雨", "周三", "2026-11-18"),
    ("周末你去哪儿玩", "周末", "2026-11-21–2026-11-22"),  # said on a Friday evening, with no 了: this weekend
    ("周末过得一般", "周末", "2026-11-14–2026-11-15"),  # 过得 tells how a time went
    ("周末要过得开心点", "周末", "2026-11-21–2026-11-22"),  # unless wished
    ("周三我们去看了电影", "周三", "2026-11-18"),
    ("周四晚上我们一起吃了饭", "周四晚上", "2026-11-19"),
    ("we went hiking over the weekend", "over the weekend", "2026-11-14–2026-11-15"),
    # English tells a plan in the present as often as with "will"; a day something is booked for is to come
    ("my appointment is monday", "monday", "2026-11-23"),
    ("The plumber is coming Thursday morning", "Thursday morning", "2026-11-26"),
    ("we're looking at a house on Saturday", "on Saturday", "2026-11-21"),
    ("I have a test on Monday", "on Monday", "2026-11-23"),
    ("I booked a table for Thursday", "Thursday", "2026-11-26"),
    ("played soccer wednesday", "wednesday", "2026-11-18"),  # told as done: the last one
    ("I'm still sore from Wednesday", "Wednesday", "2026-11-18"),
    ("Thursday was my birthday", "Thursday", "2026-11-19"),
    ("thanks for Thursday, it was fun", "Thursday", "2026-11-19"),
    ("On Wednesday, I got great news - I'm in the program", "On Wednesday", "2026-11-18"),
    ("here's the cake Mom made on Saturday", "on Saturday", "2026-11-14"),  # made: done, whoever did it
    ("It was great, we're meeting again on Saturday", "on Saturday", "2026-11-21"),  # read in the day's clause
    ("the office called, my appointment is monday", "monday", "2026-11-23"),
    # a day within the week that was signed up for is the event's, unless the event is told as done
    ("i signed up for a 10k on November 25 and i have barely trained", "November 25", "2026-11-25"),
    ("we bought tickets for the show on November 24", "November 24", "2026-11-24"),
    ("I registered for the race on November 25 and it was fun", "November 25", "2025-11-25"),
    ("I ran the race on November 25", "November 25", "2025-11-25"),
    ("我订了12月20号的机票", "12月20号", "2026-12-20"),  # and so is a later day, in a clause signing up for it
    ("我报名了12月6号的马拉松，还没怎么练", "12月6号", "2026-12-06"),
    ("12月20号我订了机票", "12月20号", "2025-12-20"),  # the day of the act
    ("我买了12月20号的衣服", "12月20号", "2025-12-20"),
    # and so is a day named after inviting, scheduling or arranging, a weekday too
    ("I invited everyone to the party on Saturday", "on Saturday", "2026-11-21"),
    ("I got invited to a party on Saturday", "on Saturday", "2026-11-21"),
    ("I scheduled a dentist appointment on Monday", "on Monday", "2026-11-23"),
    ("She invited me to her wedding on December 5", "December 5", "2026-12-05"),
    ("我约了朋友周六吃饭", "周六", "2026-11-21"),
    ("我们安排了周日去爬山", "周日", "2026-11-22"),
    ("We planned a picnic on Sunday but it rained", "on Sunday", "2026-11-15"),  # the event told as done
    ("I was invited to a party on Saturday and it was great", "on Saturday", "2026-11-14"),
    ("On Saturday I invited everyone over", "On Saturday", "2026-11-14"),  # the day of the act
    ("周六我约了朋友吃饭", "周六", "2026-11-14"),
    ("我节约了周六的时间", "周六", "2026-11-14"),  # 节约: saving, not arranging
    # reported speech is told in its own tense
    ("He said he's coming for Thanksgiving", "Thanksgiving", "2026-11-26"),
    ("Mom asked if I'm free on Saturday", "on Saturday", "2026-11-21"),
    ("He said that the party is on Saturday", "on Saturday", "2026-11-21"),
    ("She told me she was sick on Wednesday", "on Wednesday", "2026-11-18"),
    ("He mentioned the party on Saturday", "on Saturday", "2026-11-14"),  # no clause of its own
    ("I'm so excited about Saturday", "Saturday", "2026-11-21"),  # an -ed word after a present "be" is a state
    ("we're invited to a wedding on Sunday", "on Sunday", "2026-11-22"),
    ("I was so excited about Saturday", "Saturday", "2026-11-14"),
    ("she's finished the tiles on Monday", "on Monday", "2026-11-16"),  # 's may be "has": done
    ("上周末本来要去爬山", "上周末", "2026-11-14–2026-11-15"),
    # a yearless date, day of the month, month, festival or season with no tense cue is the nearest one
    ("12月15号入职，工作地点在苏州", "12月15号", "2026-12-15"),
    ("正式答辩定下来了，12月1号上午", "12月1号上午", "2026-12-01"),  # 定下来了 is another clause's
    ("The exam is on December 2", "December 2", "2026-12-02"),
    ("我妈1月5号过生日", "1月5号", "2027-01-05"),
    ("The concert on December 2 was great", "December 2", "2025-12-02"),  # told as done
    ("3号回来", "3号", "2026-12-03"),
    ("15号那天下雨了", "15号", "2026-11-15"),
    ("I met up with my teammates on the 15th after my trip", "on the 15th", "2026-11-15"),
    ("我们3号见吧", "3号", "2026-12-03"),
    ("my brother is getting married in march", "march", "2027-03"),  # a month too ("march" only after "in")
    ("he might come home for Christmas", "Christmas", "2026-12-25"),  # and a festival
    ("春节回老家", "春节", "2027-02-06"),
    ("十二月初搬家", "十二月初", "2026-12-01–2026-12-10"),
    ("I met him in March", "March", "2026-03"),  # told as done
    ("the summer was hot", "the summer", "2026-06-01–2026-08-31"),
    ("I will see you in may", "may", "2027-05"),
    # a bare day of the month after a date that named its month, in the same sentence, is in that month or the next
    ("12月2号飞昆明，再坐动车去大理，6号晚上回来", "6号晚上", "2026-12-06"),
    ("12月20号走，3号回来", "3号", "2027-01-03"),
    ("I fly out on December 20 and come back on the 27th", "on the 27th", "2026-12-27"),
    ("上个月去了日本，6号回来的", "6号", "2026-10-06"),
    ("我生日是12月3号。今天是18号了", "18号", "2026-11-18"),  # another sentence: not December's
]


@pytest.mark.parametrize(("text", "phrase", "resolved"), CASES, ids=[c[0] for c in CASES])
def test_statement_dates(text, phrase, resolved):
    found = dict(resolve_dates([text], NOV_20, TZ))
    assert found.get(phrase) == resolved, found


def test_future_cue_in_another_sentence_does_not_move_a_past_date():
    found = dict(resolve_dates(["我3月3号去了北京。明天见！"], NOV_20, TZ))
    assert found["3月3号"] == "2026-03-03"


@pytest.mark.parametrize("text", ["元宵节一起看灯吧", "周六见", "see you Saturday night"])
def test_a_day_still_going_on_when_said_is_that_day(text):
    """Said on the day itself (元宵节 2027 and a Saturday: 2027-02-20 is both), the day meant is
    today, which every line shows already: no note, not next year's or next week's."""
    assert dict(resolve_dates([text], datetime(2027, 2, 20, 10, 0, tzinfo=TZ), TZ)) == {}


@pytest.mark.parametrize("text", [
    "she calls every sunday at 8", "we do watch-alongs every other tuesday", "every Christmas we bake cookies",
    "on Saturday mornings I read to kids", "I work Saturdays", "每个周末都加班", "每年春节都回老家", "每月15号发工资",
    "每周五晚上打球", "During Thanksgiving, we usually watch a few movies.", "Do you have any favorite Thanksgiving traditions?",
    "过年一般回老家", "周末一般都在家躺着", "I always go home for Christmas",
])
def test_a_habit_is_stored_without_a_date(text):
    """A habit names no day: a note would tell the chat model of one day that was not meant."""
    assert dict(resolve_dates([text], NOV_20, TZ)) == {}


@pytest.mark.parametrize(("text", "phrase", "resolved"), [
    ("we usually hike, but last Saturday we rested", "last Saturday", "2026-11-14"),  # says which one
    ("I usually sleep late, but 12月20号 I have a flight", "12月20号", "2026-12-20"),  # a day of a month is one day
])
def test_a_day_in_a_habits_sentence_that_names_one_day_keeps_it(text, phrase, resolved):
    assert dict(resolve_dates([text], NOV_20, TZ)).get(phrase) == resolved


# Questions are not events: a question about a time before today stores none (these four were stored as
# the day asked about before); a question about a plan keeps its day, and so does a statement's time when a
# question follows it.
QUESTIONS = [
    ("昨天我们聊了什么？", "昨天", None),
    ("上周三我们聊了什么？", "上周三", None),
    ("周三的会议怎么样？", "周三", None),
    ("周末过得怎么样？", "周末", None),
    ("11月2号的天气怎么样", "11月2号", None),
    ("你还记得我周一跟你说的事吗？", "周一", None),
    ("what did I eat last Tuesday?", "last Tuesday", None),
    ("How was Thursday?", "Thursday", None),
    ("Did you have fun on Halloween?", "Halloween", None),
    ("Do you remember what I told you on Monday?", "on Monday", None),
    ("Can you remind me what I said about the trip on Monday?", "on Monday", None),
    ("I went hiking yesterday, have you ever been?", "yesterday", "2026-11-19"),
    ("昨天去爬山了，你爬过山吗？", "昨天", "2026-11-19"),
    ("Are you free on Saturday?", "on Saturday", "2026-11-21"),
    ("周日有空吗？", "周日", "2026-11-22"),
    ("元旦有什么安排吗", "元旦", "2027-01-01"),
    ("Did you know I got engaged in October?", "October", "2026-10"),  # what it tells is no question
    ("Guess what I did on Wednesday?", "on Wednesday", "2026-11-18"),
    # a day asked about in a clause of its own, the question after it (read as a time question reads it)
    ("上周五你给我推荐的那首歌，歌名是啥来着", "上周五", None),
    ("我11月3日那天跟你说过一个梦，是什么梦？", "11月3日", None),
    ("Yesterday I told you about my sister, right?", "Yesterday", None),
    ("On Tuesday you suggested a recipe, what was it called?", "On Tuesday", None),
    ("On Tuesday you suggested a recipe and I loved it.", "On Tuesday", "2026-11-17"),
    ("上周五你给我推荐的那首歌我听了一晚上", "上周五", "2026-11-13"),
]


@pytest.mark.parametrize(("text", "phrase", "resolved"), QUESTIONS, ids=[q[0] for q in QUESTIONS])
def test_a_question_about_a_past_day_stores_none(text, phrase, resolved):
    found = dict(resolve_dates([text], NOV_20, TZ))
    assert found.get(phrase) == resolved, found
