"""Statements about the future: "正月十五见" said in November means the coming 正月十五.

The parser reads a yearless date or festival as a question does ("what did we do on Christmas?":
the most recent one, unless it is at most a week ahead). A statement written into the diary can
point forward instead ("see you on Christmas", "元宵节一起看灯吧"). When the sentence around such
an expression speaks of the future and not of the past, write-time resolution takes the first
occurrence after the moment it was said. Only yearless dates, festivals and seasons ("any plans for
the summer?") move; "yesterday", "next Friday" and "2024年春节" already say which one they mean.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from . import TimeExpression, parse_time_ranges

_MOVABLE_KINDS = frozenset({"date", "festival", "season"})
_HAS_YEAR = re.compile(r"\d{4}|\d{2}年|[去今明前后]年|年[前后]|\b(?:last|this|next)\s+year\b|\byears?\b", re.I)
_SENTENCE = re.compile(r"[^。！？!?.\n；;]+[。！？!?.\n；;]*")

_FUTURE = re.compile(
    r"见[面吧啦]?|要|会|打算|准备|计划|将|想去|到时|一起.{0,12}吧|等到|期待|盼着|"
    r"\bwill\b|'ll\b|\bgoing to\b|\bgonna\b|\bplan(?:ning|s)? (?:to|for)\b|\bsee you\b|\bcan'?t wait\b|"
    r"\blooking forward\b|\buntil\b|\btill\b|\bupcoming\b|\bcoming up\b|\blet'?s\b",
    re.I,
)
# 了 marks the past except in set phrases that settle or agree ("说定了", "好了", "对了", "算了").
_PAST = re.compile(
    r"(?<![定好对行算])了|过|去年|上次|那天|那时|当时|"
    r"\bwas\b|\bwere\b|\bdid\b|\bhad\b|\bwent\b|\blast\b|\bago\b|\bspent\b|\bused to\b|\bremember\b",
    re.I,
)

MAX_STEPS = 60
"""Weekly steps searched for the next occurrence (a little over a year)."""


def speaks_of_future(text: str, span: tuple[int, int]) -> bool:
    """True when the sentence holding `span` has a future cue and no past cue."""
    for m in _SENTENCE.finditer(text):
        if m.start() <= span[0] < m.end():
            sentence = m.group()
            return bool(_FUTURE.search(sentence)) and not _PAST.search(sentence)
    return False


def resolve_statement(text: str, expr: TimeExpression, *, now: datetime) -> tuple[datetime, datetime]:
    """The range `expr` (found in `text`, said at `now`) meant as part of a statement."""
    if (expr.kind not in _MOVABLE_KINDS or expr.start > now or _HAS_YEAR.search(expr.text)
            or not speaks_of_future(text, expr.span)):
        return expr.start, expr.end
    # The parser's own rule takes the coming occurrence once it is at most a week ahead, so
    # stepping its clock forward a week at a time finds the first occurrence after `now`,
    # whatever calendar (solar, lunar, nth weekday) the expression follows.
    for step in range(1, MAX_STEPS + 1):
        found = parse_time_ranges(expr.text, now=now + timedelta(days=7 * step))
        if found and found[0].start > now:
            return found[0].start, found[0].end
    return expr.start, expr.end
