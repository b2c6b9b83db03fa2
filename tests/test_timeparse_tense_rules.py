"""Every row of the tense tables (`engine.timeparse.tense_cues`, `engine.timeparse.tense_rules`) by its
own example: a cue row fires on its example, a decision row decides its example when said at its `at`,
and the example means what the row says it means when said at several other moments too."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.stores.diary.recall import is_question
from engine.timeparse import TimeExpression, parse_time_ranges, tense
from engine.timeparse.tense_cues import DAY_CUES, EN_CUES, SIGNALS, ZH_CUES, Cue
from engine.timeparse.tense_rules import ASKED, KIND_FLAGS, RECALL, WRITE, Row, decide

CUES = ZH_CUES + EN_CUES + DAY_CUES
NOWS = ["2026-11-18 15:00", "2026-03-09 09:30", "2026-06-13 21:00", "2026-12-27 11:00", "2027-01-29 22:00"]
"""A Wednesday afternoon in November, a Monday morning in March, a Saturday night in June, the Sunday
after Christmas, a Friday night before the Spring Festival."""
FEATURES = SIGNALS | {flag for flags in KIND_FLAGS.values() for flag in flags} | {
    "fixed", "ahead", "ongoing", "behind", "zh", "question"}


def _at(text: str, when: str) -> datetime:
    zone = "Asia/Shanghai" if re.search(r"[\u4e00-\u9fff]", text) else "America/New_York"
    return datetime.strptime(when, "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(zone))


def _period(expr: TimeExpression) -> timedelta:
    """How far apart two occurrences of `expr` are, at most."""
    kind = expr.kind.split("+")[0]
    return timedelta(days=7 if kind in ("weekday", "weekend") else 31 if kind == "day_of_month" else 386)


def _means(means: str, expr: TimeExpression, got: tuple[datetime, datetime] | None, now: datetime) -> bool:
    """Whether `got` (what `expr`, said at `now`, resolved to) is the occurrence `means` names."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if got is not None and today <= got[0] < today + timedelta(days=1):
        return True  # today is never stored: whichever reading
    if means == "none" or got is None:
        return means == "none" and got is None
    start, end = got
    if means == "keep":
        return got == (expr.start, expr.end)
    if means == "last":
        return start <= now < start + _period(expr)
    if means == "coming":
        return now < end and start - _period(expr) <= now
    return abs(start - now) <= _period(expr) / 2 + timedelta(days=1) or start <= now < end  # nearest


def _expressions(text: str, now: datetime) -> list[TimeExpression]:
    found = parse_time_ranges(text, now=now)
    assert found, f"an example holds a time expression: {text!r}"
    return found


@pytest.mark.parametrize("cue", CUES, ids=[f"{c.scope}:{c.name}" for c in CUES])
def test_a_cue_fires_on_its_example(cue: Cue):
    text = cue.example
    expr = _expressions(text, _at(text, NOWS[0]))[-1]
    where = {"before": text[:expr.span[0]], "after": text[expr.span[1]:], "expression": expr.text}.get(cue.scope, text)
    assert cue.regex.search(where), where
    if cue.scope == "lead_in":
        assert any(c.lead == cue.signal for c in tense.read(text))
    else:
        assert cue.signal in tense.features(text, expr)


@pytest.mark.parametrize(("cue", "when"), [(c, w) for c in CUES for w in NOWS],
                         ids=[f"{c.name}@{w[:10]}" for c in CUES for w in NOWS])
def test_a_cues_example_means_its_occurrence_whenever_said(cue: Cue, when: str):
    now = _at(cue.example, when)
    for expr in _expressions(cue.example, now):
        got = tense.resolve_statement(cue.example, expr, now=now, is_question=is_question)
        assert _means(cue.means, expr, got, now), (cue.means, expr.text, got)


def _decision(table: tuple[Row, ...], row: Row, now: datetime) -> tense.Decision:
    (expr,) = _expressions(row.example, now)  # a row's example holds one
    if table is RECALL:
        return tense.explain_past(row.example, expr, now=now)
    return tense.explain(row.example, expr, now=now, is_question=is_question)


ROWS = [(WRITE, r) for r in WRITE] + [(ASKED, r) for r in ASKED] + [(RECALL, r) for r in RECALL]
_NAMES = {id(WRITE): "write", id(ASKED): "asked", id(RECALL): "recall"}


@pytest.mark.parametrize(("table", "row"), ROWS, ids=[f"{_NAMES[id(t)]}:{r.name}" for t, r in ROWS])
def test_a_row_decides_its_example(table, row: Row):
    decision = _decision(table, row, _at(row.example, row.at))
    chosen = decide(ASKED, decision.features) if table is ASKED else decision.row
    assert chosen is row, (chosen.name, sorted(decision.features))


@pytest.mark.parametrize(("table", "row", "when"), [(t, r, w) for t, r in ROWS for w in NOWS],
                         ids=[f"{_NAMES[id(t)]}:{r.name}@{w[:10]}" for t, r in ROWS for w in NOWS])
def test_a_rows_example_means_its_occurrence_whenever_said(table, row: Row, when: str):
    now = _at(row.example, when)
    decision = _decision(table, row, now)
    (expr,) = _expressions(row.example, now)
    assert _means(row.means, expr, decision.range, now), (row.means, decision.row.name, decision.range)


@pytest.mark.parametrize("table", [WRITE, ASKED, RECALL], ids=["write", "asked", "recall"])
def test_a_table_names_known_features_and_ends_with_a_row_that_always_holds(table):
    for row in table:
        assert (row.all | row.none) <= FEATURES, row.name
    assert not table[-1].all and not table[-1].none


def test_an_expression_is_read_again_at_most_once(monkeypatch):
    """The clause is read once for its cues; a yearly occurrence other than the parser's takes one more
    parse (a weekday or a day of the month is stepped on the calendar)."""
    calls = []

    def counting(text, **kw):
        calls.append(text)
        return parse_time_ranges(text, **kw)

    monkeypatch.setattr(tense, "parse_time_ranges", counting)
    for text, when in [("正月十五见", "2026-11-20 20:00"),
                       ("On Thanksgiving we ate way too much turkey", "2026-11-20 20:00"),
                       ("Remember to call me on Monday", "2026-11-18 15:00"), ("3号回来", "2026-11-20 20:00"),
                       ("my brother is getting married in march", "2026-11-20 20:00"),
                       ("Christmas was so chaotic at my in-laws'", "2026-12-20 15:00")]:
        now = _at(text, when)
        for expr in parse_time_ranges(text, now=now):
            calls.clear()
            tense.resolve_statement(text, expr, now=now, is_question=is_question)
            assert len(calls) <= 1, (text, calls)


def test_public_names():
    assert set(tense.__all__) == {"Decision", "explain", "explain_past", "features", "in_named_month", "is_habit",
                                  "read", "resolve_past", "resolve_statement"}
    assert all(hasattr(tense, name) for name in tense.__all__)


@pytest.mark.parametrize(("text", "habit"), [
    ("she calls every sunday at 8", True), ("周末一般都在家躺着", True), ("see you Saturday night", False),
    ("we usually hike, but last Saturday we rested", False),
])
def test_is_habit(text, habit):
    now = _at(text, NOWS[0])
    assert [tense.is_habit(text, e) for e in parse_time_ranges(text, now=now)][-1] is habit
