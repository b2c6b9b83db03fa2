"""A write transaction on one user's facts (opened by `FactRepository.writing`, under both locks).

Changes apply to the in-memory table and index as they are made; `commit` then writes them: new
facts only -> one fsynced append of their entries; anything else -> the whole file, atomically.
The pending-turns file is written first when turns are added to it (a crash then leaves a turn
marked for a retry whose facts are not written yet: the retry writes them) and last when turns
leave it (a crash then leaves a turn to retry whose facts are already written: the duplicate
guard makes the retry harmless). Either way nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Protocol

import numpy as np

from engine.stores.core.facts import Fact, new_fact_id, normalise_text
from engine.stores.core.index import FactIndex
from engine.stores.core.table import FactTable
from engine.stores.core.pending import PendingTurn


class UserState(Protocol):
    """What a transaction reads and updates of one user's facts, whichever repository holds them
    (the files `UserState`, Postgres' `PgUserState`)."""

    facts: FactTable
    index: FactIndex | None
    pending: list[PendingTurn]
    by_text: dict[str, str] | None
    """Normalised text of each live fact -> its id; built on the first write."""
    turns: set[str] | None
    """Turn ids that appear in any fact's sources or revisions; built on the first write."""


class Embed(Protocol):
    def __call__(self, texts: list[str]) -> np.ndarray: ...


class Transaction:
    """Changes to one user's facts and pending turns; see the module docstring."""

    def __init__(self, user: UserState, *, now: datetime, embed: Embed) -> None:
        self._user = user
        self.now = now
        self._embed = embed
        self.facts = user.facts
        assert user.index is not None
        self.index: FactIndex = user.index
        self._appended: dict[str, Fact] = {}
        self._rewrite = False
        self._pending: list[PendingTurn] | None = None
        self.changes = 0
        if user.by_text is None or user.turns is None:
            _build_derived(user)

    @property
    def new_pending(self) -> list[PendingTurn] | None:
        """The pending turns as this transaction leaves them; None when it did not touch them."""
        return self._pending

    @property
    def appended_only(self) -> list[Fact]:
        """The facts this transaction added, when it changed nothing else (a file can take them
        as an append); [] otherwise."""
        return [] if self._rewrite else list(self._appended.values())

    # ------------------------------------------------------------------ reading

    def get(self, fact_id: str) -> Fact | None:
        return self.facts.get(fact_id)

    def live(self) -> Iterator[Fact]:
        return (f for f in self.facts.values() if f.live)

    def live_with_text(self, text: str) -> Fact | None:
        """The live fact whose normalised text equals `text`'s (O(1))."""
        assert self._user.by_text is not None
        fact_id = self._user.by_text.get(normalise_text(text))
        return self.facts.get(fact_id) if fact_id is not None else None

    def knows_turn(self, turn_id: str) -> bool:
        """Whether any fact records this turn among its sources or as the maker of a revision."""
        assert self._user.turns is not None
        return turn_id in self._user.turns

    def new_id(self) -> str:
        return new_fact_id(self.facts)

    @property
    def pending(self) -> list[PendingTurn]:
        return list(self._pending if self._pending is not None else self._user.pending)

    @pending.setter
    def pending(self, turns: list[PendingTurn]) -> None:
        self._pending = list(turns)

    # ------------------------------------------------------------------ changing

    def add(self, fact: Fact, vector: np.ndarray | None = None) -> None:
        """A new fact (its id must be new)."""
        if fact.id in self.facts:
            raise ValueError(f"fact id {fact.id!r} is taken")
        self.facts[fact.id] = fact
        self._appended[fact.id] = fact
        self._index(fact, vector)
        self._note(None, fact)

    def put(self, fact: Fact, vector: np.ndarray | None = None) -> None:
        """Replace an existing fact (text, sources, history, deletion) by `fact`."""
        old = self.facts[fact.id]
        self.facts[fact.id] = fact
        if fact.id in self._appended:
            self._appended[fact.id] = fact  # still only an append: it is not in the file yet
        else:
            self._rewrite = True
        if not fact.live:
            self.index.remove([fact.id])
        elif not self.index.is_current(fact):
            self._index(fact, vector)
        self._note(old, fact)

    def purge(self, fact_id: str) -> Fact:
        """Remove a fact and its history entirely."""
        old = self.facts[fact_id]
        del self.facts[fact_id]
        self._appended.pop(fact_id, None)
        self._rewrite = True
        self.index.remove([fact_id])
        self._note(old, None)
        return old

    def _index(self, fact: Fact, vector: np.ndarray | None) -> None:
        if not fact.live:
            return
        if vector is None:
            vector = self._embed([fact.text])[0]
        self.index.add([fact], np.asarray(vector)[None, :])

    def _note(self, old: Fact | None, new: Fact | None) -> None:
        by_text, turns = self._user.by_text, self._user.turns
        assert by_text is not None and turns is not None
        if old is not None and old.live and by_text.get(normalise_text(old.text)) == old.id:
            del by_text[normalise_text(old.text)]
        if new is not None:
            if new.live:
                by_text.setdefault(normalise_text(new.text), new.id)
            turns.update(new.source_turns)
            turns.update(b for r in new.history for b in r.by)
        self.changes += 1


def _build_derived(user: UserState) -> None:
    user.by_text, user.turns = {}, set()
    note_facts(user, user.facts.values())


def note_facts(user: UserState, facts: Iterable[Fact]) -> None:
    """Add facts new to this process to the text and turn lookups."""
    by_text, turns = user.by_text, user.turns
    assert by_text is not None and turns is not None
    for fact in facts:
        if fact.live:
            by_text.setdefault(normalise_text(fact.text), fact.id)
        turns.update(fact.source_turns)
        turns.update(b for r in fact.history for b in r.by)
