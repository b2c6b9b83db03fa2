"""Which past ranges a message names: the parser's expressions moved back where the sentence speaks
of the past, clipped to now, and those a question is answered from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.timeparse import TimeExpression


NIGHT_END_HOUR = 5
"""A night runs to 05:00 the next morning (the manual's parts of day, docs/time-expressions.md)."""


def before_today(start: datetime, stop: datetime, today: datetime) -> bool:
    """Whether a clipped range lies before `today` (its midnight): it ended before today began, or it
    is the night that began yesterday (昨晚, "last night": 18:00 to 05:00), which a question asks about
    as it asks about yesterday ("昨晚那部电影叫什么？")."""
    return stop <= today or (start < today and stop <= today + timedelta(hours=NIGHT_END_HOUR))


def clip_to_past(start: datetime, end: datetime, now: datetime) -> tuple[datetime, datetime] | None:
    """[start, min(end, now)] when some of it is in the past, else None."""
    stop = min(end, now)
    if start >= stop:
        return None
    return start, stop


def past_ranges(message: str, expressions: Sequence[TimeExpression],
                now: datetime) -> list[tuple[TimeExpression, tuple[datetime, datetime]]]:
    """Each expression of `message`, moved back when its sentence speaks of the past
    (`tense.resolve_past`: "what did I say on Thanksgiving?" four days before it is last year's),
    with its range clipped to `now`; those that cover some past."""
    from engine.timeparse.tense import resolve_past

    out = []
    for expr in expressions:
        start, end = resolve_past(message, expr, now=now)
        if (start, end) != (expr.start, expr.end):
            expr = replace(expr, start=start, end=end)
        clipped = clip_to_past(expr.start, expr.end, now)
        if clipped is not None:
            out.append((expr, clipped))
    return out


VAGUE_KINDS = frozenset({"recent", "few_days_ago"})
"""Ranges that name no day ("lately", "these days", "the other day", 前几天)."""


def named_days(ranges: list[tuple[TimeExpression, tuple[datetime, datetime]]]
               ) -> list[tuple[TimeExpression, tuple[datetime, datetime]]]:
    """The ranges a question is answered from: a vague "lately" / 最近 / "the other day" gives way to
    the day the message names ("what did we chat about on Monday? I keep forgetting things lately",
    "…the other day… wait, no, it was three days ago")."""
    if any(e.kind not in VAGUE_KINDS for e, _ in ranges):
        return [(e, r) for e, r in ranges if e.kind not in VAGUE_KINDS]
    return ranges


def names_past_day(ranges: Sequence[tuple[TimeExpression, tuple[datetime, datetime]]], now: datetime) -> bool:
    """Some range is a day or less and lies before today: what the model of `asking.asks_recall`
    learned from ("what did we cover on Sunday"). Today is still under way, and a longer range is
    asked of our lives more loosely ("what happened in the news last month"): both are left to the
    rules."""
    return any(expr.end - expr.start <= timedelta(days=1) for expr in before_today_ranges(ranges, now))


def before_today_ranges(ranges: Sequence[tuple[TimeExpression, tuple[datetime, datetime]]], now: datetime) -> list[TimeExpression]:
    """The expressions of `past_ranges` whose clipped range lies before today (`before_today`)."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return [expr for expr, (start, stop) in ranges if before_today(start, stop, today)]
