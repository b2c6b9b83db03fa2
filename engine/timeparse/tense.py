"""Tense moves a yearless date, festival, season, month, day of the month or bare weekday: "正月十五见"
said in November means the coming 正月十五, "On Thanksgiving I told you …" said four days before it
means last year's, "Remember to call me on Monday" said on a Wednesday the coming Monday; and a question
about a past day ("昨天我们聊了什么？") stores no date at all.

The parser reads such an expression without looking at the sentence: the most recent one, unless it
is at most a week ahead. This module reads the sentence: its words are cues (rows of
`engine.timeparse.tense_cues`), read once per clause into a set of signals; the expression's features
are those signals, its kind and where the parser put it; and an ordered table of rows
(`engine.timeparse.tense_rules`) says which occurrence they mean. `explain` shows the features and the
row that decided.

Diary notes (write time) resolve through `resolve_statement`, time questions
(`engine.stores.diary.recall`) through `resolve_past` (the move back only).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from . import TimeExpression, parse_time_ranges
from .tense_cues import DAY_CUES, EN_CUES, IMPLIES, TENSE, ZH_CUES
from .tense_rules import ASKED, KIND_FLAGS, RECALL, WRITE, Row, decide

__all__ = ["Decision", "explain", "explain_past", "features", "in_named_month", "is_habit", "read", "resolve_past",
           "resolve_statement"]

_HAN = re.compile(r"[\u4e00-\u9fff]")
_SENTENCE = re.compile(r"[^。！？!?.\n；;]+[。！？!?.\n；;]*")
_CLAUSE = re.compile(r"[^。！？!?.\n；;，,：:]+[。！？!?.\n；;，,：:]*")
# What a clause may hold besides its time and still be no clause of its own: "Yesterday, what did we
# talk about?", "On Wednesday, I got great news" read the time in the clause after it.
_FILLER = re.compile(r"\b(?:on|in|at|by|so|and|but|then|well|ok|okay|oh|also|about|as for)\b|[那嗯哦呃就在还有所以然后至于]",
                     re.I)
_WORDS = re.compile(r"[a-z\u4e00-\u9fff]", re.I)

_LEADS = tuple(c for c in EN_CUES + ZH_CUES if c.scope == "lead_in")
_CLAUSE_CUES = tuple(c for c in ZH_CUES + EN_CUES if c.scope in ("clause", "clause_before"))
_SENTENCE_CUES = tuple(c for c in ZH_CUES + EN_CUES if c.scope == "sentence")
_BEFORE = tuple(c for c in DAY_CUES if c.scope == "before")
_AFTER = tuple(c for c in DAY_CUES if c.scope == "after")
_EXPRESSION = tuple(c for c in DAY_CUES if c.scope == "expression")


@dataclass(frozen=True)
class Clause:
    """A clause of a text, read once: from a comma, colon or sentence end, or a lead-in, to the next."""

    start: int
    end: int
    outer: tuple[int, int]
    """The span of the punctuation clause it is part of (a lead-in splits one into several)."""
    sentence: tuple[int, int]
    lead: str
    """What started it: "lead_in" (reported speech: "he said he's coming"), "lead_in_wh" ("forget what
    happened"), "lead_in_ask" ("remind me what I said") or ""."""
    hits: tuple[tuple[str, int], ...]
    """(signal, where its match ends) of each clause cue that fired."""
    habit: frozenset[str]
    """The signals of the sentence's sentence-scope cues."""


@lru_cache(maxsize=1024)
def read(text: str) -> tuple[Clause, ...]:
    """The clauses of `text` with their cues."""
    out = []
    for s in _SENTENCE.finditer(text):
        habit = frozenset(c.signal for c in _SENTENCE_CUES if c.regex.search(s.group()))
        for c in _CLAUSE.finditer(text, s.start(), s.end()):
            body = c.group()
            cuts = {c.start() + m.end(): cue.signal for cue in _LEADS for m in cue.regex.finditer(body)
                    if 0 < m.end() < len(body)}
            bounds = [(c.start(), "")] + sorted(cuts.items())
            for i, (start, lead) in enumerate(bounds):
                end = bounds[i + 1][0] if i + 1 < len(bounds) else c.end()
                out.append(Clause(start, end, c.span(), s.span(), lead, _hits(text[start:end], start), habit))
    return tuple(out)


def _hits(body: str, offset: int) -> tuple[tuple[str, int], ...]:
    """Each clause cue's matches, in table order; a match is blanked for the rows after it."""
    hits: list[tuple[str, int]] = []
    for cue in _CLAUSE_CUES:
        def blank(m: re.Match[str], signal: str = cue.signal) -> str:
            if m.end() > m.start():
                hits.append((signal, offset + m.end()))
            return " " * (m.end() - m.start())
        body = cue.regex.sub(blank, body)
    return tuple(hits)


def features(text: str, expr: TimeExpression, *,
             is_question: Callable[[str], bool] | None = None) -> frozenset[str]:
    """The features `tense_rules` decides on, but where the parser put `expr` (that needs `now`)."""
    flags = set(KIND_FLAGS.get(expr.kind.split("+")[0], {"fixed"}))
    for cue in _EXPRESSION:
        if cue.regex.search(expr.text):
            flags |= {cue.signal, "fixed"}
    flags |= {c.signal for c in _BEFORE if c.regex.search(text, 0, expr.span[0])}
    flags |= {c.signal for c in _AFTER if c.regex.search(text[expr.span[1]:])}
    if _HAN.search(expr.text):
        flags.add("zh")
    clauses = read(text)
    own = next((c for c in clauses if c.start <= expr.span[0] < c.end), None)
    if own is None:
        return frozenset(flags)
    told = _told_in(clauses, own, text, expr)
    signals = _signals([told], expr)
    if not signals & TENSE:
        # no tense of its own: its sentence's, from the reported speech it belongs to on
        lead = max((c.start for c in clauses if c.sentence == own.sentence and c.lead and c.start <= own.start),
                   default=own.sentence[0])
        signals = _signals([c for c in clauses if c.sentence == own.sentence and c.start >= lead], expr)
    for signal in list(signals):
        signals |= IMPLIES.get(signal, frozenset())
    flags |= signals | own.habit
    if is_question is not None and _asks(text, told, is_question):
        flags.add("question")
    return frozenset(flags)


def _told_in(clauses: tuple[Clause, ...], own: Clause, text: str, expr: TimeExpression) -> Clause:
    """The clause that tells of `expr`: its own, or the next one when its own holds nothing but it."""
    rest = text[own.start:expr.span[0]] + text[expr.span[1]:own.end]
    if _WORDS.search(_FILLER.sub(" ", rest)):
        return own
    return next((c for c in clauses if c.sentence == own.sentence and c.start >= own.end), own)


def _signals(clauses: list[Clause], expr: TimeExpression) -> set[str]:
    """The signals of `clauses`; committing after the day tells what was done on it ("On Saturday I
    invited everyone over", "周六我约了朋友吃饭")."""
    return {"done" if signal == "committed" and where > expr.span[0] else signal
            for clause in clauses for signal, where in clause.hits}


def _asks(text: str, clause: Clause, is_question: Callable[[str], bool]) -> bool:
    """Whether `clause` asks: reported speech tells ("Did you know I got engaged in June?"); a clause
    after a question word asks when its sentence's clause does ("Do you remember what I told you on
    Sunday?", not "I'll never forget what happened on Christmas"), and always after a request to recall
    ("remind me what I said on Monday")."""
    if clause.lead == "lead_in":
        return False
    if clause.lead == "lead_in_ask":
        return True
    if clause.lead == "lead_in_wh":
        return is_question(text[clause.outer[0]:clause.outer[1]])
    return is_question(text[clause.start:clause.end])


def _placement(expr: TimeExpression, now: datetime) -> str:
    return "ahead" if expr.start > now else "ongoing" if expr.end > now else "behind"


@dataclass(frozen=True)
class Decision:
    row: Row
    """The table row that decided."""
    features: frozenset[str]
    """What the row was chosen on."""
    range: tuple[datetime, datetime] | None
    """The range meant; None: no date (a habit, a question about a time before today)."""


def explain(text: str, expr: TimeExpression, *, now: datetime,
            is_question: Callable[[str], bool]) -> Decision:
    """How `expr` (found in `text`, said at `now`) is resolved at write time, and why."""
    found = features(text, expr, is_question=is_question) | {_placement(expr, now)}
    row = decide(WRITE, found)
    meant = _occurrence(text, expr, now, row.then)
    if meant is not None and meant[0] < now.replace(hour=0, minute=0, second=0, microsecond=0):
        asked = decide(ASKED, found)
        if asked.then == "none":
            return Decision(asked, found, None)
    return Decision(row, found, meant)


def resolve_statement(text: str, expr: TimeExpression, *, now: datetime,
                      is_question: Callable[[str], bool]) -> tuple[datetime, datetime] | None:
    """The range `expr` (found in `text`, said at `now`) means, as the sentence around it tells; None
    when it names no day to store. `is_question` tells a question from a statement (the diary's
    `recall.is_question`)."""
    return explain(text, expr, now=now, is_question=is_question).range


def explain_past(text: str, expr: TimeExpression, *, now: datetime, recalled: bool = False) -> Decision:
    """How `expr` (found in a time question `text`, asked at `now`) is resolved, and why.
    `recalled`: the time is one of memory whatever its words (a tool asked to recall "Thanksgiving"):
    the sentence counts as told in the past."""
    found = features(text, expr) | {_placement(expr, now)} | ({"done"} if recalled else set())
    row = decide(RECALL, found)
    return Decision(row, found, _occurrence(text, expr, now, row.then) or (expr.start, expr.end))


def resolve_past(text: str, expr: TimeExpression, *, now: datetime, recalled: bool = False) -> tuple[datetime, datetime]:
    """Only the move back: a yearless date, festival or bare weekday the parser placed ahead of `now`,
    in a sentence about the past (or `recalled`), is the occurrence that ended by `now`; words that
    fix a time keep it ("tomorrow", "下周一", "Christmas 2026")."""
    return explain_past(text, expr, now=now, recalled=recalled).range or (expr.start, expr.end)


def is_habit(text: str, expr: TimeExpression) -> bool:
    """A habit names no day: "she calls every sunday at 8", 每个周末都加班, "I work Saturdays", and a bare
    weekday, festival, month or season in a sentence told as a habit (过年一般回老家)."""
    return decide(WRITE, features(text, expr)) in WRITE[:2]  # the table's two habit rows


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
    return next((m.start() for m in _SENTENCE.finditer(text) if m.start() <= span[0] < m.end()), -1)


def _occurrence(text: str, expr: TimeExpression, now: datetime, then: str) -> tuple[datetime, datetime] | None:
    """The range `then` (a `tense_rules` occurrence) names for `expr` said at `now`."""
    if then == "none":
        return None
    if then == "last" and expr.end > now:
        return _step(text, expr, now, forward=False)
    if then in ("coming", "nearest") and expr.start <= now:
        coming = _step(text, expr, now, forward=True)
        if then == "coming" or coming[0] - now < now - expr.start:
            return coming
    return expr.start, expr.end


_WEEKLY = frozenset({"weekday", "weekend"})
YEAR_AHEAD = timedelta(days=385)
"""Read again this far after an occurrence, a yearly expression's most recent occurrence is the next
one, whatever calendar it follows (a lunar year is 354 to 385 days; the one after is farther)."""
WEEK_BEHIND = timedelta(days=8)
"""Read again this far before an occurrence, it is past the parser's week of look-ahead, so the most
recent occurrence is the one before."""


def _step(text: str, expr: TimeExpression, now: datetime, *, forward: bool) -> tuple[datetime, datetime]:
    """The first occurrence of `expr` after `now` (`forward`) or the last one that ended by `now`; the
    parser's reading when there is none. A weekday steps by weeks and a day of the month by months;
    anything yearly (a solar or lunar date, an nth weekday, a season) is read once more."""
    kind = expr.kind.split("+")[0]
    length = expr.end - expr.start
    for k in range(1, 13):
        if kind in _WEEKLY:
            start = expr.start + timedelta(weeks=k if forward else -k)
        elif kind == "day_of_month":
            month = expr.start.month - 1 + (k if forward else -k)
            try:
                start = expr.start.replace(year=expr.start.year + month // 12, month=month % 12 + 1)
            except ValueError:  # a 31st in a 30-day month
                continue
        else:
            return _read_again(text, expr, now, forward=forward)
        if (start > now) if forward else (start + length <= now):
            return start, start + length
    return expr.start, expr.end


def _read_again(text: str, expr: TimeExpression, now: datetime, *, forward: bool) -> tuple[datetime, datetime]:
    # Read with the words before it in its clause: "march" and "may" are months only after "in" or
    # "by" ("getting married in march").
    clause = next((m for m in _CLAUSE.finditer(text) if m.start() <= expr.span[0] < m.end()), None)
    start = clause.start() if clause is not None and text[expr.span[0]:expr.span[1]] == expr.text else expr.span[0]
    window = text[start:expr.span[1]] if start < expr.span[0] else expr.text
    at = expr.start + YEAR_AHEAD if forward else expr.start - WEEK_BEHIND
    found = [x for x in parse_time_ranges(window, now=at) if x.span[1] == len(window)]
    if found and (found[0].start > now if forward else found[0].end <= now):
        return found[0].start, found[0].end
    return expr.start, expr.end
