"""The atom model every grammar builds on, and the runner of a grammar's rule table.

Kept apart from ``compose.py`` so the rule modules depend on what an atom is, not on how atoms
are glued.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo


@dataclass(frozen=True)
class Atom:
    s: int
    e: int
    kind: str  # day | range | part | clock | daynum | edge (the first / last day of a period beside it)
    start: datetime | None = None
    end: datetime | None = None
    day: date | None = None
    part: str | None = None
    hour: int | None = None
    # Clock atoms: whether am/pm (or a part of day) already fixed the hour.
    meridiem_fixed: bool = False
    # Whether the atom may stand alone (e.g. a bare zh clock "三点" may not).
    alone_ok: bool = True
    # For range inheritance: which calendar fields the text stated itself.
    year_given: bool = True
    month: int | None = None
    dom: int | None = None
    bare_weekday: int | None = None
    kind_name: str = ""
    # Range atoms that are a whole calendar month or ISO week: a day-of-month,
    # weekday or weekend next to them is resolved inside them (上个月10号,
    # "the 10th of last month", 上周的周三, "Tuesday night last week").
    period: str | None = None  # "month" | "week"
    # 左右 / 前后 / "around": widen the resolved day or hour (``resolve._day_or_hour``).
    approx: bool = False


class Atoms(list[Atom]):
    """The atoms found in one text. `range` and `day` wrap a regex match into an atom, so every
    grammar module adds them the same way."""

    def range(self, m: re.Match[str], r: tuple[datetime, datetime] | None, name: str, *,
              s: int | None = None, **kw: object) -> None:
        """A resolved range; None (e.g. a day the month does not have) adds nothing."""
        if r is not None:
            self.append(Atom(m.start() if s is None else s, m.end(), "range", start=r[0], end=r[1],
                             kind_name=name, **kw))  # type: ignore[arg-type]

    def day(self, m: re.Match[str], d: date, name: str, **kw: object) -> None:
        self.append(Atom(m.start(), m.end(), "day", day=d, kind_name=name, **kw))  # type: ignore[arg-type]

    def edge(self, m: re.Match[str], *, first: bool) -> None:
        """The first / last day of the month, week or year beside it (``compose._edge_day``); nothing alone."""
        self.append(Atom(m.start(), m.end(), "edge", alone_ok=False, kind_name="first_day" if first else "last_day"))


@dataclass(frozen=True)
class Ctx:
    """What every rule needs besides its match: the text and the moment it is read at."""

    text: str
    now: datetime
    tz: tzinfo
    today: date


Handler = Callable[[re.Match[str], Ctx, Atoms], None]
Rule = tuple[re.Pattern[str], Handler]
"""A grammar is a table of rules: every match of the pattern is handed to the handler, which
adds zero or more atoms. Rules are small and independent; `compose` glues their atoms."""


def run_rules(rules: Sequence[Rule], text: str, now: datetime) -> Atoms:
    tz = now.tzinfo
    assert tz is not None
    ctx = Ctx(text, now, tz, now.date())
    out = Atoms()
    for pattern, handler in rules:
        for m in pattern.finditer(text):
            handler(m, ctx, out)
    return out
