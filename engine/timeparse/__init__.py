"""Time-expression parser: text + an aware ``now`` -> half-open local ranges.

The manual's time-expression table (docs/time-expressions.md) says what each expression family resolves to.  Chinese and
English grammars both run on every message (messages mix languages); their
hits and jionlp's long-tail hits are merged, rule hits winning any overlap.
Traditional characters and written Cantonese are read as Simplified Mandarin (`script.py`: 上個月
is 上个月, 琴日 is 昨天), and each expression's text is the message's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from engine.errors import TimeExpressionError

from . import en, zh
from .calendar import Hit
from .script import as_tables_read

__all__ = ["TimeExpression", "TimeExpressionError", "parse_time_ranges", "warm_up"]

_HAN = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class TimeExpression:
    text: str
    start: datetime  # aware, inclusive
    end: datetime  # aware, exclusive
    span: tuple[int, int] = (0, 0)  # character offsets of ``text`` in the message
    lang: str = ""  # "zh" | "en"
    kind: str = ""  # family, e.g. "day", "week", "rolling", "range", "jionlp"


def _check_now(now: datetime) -> None:
    if not isinstance(now, datetime):
        raise TimeExpressionError(f"now must be a datetime, got {type(now).__name__}")
    if now.tzinfo is None or now.tzinfo.utcoffset(now) is None:
        raise TimeExpressionError("now must be timezone-aware (its tzinfo is the user's zone)")


def _overlaps(a: Hit, b: Hit) -> bool:
    return not (a.span[1] <= b.span[0] or a.span[0] >= b.span[1])


def _merge(primary: list[Hit], secondary: list[Hit]) -> list[Hit]:
    """Non-overlapping hits: longest first among rule hits; jionlp fills gaps or
    replaces rule hits it strictly contains (去年冬天 beats 去年)."""
    chosen: list[Hit] = []
    for h in sorted(primary, key=lambda x: (-(x.span[1] - x.span[0]), x.span[0])):
        if not any(_overlaps(h, c) for c in chosen):
            chosen.append(h)
    for h in sorted(secondary, key=lambda x: (-(x.span[1] - x.span[0]), x.span[0])):
        clash = [c for c in chosen if _overlaps(h, c)]
        inside = all(h.span[0] <= c.span[0] and c.span[1] <= h.span[1] for c in clash)
        if not clash or (inside and all(c.lang == "zh" and c.span != h.span for c in clash)):
            chosen = [c for c in chosen if c not in clash] + [h]
    return sorted(chosen, key=lambda x: x.span)


def parse_time_ranges(text: str, *, now: datetime, use_jionlp: bool = True) -> list[TimeExpression]:
    """Every time expression in ``text``, in order of appearance.

    ``now`` must be aware; its tzinfo is the user's zone.  Pure and
    deterministic: nothing reads the real clock (jionlp gets ``now`` as its base).
    """
    _check_now(now)
    if not text:
        return []
    read = as_tables_read(text)  # the same length: spans found in it are spans of `text`
    rules = zh.parse(read, now) + en.parse(read, now)
    extra: list[Hit] = []
    if use_jionlp and _HAN.search(read):
        from . import jionlp_fallback  # noqa: PLC0415 - keeps jionlp out of import time

        extra = jionlp_fallback.parse(read, now)
    return [
        TimeExpression(text[h.span[0] : h.span[1]], h.start, h.end, h.span, h.lang, h.kind)
        for h in _merge(rules, extra)
    ]


def warm_up() -> None:
    """Load jionlp, its lazy dictionaries and the Traditional characters' table now rather than on
    the first message."""
    from . import jionlp_fallback  # noqa: PLC0415

    jionlp_fallback.warm_up()
    as_tables_read("預熱")
