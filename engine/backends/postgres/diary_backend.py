"""The Postgres backend's diary (`DiaryBackend`).

Diary (`PgDiary`): entries in `diary_turns` (forgetting marks a row deleted, so a replayed record
of the same turn id does not bring it back) and their search rows in `turn_search` (whole-turn
and per-line vectors, jieba/tsvector). A past range is an index range scan on (user, time). The
search is the files backend's own ranking (`engine.search`) run over a copy of the user's rows
that each worker keeps up to date from the table (`mirror.py`): the same question ranks the same
way on both backends. Tagging, dating, answering and rendering are the diary's own
(`engine.stores.diary`).
"""

from __future__ import annotations

import logging
import zoneinfo
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import date, datetime, timezone

import numpy as np

from engine.adapters.embedder import Embedder
from engine.paths import CharacterPaths
from engine.search.base import SearchHit, SearchRequest
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.render import RangeTurns
from engine.backends.postgres.backend import PgBackend
from engine.backends.postgres.diary import PgDiaryTurns, StoredTurn
from engine.backends.postgres.mirror import PgSearchMirror, turn_vectors
from engine.backends.postgres.search import IndexedTurn, PgTurnSearch

log = logging.getLogger(__name__)

HNSW_CHECK_EVERY = 500
"""Turns recorded for one user between two looks at whether they need their HNSW index."""


