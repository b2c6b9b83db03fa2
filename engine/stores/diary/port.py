"""Where a diary keeps its turns: the port between the diary's one logic (`store.DiaryStore`,
`answer.answer`) and a backend. `engine.factory` picks the backend; nothing else knows which.

- files (`engine.backends.files.diary`): one YAML day file per local day, indexes derived in
  `.cache/`, the default;
- postgres (`engine.backends.postgres.diary`): tables shared by several hosts.

A backend stores entries as given (the store tags and dates them), keeps its own search index of
them in step (`engine.search`: the same ranking on every backend), and answers reads per user.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Protocol

import numpy as np

from engine.search.base import SearchHit, SearchRequest
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.render import RangeTurns


class DiarySource(Protocol):
    """One user's diary as `answer` reads it: the steps of an answer are the same on every
    backend, only these differ."""

    def hold(self) -> AbstractContextManager:
        """Held while answering (the files diary: its lock, after catching up with the day files)."""

    def span(self, lo: int, hi: int, vector, reason: Callable[[int, str], str]) -> RangeTurns:
        """The turns of [lo, hi) epoch seconds in time order, with `reason(turns in the span,
        what was dropped)`. A turn already returned for another span keeps its row."""

    def turn_ids(self, rows: np.ndarray) -> list[str]: ...

    def entries(self, rows: np.ndarray) -> list[DiaryEntry]:
        """The entries of these rows, same order."""

    def digest(self, day: str, turns: int) -> str | None:
        """The memory LLM's digest of `day`, when one was written for the day's `turns` turns
        (all of them in the range); None otherwise."""

    def broken(self, start: datetime, stop: datetime) -> list[str]:
        """Problems of the stored days the range touches (a day that could not be read is not empty)."""

    def search(self, request: SearchRequest) -> list[SearchHit]: ...


class DiaryBackend(Protocol):
    """One character's diary storage, every user's."""

    def source(self, user_id: str) -> DiarySource:
        """The user's diary as one answer reads it."""

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        """Store `entry` durably and index it for search (embedding outside any lock); False, and
        nothing changes, when the user has an entry with its id."""

    def append_many(self, user_id: str, entries: Sequence[DiaryEntry], *, progress: bool = False) -> int:
        """Bulk import of the entries whose ids are new; how many were written."""

    def contains(self, user_id: str, turn_id: str) -> bool:
        """Whether an entry with this id is stored (forgotten ones count where the backend
        remembers them: a replayed turn must not come back)."""

    def repair(self, user_id: str, turn_id: str) -> None:
        """Index a stored turn the search lacks (a crash came between storing and indexing it)."""

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
        """The live entries of these turns, by id (missing ones left out)."""

    def range(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        """Every entry with start <= time < end, chronological."""

    def replace(self, user_id: str, turn_id: str, entry: DiaryEntry | None) -> int:
        """Put `entry` (the turn's id and time, other texts, tag or dates) in the place of the turn's
        entry (None: forget it), search index included; how many entries changed (0: no such turn)."""

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        """Every local day with turns, and how many, oldest first."""

    def last_turn_time(self, user_id: str) -> datetime | None: ...

    def users(self) -> list[str]: ...

    def digest(self, user_id: str, day: date, turns: int) -> str | None:
        """The day's stored digest when it was written for `turns` turns, else None."""

    def write_digest(self, user_id: str, day: date, *, turns: int, text: str, by: str) -> None: ...

    def search(self, user_id: str, request: SearchRequest) -> list[SearchHit]:
        """The turn index's ranking (`engine.search`), the same on every backend."""

    def recorded(self, user_id: str) -> None:
        """Upkeep after a new turn, on the background worker (search terms' vectors, a vector
        index grown past its threshold); a failure here only delays it."""

    def index_missing(self, user_id: str, *, progress: bool = False) -> int:
        """Index the user's turns that lack search rows or vectors; how many were indexed."""

    def rebuild(self, user_id: str, *, progress: bool = False) -> int:
        """Rebuild what the backend derives for the user from the stored turns; the turn count."""

    def problems(self) -> list[str]:
        """Stored days that could not be read (file:line), per open user."""

    def close(self) -> None: ...
