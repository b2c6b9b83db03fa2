"""Which occurrence a time expression means, as ordered tables a reader can scan: the first row whose
conditions hold on the expression's features (`engine.timeparse.tense` builds them from the cues of
`engine.timeparse.tense_cues`, once per clause) decides.

Occurrences:
- keep: the parser's reading: the most recent one, or the coming one when at most a week ahead
  ("what did we do on Christmas?" asked on December 27th, "see you on Thanksgiving" six days before);
- last: the last one that ended by the moment said; coming: the first one after it;
- nearest: whichever of the two is nearer ("7月15号入职" said on June 13th, "5月6号的天气怎么样" on May 20th);
- none: no date is stored (a habit names no day; a question about a time before today is no event).

Features, besides the cue signals (see `tense_cues`):
- the expression's kind: soon (a bare weekday, weekend or day of the month: a day of the coming week or
  month, where a plan needs no word for the future), yearless (a date, day of the month, month,
  festival or season with no year), back (what a past tense moves back from the week ahead), habit_kind
  (what a habit's sentence names without naming which); fixed: any other kind ("yesterday", "next
  Friday"), or one whose words say which one (2024年春节, 上周五);
- where the parser put it: ahead (after the moment said), ongoing (around it) or behind;
- zh: the expression is Chinese; question: its clause asks (the diary's `recall.is_question`).
"""

from __future__ import annotations

from dataclasses import dataclass

OCCURRENCES = frozenset({"keep", "last", "coming", "nearest", "none"})

KIND_FLAGS: dict[str, frozenset[str]] = {
    "weekday": frozenset({"soon", "back", "habit_kind"}),
    "weekend": frozenset({"soon", "habit_kind"}),
    "date": frozenset({"yearless", "back"}),
    "festival": frozenset({"yearless", "back", "habit_kind"}),
    "season": frozenset({"yearless", "back", "habit_kind"}),
    "month": frozenset({"yearless", "habit_kind"}),
    "month_part": frozenset({"yearless"}),
    "day_of_month": frozenset({"yearless", "soon"}),
}
"""The kinds the sentence may move (the part before a "+": "weekday+part" is "Friday night"); any
other kind is fixed. A day of the month is no habit's ("I usually sleep late, but 12月20号 I have a
flight")."""


@dataclass(frozen=True)
class Row:
    name: str
    then: str
    """The occurrence (one of `OCCURRENCES`)."""
    all: frozenset[str] = frozenset()
    """Features that must all be present."""
    none: frozenset[str] = frozenset()
    """Features that must all be absent."""
    example: str = ""
    """A sentence, said at `at`, the row decides."""
    at: str = ""
    """When the example is said: "2026-11-18 15:00" (Asia/Shanghai for Chinese, New York for English)."""
    means: str = ""
    """Which occurrence the example means whenever said (a "keep" row's example may mean "coming": the
    parser's reading of "see you on Thanksgiving" is the coming one only in the week before it)."""

    def __post_init__(self) -> None:
        if self.then not in OCCURRENCES or self.means not in OCCURRENCES:
            raise ValueError(f"row {self.name!r}: unknown occurrence {self.then!r} or {self.means!r}")

    def holds(self, features: frozenset[str]) -> bool:
        return self.all <= features and not self.none & features


def _row(name: str, then: str, *, all: str = "", none: str = "", example: str, at: str, means: str = "") -> Row:
    return Row(name, then, frozenset(all.split()), frozenset(none.split()), example, at, means or then)