class PgDiary:
    """Every user's diary of one character, in the database."""

    def __init__(self, *, backend: PgBackend, paths: CharacterPaths, embedder: Embedder, tz: zoneinfo.ZoneInfo) -> None:
        character_id = paths.root.name
        owners = backend.owners(character_id)
        self.turns = PgDiaryTurns(backend.db, character_id, owners=owners)
        self.index = PgTurnSearch(backend.db, character_id, state=backend.state, owners=owners)
        self.mirror = PgSearchMirror(self.index, embedder, paths)
        self.embedder, self.tz = embedder, tz
        self._recorded: dict[str, int] = {}
        self._hnsw_done: set[str] = set()

    def source(self, user_id: str) -> "_PgDiarySource":
        return _PgDiarySource(self, user_id)

    # -- writing ----------------------------------------------------------------------------------

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        stored = StoredTurn.from_entry(entry)
        vectors = self._vectors([stored])  # outside any transaction: the slow part
        if not self.turns.append(user_id, stored):
            return False
        self._index(user_id, [stored], vectors)
        return True

    def append_many(self, user_id: str, entries: Sequence[DiaryEntry], *, progress: bool = False) -> int:
        """One transaction; ids already stored are skipped by the insert itself (and counted out)."""
        stored = [StoredTurn.from_entry(e) for e in dict((e.id, e) for e in entries).values()]
        added = self.turns.append_many(user_id, stored)
        if added:
            self.index_missing(user_id, progress=progress)
        return added

    def contains(self, user_id: str, turn_id: str) -> bool:
        return self.turns.get(user_id, turn_id) is not None

    def repair(self, user_id: str, turn_id: str) -> None:
        existing = self.turns.get(user_id, turn_id)
        if existing is not None and not existing.deleted and turn_id in self.index.missing(user_id):
            self._index(user_id, [existing])

    def replace(self, user_id: str, turn_id: str, entry: DiaryEntry | None) -> int:
        if entry is None:
            return self.turns.forget(user_id, turn_id)
        old = self.turns.get(user_id, turn_id)
        if old is None or old.deleted:
            return 0
        texts = (entry.user, entry.assistant) != (old.user, old.assistant)
        turn = self.turns.edit(user_id, turn_id, user=entry.user if texts else None,
                               assistant=entry.assistant if texts else None, tag=entry.tag,
                               redate=lambda *_: entry.dates)
        if turn is None:
            return 0
        if texts:
            self._index(user_id, [turn])
        return 1

    def write_digest(self, user_id: str, day: date, *, turns: int, text: str, by: str) -> None:
        self.turns.set_digest(user_id, day, turns=turns, text=text, by=by)

    def recorded(self, user_id: str) -> None:
        """Every `HNSW_CHECK_EVERY` turns this worker records for a user (and at its first), build
        the user's HNSW index if they crossed `hnsw_min_rows` (in this background job; another
        worker building it already is skipped). `kioku db index` does it for every user."""
        n = self._recorded[user_id] = self._recorded.get(user_id, 0) + 1
        if self.index.pgvector and n % HNSW_CHECK_EVERY == 1 and user_id not in self._hnsw_done:
            if self.index.ensure_owner_index(user_id) is not None:
                self._hnsw_done.add(user_id)

    def index_missing(self, user_id: str, *, progress: bool = False) -> int:
        """Index the user's turns that lack a search row or vectors, then bring this worker's copy
        up to date (term vectors too, which only the copy holds); returns how many turns."""
        done = 0
        while ids := self.index.missing(user_id, limit=256):
            stored = self.turns.get_many(user_id, ids)
            self._index(user_id, list(stored.values()))
            done += len(stored)
            if len(stored) < len(ids):
                break
        self.mirror.catch_up(user_id)
        return done

    def rebuild(self, user_id: str, *, progress: bool = False) -> int:
        self.index_missing(user_id, progress=progress)
        return self.turns.count(user_id)

    def _index(self, user_id: str, turns: Sequence[StoredTurn], vectors: np.ndarray | None = None) -> int:
        """Write the turns' search rows: whole-turn vector and per-half vectors (`turn_vectors`),
        and the vectors of their words the database has none for yet (`terms.py`)."""
        vectors = self._vectors(turns) if vectors is None else vectors
        self.mirror.words.ensure(text for t in turns for text in (t.user, t.assistant))
        return self.index.add(user_id, [IndexedTurn(t.id, t.at, t.user, t.assistant, v[2], v[:2])
                                        for t, v in zip(turns, vectors)])

    def _vectors(self, turns: Sequence[StoredTurn]) -> np.ndarray:
        return turn_vectors(lambda texts: self.embedder.embed(texts, role="passage"),
                            [(t.user, t.assistant) for t in turns], dim=self.embedder.dim)

    # -- reading ----------------------------------------------------------------------------------

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
        return {tid: t.to_entry() for tid, t in self.turns.get_many(user_id, list(turn_ids)).items()}

    def range(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        return [t.to_entry() for t in self.turns.range(user_id, start, end)]

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        return self.turns.day_counts(user_id)

    def last_turn_time(self, user_id: str) -> datetime | None:
        at = self.turns.last_time(user_id)
        return None if at is None else at.astimezone(self.tz)

    def users(self) -> list[str]:
        return self.turns.users()

    def digest(self, user_id: str, day: date, turns: int) -> str | None:
        found = self.turns.digest(user_id, day)
        return found[1] if found is not None and found[0] == turns and found[1] else None

    def search(self, user_id: str, request: SearchRequest) -> list[SearchHit]:
        return self.mirror.search(user_id, request)

    def problems(self) -> list[str]:
        return []  # rows, not files: nothing can be half-read

    def close(self) -> None:
        """The search copies are this backend's; the pool belongs to the backend (shared by every
        character of the process)."""
        self.mirror.close()


__all__ = ["PgDiary"]


class _PgDiarySource:
    """One user's diary in the database as `answer` reads it (`DiarySource`). A candidate's row is
    its place in `turns`, the turns this answer has read."""

    def __init__(self, store: PgDiary, user_id: str) -> None:
        self.store, self.user_id = store, user_id
        self.turns: list[StoredTurn] = []
        self._row_of: dict[str, int] = {}
        self._digests: dict[str, tuple[int, str]] | None = None

    def hold(self):
        return nullcontext()  # every read is its own snapshot; nothing to catch up with

    def span(self, lo: int, hi: int, vector, reason) -> RangeTurns:
        found = self.store.turns.range(self.user_id, datetime.fromtimestamp(lo, timezone.utc),
                                       datetime.fromtimestamp(hi, timezone.utc))
        rows = []
        for t in found:
            row = self._row_of.get(t.id)
            if row is None:
                row = self._row_of[t.id] = len(self.turns)
                self.turns.append(t)
            rows.append(row)
        tz = self.store.tz
        return RangeTurns.of(rows, [int(t.at.timestamp()) for t in found],
                             [t.at.astimezone(tz).date().isoformat() for t in found], [t.tag for t in found],
                             reason(len(found), ""))

    def turn_ids(self, rows) -> list[str]:
        return [self.turns[r].id for r in rows.tolist()]

    def entries(self, rows) -> list[DiaryEntry]:
        return [self.turns[r].to_entry() for r in rows.tolist()]

    def digest(self, day: str, turns: int) -> str | None:
        if self._digests is None:
            self._digests = {d.isoformat(): (n, text) for d, n, text, _ in self.store.turns.digests(self.user_id)}
        n, text = self._digests.get(day, (0, ""))
        return text if text and n == turns else None

    def broken(self, start: datetime, stop: datetime) -> list[str]:
        return []  # rows, not files: nothing can be half-read

    def search(self, request: SearchRequest) -> list[SearchHit]:
        return self.store.search(self.user_id, request)
