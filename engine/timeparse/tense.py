"""Tense moves a yearless date or festival: "正月十五见" said in November means the coming 正月十五,
"On Thanksgiving I told you …" said four days before it means last year's.

The parser reads a yearless date or festival without looking at the sentence: the most recent one,
unless it is at most a week ahead ("what did we do on Christmas?" asked on December 27th). A
sentence can point forward instead ("see you on Christmas", "元宵节一起看灯吧"): when it speaks of
the future and not of the past, the first occurrence after the moment it was said. A sentence about
the past ("感恩节那天我们吃了火鸡", "what did I say on Thanksgiving?") never means the one still to
come that the week's look-ahead chose: it means the one before. Only yearless dates, festivals and
seasons ("any plans for the summer?") move, and at write time a bare weekday or weekend
("周五还要汇报", "see you Friday night"), a month and a bare day of the month; "yesterday", "next Friday"
and "2024年春节" already say which one they mean. At write time a bare weekday also moves forward
in a Chinese statement with no past marker and in an English one whose clause is told in the
present ("my appointment is monday"); a yearless date, day of the month, month, festival or season
with no tense cue is the nearest one, ahead or behind ("7月15号入职" said on June 13th, "getting
married in december" said in September); a bare day after a date that named its month is in that
month ("10月2号飞昆明……6号晚上回来"); and a habit ("every Sunday", "we usually … during Thanksgiving")
names no day (`is_habit`).
Diary notes (write time) resolve through `resolve_statement` (both moves), time questions
(`engine.stores.diary.recall`) through `resolve_past` (the move back only).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta

from . import TimeExpression, parse_time_ranges

_MOVABLE_KINDS = frozenset({"date", "festival", "season"})
_BACK_KINDS = _MOVABLE_KINDS | {"weekday"}
"""Moved back too: a bare weekday the parser placed later today ("what did we talk about on Sunday
night", asked on a Sunday afternoon, is last Sunday's night)."""
_NEAREST_KINDS = frozenset({"date", "day_of_month", "month", "month_part", "festival", "season"})
"""In a statement with no tense cue, a yearless date, month, festival or season is the nearest
occurrence, ahead or behind: "7月15号入职" said on June 13th is this July's, "6号晚上回来" said on the
27th the coming 6th, "my brother is getting married in december" said in September this December,
"5月6号的天气怎么样" said on May 20th the last one. One a year away is named with its year."""
_WEEK_KINDS = frozenset({"weekday", "weekend"})
"""Moved forward in a statement too: a bare weekday or weekend the parser read as the last one
("周五还要汇报", "see you Friday night", "we'll go hiking over the weekend")."""
_HAS_YEAR = re.compile(r"\d{4}|\d{2}年|[去今明前后]年|年[前后]|\b(?:last|this|next)\s+year\b|\byears?\b", re.I)
_NAMES_WHICH = re.compile(
    r"[上下这本今前][个一]?(?:周|星期|礼拜|月)|\b(?:last|this|next|coming|past|previous)\b", re.I)
"""A weekday, weekend or month that says which one it is (上周五, 这个周末, 下个月, "next Friday")."""
_HAN = re.compile(r"[\u4e00-\u9fff]")
_SENTENCE = re.compile(r"[^。！？!?.\n；;]+[。！？!?.\n；;]*")
_CLAUSE = re.compile(r"[^。！？!?.\n；;，,：:]+[。！？!?.\n；;，,：:]*")
# Reported speech is told in its own tense: in "He said he's coming for Thanksgiving" the day belongs to
# "he's coming", not to "said". Only a lead-in followed by that / if / whether or a subject starts a clause
# of its own ("He mentioned the party on Saturday" is one clause).
_REPORTED = re.compile(
    r"\b(?:said|says|told\s+(?:me|us|you|him|her|them)|mentioned|promised|texted|wrote|asked(?:\s+(?:me|us|you))?)"
    r"(?:\s+(?:that|if|whether)\b|(?=\s+(?:i|you|he|she|we|they|it)\b|\s+(?:i|you|he|she|we|they|it)'))",
    re.I)

# 会 is "will", not a meeting or a party (会议, 开会, 聚会, 机会).
_FUTURE = re.compile(
    r"见[面吧啦]?|要|(?<![开机聚约晚舞宴社体领误])会(?![议员场所])|打算|准备|计划|将|想去|到时|一起.{0,12}吧|等到|期待|盼着|"
    r"\bwill\b|'ll\b|\bgoing to\b|\bgonna\b|\bplan(?:ning|s)? (?:to|for)\b|\bsee you\b|\bcan'?t wait\b|"
    r"\blooking forward\b|\buntil\b|\btill\b|\bupcoming\b|\bcoming up\b|\blet'?s\b",
    re.I,
)
# Chinese tells a thing done with 了, except in set phrases that settle or agree ("说定了", "好了", "对了",
# "算了"); with 过 after a verb (去过), not in 不过 (but) or 过生日 / 过节 / 怎么过 (celebrate); with 过得,
# how a time went ("周末过得一般"), unless wished or willed ("要过得开心").
_ZH_DONE = r"(?<![定好对行算])了|(?<=[吃去做玩看说聊买见到听写读问讲])过|(?<![要会想能])过得|去年|上次|当时"
_PAST = re.compile(
    _ZH_DONE + r"|那天|那时|"
    r"\bwas\b|\bwere\b|\bdid\b|\bhad\b|\bwent\b|\blast\b|\bago\b|\bspent\b|\bused to\b|\bremember\b",
    re.I,
)
# What moves an expression back needs the event told as done: not 那天 ("感恩节那天有什么安排").
_IRREGULAR_PAST = ("ate|saw|got|made|took|met|told|said|bought|came|gave|found|felt|left|lost|ran|sat|slept|wore|"
                   "wrote|drank|sang|won|brought|thought|heard|paid")
_DONE = re.compile(
    _ZH_DONE + "|"
    r"\b(?:was|were|did|had|went|ago|spent)\b|\bused to\b|"
    rf"\b(?:i|we|you|he|she|it|they)\s+(?:\w+ed|read|{_IRREGULAR_PAST})\b",
    re.I,
)

# A day named after signing up, booking, buying tickets, inviting or arranging is the event's day, not the
# act's ("i signed up for a 10k on october 18" said on October 12th, "I invited everyone to the party on
# Saturday", "我订了12月20号的机票", "我约了朋友周六吃饭").
_COMMITTED = re.compile(
    r"\b(?:signed up|registered|enrolled|entered|booked|reserved|(?:bought|got) (?:the |our |my )?tickets|"
    r"(?:(?:got|was|were|been) )?invited|scheduled|planned|arranged|confirmed|rsvp'?d|"
    r"made (?:a |an |the |our |my )?(?:reservation|appointment|plans?))"
    r"(?:\s+(?:for|in|to)\b)?|报名了|报了|预?[订定]好?了|(?<![节制违])约好?了|安排好?了|挂了号|"
    r"(?:买|抢)到?了(?=[^，,。！？!?]{0,12}票)",
    re.I)

MAX_STEPS = 60
"""Weekly steps searched for the next or the previous occurrence (a little over a year)."""


def _sentence_match(text: str, span: tuple[int, int],
                    pattern: re.Pattern[str] = _SENTENCE) -> re.Match[str] | None:
    return next((m for m in pattern.finditer(text) if m.start() <= span[0] < m.end()), None)


def _told(text: str, span: tuple[int, int], pattern: re.Pattern[str] = _SENTENCE) -> tuple[int, int] | None:
    """Where the sentence (or clause) holding `span` is, from the last reported-speech lead-in before it."""
    m = _sentence_match(text, span, pattern)
    if m is None:
        return None
    lead = [r.end() for r in _REPORTED.finditer(text, m.start(), span[0])]
    return (lead[-1] if lead else m.start()), m.end()


def _sentence(text: str, span: tuple[int, int], pattern: re.Pattern[str] = _SENTENCE) -> str:
    where = _told(text, span, pattern)
    return text[where[0]:where[1]] if where else ""


def speaks_of_future(text: str, span: tuple[int, int]) -> bool:
    """True when the sentence holding `span` has a future cue and no past cue."""
    sentence = _sentence(text, span)
    return bool(_FUTURE.search(sentence)) and not _PAST.search(sentence)


def speaks_of_past(text: str, span: tuple[int, int]) -> bool:
    """True when the sentence holding `span` tells of something done and has no future cue."""
    sentence = _sentence(text, span)
    return bool(_DONE.search(sentence)) and not _FUTURE.search(sentence)


def resolve_statement(
    text: str, expr: TimeExpression, *, now: datetime, is_question: Callable[[str], bool]
) -> tuple[datetime, datetime]:
    """The range `expr` (found in `text`, said at `now`) as the sentence around it means it.
    `is_question` tells a question from a statement (the diary's `recall.is_question`)."""
    kind = expr.kind.split("+")[0]
    week = kind in _WEEK_KINDS
    if (not (week or kind in _MOVABLE_KINDS or kind in _NEAREST_KINDS) or _HAS_YEAR.search(expr.text)
            or ((week or kind in _NEAREST_KINDS) and _NAMES_WHICH.search(expr.text))):
        return expr.start, expr.end
    if expr.start > now:
        return resolve_past(text, expr, now=now)
    # One still going on when said ("元宵节一起看灯吧" on 元宵节, "周五见" on a Friday) is that one.
    if expr.end > now:
        return expr.start, expr.end
    sentence = _sentence(text, expr.span)
    if speaks_of_future(text, expr.span) or (week and (_plain_chinese_plan(sentence, expr, is_question)
                                                       or _present_english_plan(text, sentence, expr, is_question)
                                                       or _committed_to(text, expr.span))):
        return _stepped(text, expr, now, weeks=1)
    # The past cue is read in the date's own clause: "正式答辩定下来了，6月20号上午" is settled, not past;
    # "情人节那天下雨" and "I met him in December" are.
    clause = _sentence(text, expr.span, _CLAUSE)
    if kind in _NEAREST_KINDS and (not _past_in(clause) or _committed_to(text, expr.span, _CLAUSE)):
        start, end = _stepped(text, expr, now, weeks=1)
        if start - now < now - expr.start:
            return start, end
    return expr.start, expr.end


def in_named_month(text: str, expr: TimeExpression, anchor: TimeExpression,
                   anchor_start: datetime) -> tuple[datetime, datetime] | None:
    """A bare day of the month told after a date that named its month (`anchor`, resolved to
    `anchor_start`), in the same sentence, is the first such day from that date on: "10月2号飞昆明，
    再坐动车去大理，6号晚上回来" is October 6th, "10月20号走，3号回来" November 3rd. None otherwise (another
    sentence may tell of another month: "我生日是3月3号。今天15号了")."""
    if (expr.kind.split("+")[0] != "day_of_month"
            or _sentence_start(text, expr.span) != _sentence_start(text, anchor.span)):
        return None
    # The parser reads a bare day as the last one by `now`; 31 days on, the last one is the first
    # from the anchor for days 1-28 (a later day a short month lacks may fall before it).
    found = parse_time_ranges(expr.text, now=anchor_start + timedelta(days=31))
    if found and found[0].start >= anchor_start:
        return found[0].start, found[0].end
    return None


def _sentence_start(text: str, span: tuple[int, int]) -> int:
    """Where the sentence holding `span` starts (-1 for none)."""
    m = _sentence_match(text, span)
    return m.start() if m else -1


_HABIT_BEFORE = re.compile(r"(?:\b(?:every|each)(?:\s+other)?|每(?:一?个|逢)?(?:年|月|周|星期)?的?|逢)\s*\Z", re.I)
_HABIT_AFTER = re.compile(r"\A(?:s\b|\s+(?:mornings|afternoons|evenings|nights)\b)", re.I)
_HABIT_KINDS = _WEEK_KINDS | {"month", "festival", "season"}
"""What a habit's sentence names without naming which one; a day of the month it names is one day
("I usually sleep late, but 12月20号 I have a flight")."""
_HABITUALLY = re.compile(
    r"\b(?:usually|always|normally|typically|traditions?)\b|一般(?:都|会|在|是|去|回|就)|通常|总是|往往|每次|每回", re.I)


def is_habit(text: str, expr: TimeExpression) -> bool:
    """A habit names no day: "she calls every sunday at 8", 每个周末都加班, "on Saturday mornings",
    "I work Saturdays", and a bare weekday, festival, month or season in a sentence told as a habit
    ("During Thanksgiving, we usually watch movies", 过年一般回老家). One that says which it is stays a day
    ("we usually hike, but last Saturday we rested")."""
    if _HABIT_BEFORE.search(text[:expr.span[0]]) or _HABIT_AFTER.match(text[expr.span[1]:]):
        return True
    bare = (expr.kind.split("+")[0] in _HABIT_KINDS
            and not _NAMES_WHICH.search(expr.text) and not _HAS_YEAR.search(expr.text))
    return bare and bool(_HABITUALLY.search(_sentence(text, expr.span)))


def _plain_chinese_plan(sentence: str, expr: TimeExpression, is_question: Callable[[str], bool]) -> bool:
    """A Chinese weekday or weekend in a sentence with no past marker: a plan told without 要 or 会
    ("那我周末去挑丝巾", "我想周末请他吃顿饭", "最紧张的是周五的汇报"); Chinese tells a past day with 了,
    过 or 那天 ("周末去爬山了"). Not in a question: "周一的会议怎么样？" asks about the last one."""
    return bool(_HAN.search(expr.text)) and not _PAST.search(sentence) and not is_question(sentence)


# English tells a plan in the present as often as with "will": "my appointment is monday", "Gary is
# coming Monday", "we're looking at a condo on Saturday", "I have a test on Friday".
_EN_PRESENT = re.compile(
    r"\b(?:am|is|are|have|has|need|needs|gotta)\b|'(?:m|re)\b|\b(?:it|he|she|that|there|what)'s\b", re.I)
# "booked for Thursday", "a table for Saturday night": what a day is for is still to come.
_FOR_THE_DAY = re.compile(r"\bfor\s+\Z", re.I)
_SINCE_THE_DAY = re.compile(r"\b(?:since|from|after)\s+\Z", re.I)
_PAST_AUX = re.compile(r"\b(?:was|were|did|had)\b", re.I)
# Any past form, whoever did it ("here's the cake Mom made on Saturday"); not an -ed word after a
# present "be", which is a state now ("I'm so excited about Saturday", "we're invited on Sunday"; "she's
# finished" may be "has").
_EN_PAST = re.compile(rf"\b(?:was|were|did|had|went|ago|spent|{_IRREGULAR_PAST}|[a-z]{{3,}}ed)\b", re.I)
_PRESENT_STATE = re.compile(
    r"(?:\b(?:am|is|are)|'(?:m|re)|\b(?:it|that)'s)\s+(?:(?:so|really|very|all|pretty|super|just|already|not)\s+)*[a-z]{3,}ed\b",
    re.I)


def _present_english_plan(text: str, sentence: str, expr: TimeExpression,
                          is_question: Callable[[str], bool]) -> bool:
    """An English weekday or weekend in a statement whose clause is told in the present, with nothing
    told as done ("played soccer wednesday", "I went on Friday", "sore from Saturday" keep the last
    one), or one the sentence says something is for ("I booked him for thursday morning")."""
    if _HAN.search(expr.text) or is_question(sentence):
        return False
    before = text[:expr.span[0]]
    if _FOR_THE_DAY.search(before):
        return not _PAST_AUX.search(sentence)
    clause = _sentence(text, expr.span, _CLAUSE)  # "the office called, appointment is monday"
    return (bool(_EN_PRESENT.search(clause)) and not _EN_PAST.search(_PRESENT_STATE.sub(" ", clause))
            and not _SINCE_THE_DAY.search(before))


def resolve_past(text: str, expr: TimeExpression, *, now: datetime) -> tuple[datetime, datetime]:
    """Only the move back: a yearless date or festival the parser placed ahead of `now`, in a
    sentence about the past, is the occurrence that ended by `now`. What a question resolves (a
    question's 要 is as often a modal as a future: "我4月30号为什么要问你…"), and half of what a
    statement does."""
    if (expr.kind.split("+")[0] not in _BACK_KINDS or expr.start <= now or _HAS_YEAR.search(expr.text)
            or not speaks_of_past(text, expr.span) or _committed_to(text, expr.span)):
        return expr.start, expr.end
    return _stepped(text, expr, now, weeks=-1)


def _committed_to(text: str, span: tuple[int, int], pattern: re.Pattern[str] = _SENTENCE) -> bool:
    """The only thing the sentence (or clause) tells as done is committing, before the day, to what it names
    (signing up, booking, inviting, arranging: `_COMMITTED`)."""
    where = _told(text, span, pattern)
    if where is None or not _COMMITTED.search(text, where[0], span[0]):
        return False
    return not _past_in(_COMMITTED.sub(" ", text[where[0]:where[1]]))


def _past_in(text: str) -> bool:
    """Any past cue: a thing told as done, or a time told as gone (那天, "last", "remember")."""
    return bool(_PAST.search(text) or _DONE.search(text))


def _stepped(text: str, expr: TimeExpression, now: datetime, *, weeks: int) -> tuple[datetime, datetime]:
    """The first occurrence of `expr` after `now` (`weeks` 1) or the last one that ended by `now`
    (`weeks` -1), whatever calendar (solar, lunar, nth weekday) it follows: the parser takes the
    coming occurrence once it is at most a week ahead, else the most recent, so its clock stepped a
    week at a time finds it."""
    # Read again with the words before it in its clause: "march" and "may" are months only after
    # "in" or "by" ("getting married in march").
    clause = _sentence_match(text, expr.span, _CLAUSE)
    start = clause.start() if clause is not None and text[expr.span[0]:expr.span[1]] == expr.text else expr.span[0]
    window = text[start:expr.span[1]] if start < expr.span[0] else expr.text
    for step in range(1, MAX_STEPS + 1):
        found = [x for x in parse_time_ranges(window, now=now + timedelta(weeks=weeks * step))
                 if x.span[1] == len(window)]
        if found and (found[0].start > now if weeks > 0 else found[0].end <= now):
            return found[0].start, found[0].end
    return expr.start, expr.end
