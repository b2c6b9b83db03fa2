"""Write-time date resolution: "yesterday" in a turn said on 2023-05-08 meant 2023-05-07.

Relative expressions lose their meaning once the day has passed, so the diary stores what each
one resolved to (by `engine.timeparse`, against the turn's own time) with the entry, and shows
it in the injected line: `… yesterday … [yesterday (2023-05-07)]`. The annotation follows the
text instead of being spliced into it, so the original words stay intact. A yearless date in a
sentence about the future ("see you on Christmas") means the coming one, and a habit or a question about
a past day ("昨天我们聊了什么？") stores none (`engine.timeparse.tense`), nor a day the turn asks about
as a time question does (`asked_about`).
Deterministic and offline.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from engine.errors import TimeExpressionError
from engine.timeparse.script import as_tables_read

if TYPE_CHECKING:
    from engine.timeparse import TimeExpression

log = logging.getLogger(__name__)

_ROLLING = re.compile(r"\d{2}:\d{2}–")
_NAMES_A_MONTH = frozenset({"date", "month"})
MAX_DATES = 6
"""At most this many expressions per turn are kept (the rest are rarely worth their tokens)."""


def resolve_dates(texts: list[str], at: datetime, tz: tzinfo) -> tuple[tuple[str, str], ...]:
    """(expression, resolution) for the relative time expressions in `texts`, said at `at`."""
    from engine.timeparse import parse_time_ranges
    from engine.stores.diary.recall import is_question
    from engine.timeparse.tense import in_named_month, resolve_statement

    now = at.astimezone(tz)
    own_day = f"{now:%Y-%m-%d}"
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    out: dict[str, str] = {}
    for said in texts:
        if not said.strip():
            continue
        # The rules read Simplified characters and Mandarin words (`as_tables_read`, the same length,
        # so the spans are the turn's); the phrase kept is the turn's own words.
        text = as_tables_read(said)
        try:
            found = parse_time_ranges(text, now=now)
        except (TimeExpressionError, ValueError, RecursionError) as exc:
            log.warning("diary: time expressions in a turn could not be resolved (%s)", exc)
            continue
        asked = asked_about(text, found, now)
        anchor = None  # the last date in this text that named its month, and its resolved start
        for expr in sorted(found, key=lambda e: e.span):
            # None: a habit names no day, a question about a past day is no event of it
            resolved = resolve_statement(text, expr, now=now, is_question=is_question)
            if resolved is None:
                continue
            start, end = resolved
            if expr.span in asked and start < today:
                continue
            if anchor is not None:
                start, end = in_named_month(text, expr, *anchor) or (start, end)
            if expr.kind.split("+")[0] in _NAMES_A_MONTH:
                anchor = (expr, start)
            label = describe_range(start.astimezone(tz), end.astimezone(tz))
            phrase = said[expr.span[0]:expr.span[1]].strip()
            # "today" needs no note: every shown line carries its own day.
            if phrase and label and label != own_day and label not in phrase and phrase not in out:
                out[phrase] = label
            if len(out) >= MAX_DATES:
                break
    return tuple(out.items())


_SENTENCE = re.compile(r"[^。！？!?.\n；;]+[。！？!?.\n；;]*")


def asked_about(text: str, found: Sequence[TimeExpression], now: datetime) -> set[tuple[int, int]]:
    """The spans of the past days (of `found`, the expressions of `text`) a sentence of `text` asks
    about, as a time question would read it (`recall.decide_for`): "6月3号我跟你推荐的电影叫什么来着",
    "Yesterday I told you about my sister, right?". What a turn asks about is no event of that day:
    stored, it would come back as one. A sentence at a time: a question after a story ("I went
    camping last week. Have you been?") asks nothing of the story's days."""
    from engine.stores.diary.ranges import before_today, past_ranges
    from engine.stores.diary.recall import decide_for

    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    out: set[tuple[int, int]] = set()
    for m in _SENTENCE.finditer(text):
        a, b = m.span()
        inside = [replace(e, span=(e.span[0] - a, e.span[1] - a)) for e in found if a <= e.span[0] and e.span[1] <= b]
        ranges = past_ranges(m.group(), inside, now) if inside else []
        if ranges and decide_for(m.group(), ranges, now).use:
            out |= {(expr.span[0] + a, expr.span[1] + a) for expr, (start, stop) in ranges if before_today(start, stop, today)}
    return out


def describe_range(start: datetime, end: datetime) -> str:
    """A compact absolute form: a day, a span of days, a month, a year, or a clock span."""
    last = end - timedelta(microseconds=1)
    whole_days = start.hour == start.minute == start.second == 0 and end.hour == end.minute == end.second == 0
    if whole_days:
        if start.month == 1 and start.day == 1 and end.month == 1 and end.day == 1 and end.year == start.year + 1:
            return f"{start:%Y}"
        if start.day == 1 and end.day == 1 and (end.year * 12 + end.month) - (start.year * 12 + start.month) == 1:
            return f"{start:%Y-%m}"
        if last.date() == start.date():
            return f"{start:%Y-%m-%d}"
        return f"{start:%Y-%m-%d}–{last:%Y-%m-%d}"
    if last.date() == start.date():
        if (end - start) >= timedelta(hours=3):
            return f"{start:%Y-%m-%d}"
        return f"{start:%Y-%m-%d %H:%M}"
    if _is_night(start, end):
        # "last night", 昨晚, "Saturday night" run past midnight; people date a night by its evening.
        return f"{start:%Y-%m-%d}"
    return ""  # a rolling span ("lately", "the past 3 days" to the minute) says little for its tokens


def _is_night(start: datetime, end: datetime) -> bool:
    """An evening-to-morning span on whole hours (the parser's nights end at 05:00); a rolling span
    ("the past 12 hours") starts on the minute it was said."""
    whole_hours = all(t.minute == t.second == t.microsecond == 0 for t in (start, end))
    return (whole_hours and start.hour >= 17 and end.hour <= 6
            and end.date() - start.date() == timedelta(days=1))


_LABEL = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:–(\d{4})-(\d{2})-(\d{2})| (\d{2}):(\d{2}))?)?)?")


def label_range(label: str, tz: tzinfo) -> tuple[datetime, datetime] | None:
    """The span a `describe_range` label names (the inverse, to the hour for a clock label); None
    for anything else (a hand-edited label)."""
    m = _LABEL.fullmatch(label.strip())
    if m is None:
        return None
    y, mo, d, y2, mo2, d2, hh, mm = m.groups()
    try:
        if mo is None:
            return datetime(int(y), 1, 1, tzinfo=tz), datetime(int(y) + 1, 1, 1, tzinfo=tz)
        if d is None:
            start = datetime(int(y), int(mo), 1, tzinfo=tz)
            return start, (start + timedelta(days=32)).replace(day=1)
        start = datetime(int(y), int(mo), int(d), tzinfo=tz)
        if y2 is not None:
            return start, datetime(int(y2), int(mo2), int(d2), tzinfo=tz) + timedelta(days=1)
        if hh is not None:
            start = start.replace(hour=int(hh), minute=int(mm))
            return start, start + timedelta(hours=1)
        return start, start + timedelta(days=1)
    except ValueError:
        return None


def annotate(text: str, dates: tuple[tuple[str, str], ...]) -> str:
    """`text` followed by the resolutions of the expressions it contains."""
    notes = [f"{phrase} ({label})" for phrase, label in dates if phrase in text and not _ROLLING.search(label)]
    return f"{text} [{'; '.join(notes)}]" if notes else text
