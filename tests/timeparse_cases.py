"""The check shared by the time-expression tables (test_timeparse_zh.py, test_timeparse_en.py).

The gold values come from timeparse_gold.py; this module is the part that calls the parser.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from engine.timeparse import TimeExpression, parse_time_ranges

Expected = list[tuple[str, tuple[datetime, datetime]]]
"""Per expected hit: a fragment of its text and its gold [start, end)."""


def assert_parses(text: str, *, now: datetime, expected: Expected, casefold: bool = False) -> None:
    """`text` said at `now` yields exactly the `expected` ranges, in order; each hit's text and the
    expected fragment contain one another (ignoring case with `casefold`), its ends are aware, and
    its span points at its text in `text`."""
    got = parse_time_ranges(text, now=now)
    assert [(g.start, g.end) for g in got] == [rng for _, rng in expected], [
        (g.text, g.start.isoformat(), g.end.isoformat()) for g in got
    ]
    fold = str.lower if casefold else str
    for g, (frag, _) in zip(got, expected):
        assert fold(frag) in fold(g.text) or fold(g.text) in fold(frag), (g.text, frag)
        assert g.start.tzinfo is not None and g.end.tzinfo is not None
        assert text[g.span[0] : g.span[1]] == g.text


def utc_length(hit: TimeExpression) -> timedelta:
    """How long a parsed range lasts in absolute time (a DST day is 23 or 25 hours)."""
    return hit.end.astimezone(timezone.utc) - hit.start.astimezone(timezone.utc)