WRITE: tuple[Row, ...] = (
    _row("a habit names no day", "none", all="every", example="she calls every sunday at 8", at="2026-11-18 15:00"),
    _row("nor a bare day in a habit's sentence", "none", all="habit habit_kind", none="fixed",
         example="周末一般都在家躺着", at="2026-11-18 15:00"),
    _row("it says which one it is", "keep", all="fixed", example="下周五见", at="2026-11-18 15:00"),
    _row("told as done, not the one the week ahead holds", "last", all="ahead back done", none="future reminder",
         example="On Thanksgiving we ate way too much turkey", at="2026-11-20 20:00"),
    _row("the week ahead holds it", "keep", all="ahead", example="see you on Thanksgiving", at="2026-11-20 20:00",
         means="coming"),
    _row("it is going on", "keep", all="ongoing", example="周六见", at="2026-11-21 10:00", means="coming"),
    _row("a reminder", "coming", all="reminder", example="Remember to call me on Monday", at="2026-11-18 15:00"),
    _row("a plan, and nothing told as past", "coming", all="future", none="done gone",
         example="元宵节我们一起看灯吧", at="2026-11-20 20:00"),
    _row("a weekday or day of the month signed up for", "coming", all="soon committed", none="done",
         example="I invited everyone to the party on Saturday", at="2026-11-18 15:00"),
    # Chinese tells a plan without 要 or 会 as often as with them, and a past day with 了, 过 or 那天
    _row("a Chinese weekday or day of the month, nothing told as past", "coming", all="soon zh", none="done gone",
         example="那我周末去挑丝巾", at="2026-11-18 15:00"),
    _row("an English weekday or day of the month something is for", "coming", all="soon for_day", none="zh past_aux",
         example="got a babysitter for Saturday night", at="2026-11-18 15:00"),
    # English tells a plan in the present as often as with "will"
    _row("an English weekday or day of the month told in the present", "coming", all="soon present",
         none="zh past_form since_day gone", example="my appointment is monday", at="2026-11-18 15:00"),
    _row("a date signed up for", "nearest", all="yearless committed", none="done",
         example="我报名了12月6号的马拉松，还没怎么练", at="2026-11-20 20:00"),
    _row("a date with no tense", "nearest", all="yearless", none="done gone",
         example="12月15号入职，工作地点在苏州", at="2026-11-20 20:00"),
    _row("otherwise the parser's reading", "keep", example="周日我去看了我奶奶", at="2026-11-18 15:00", means="last"),
)
"""Write time (`tense.resolve_statement`): what a diary note stores."""

ASKED: tuple[Row, ...] = (
    _row("a question about a plan for a time already begun", "keep", all="question future", none="done gone",
         example="What will you do this weekend?", at="2026-11-22 10:00"),
    _row("a question about a time before today", "none", all="question", example="昨天我们聊了什么？",
         at="2026-11-18 15:00"),
    _row("not a question", "keep", example="I went hiking yesterday, have you ever been?", at="2026-11-18 15:00",
         means="last"),
)
"""Applied after `WRITE` when what it chose began before today: a question stores no such time, since
the turn is not an event of that day ("what did I eat last Tuesday?", "How was your weekend?"), unless
it asks about a plan ("any plans this week?"). A question about a time still to come keeps it ("Are you
free on Friday night?"), and a statement's time keeps its date when a question follows it ("I went
hiking yesterday, have you ever been?")."""

RECALL: tuple[Row, ...] = (
    _row("it says which one it is", "keep", all="fixed", example="what did we do on Christmas 2025?",
         at="2026-12-20 15:00"),
    _row("asked in the past, not the one the week ahead holds", "last", all="ahead back done",
         none="future reminder", example="what did I say on Thanksgiving?", at="2026-11-22 15:00"),
    _row("otherwise the parser's reading", "keep", example="what did we do on Christmas?", at="2026-12-27 15:00",
         means="last"),
)
"""Time questions (`tense.resolve_past`, for `engine.stores.diary.recall`): only the move back (a
question's 要 is as often a modal as a future: "我4月30号为什么要问你…")."""


def decide(table: tuple[Row, ...], features: frozenset[str]) -> Row:
    """The first row of `table` that holds (every table ends with a row that always holds)."""
    return next(row for row in table if row.holds(features))
