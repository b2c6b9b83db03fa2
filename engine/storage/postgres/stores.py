"""The diary and core-memory stores of the Postgres backend (the `Store` protocol, same names).

Diary (`PgDiaryStore`): a turn is tagged and its relative dates resolved as in the files backend,
then written to `diary_turns` and indexed in `turn_search` (whole-turn and per-line vectors,
jieba/tsvector). A prompt follows the files diary's `answer` step for step: a past range the
message asks about is an index range scan on (user, time), answered whole, by its most relevant
turns or by day digests; then the search fills the budget left. The search is the files
backend's own ranking (`engine.search`) run over a copy of the user's rows that each worker keeps
up to date from the table (`mirror.py`), so both backends rank alike. Rendering is the diary's
own (`engine.stores.diary.render`).

Core (`PgCoreStore`): the files core store with its fact repository swapped for
`PgFactRepository` (extraction, reconciliation, relevance and administration unchanged).
"""

from __future__ import annotations

import logging
import math
import zoneinfo
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import date, datetime, timezone

import numpy as np

from engine.adapters.embedder import Embedder
from engine.adapters.llm import LLM
from engine.config import CoreConfig, DiaryConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.search.base import SearchHit, SearchRequest
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.core import CoreMemoryStore
from engine.stores.core.admin import CoreAdmin
from engine.stores.core.extraction import Extraction
from engine.stores.diary.admin import DiarySearchResult
from engine.stores.diary.answer import Answering, Names, answer, character_names, query_texts
from engine.stores.diary.dates import resolve_dates
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.render import STORE, RangeTurns
from engine.stores.diary.writing import write_tag
from engine.storage.postgres.backend import PgBackend
from engine.storage.postgres.core_repo import PgFactRepository
from engine.storage.postgres.diary import PgDiaryTurns, StoredTurn, dates_json
from engine.storage.postgres.mirror import PgSearchMirror, turn_vectors
from engine.storage.postgres.search import IndexedTurn, PgTurnSearch

log = logging.getLogger(__name__)

HNSW_CHECK_EVERY = 500
"""Turns recorded for one user between two looks at whether they need their HNSW index."""


class PgDiaryStore:
    name = STORE

    def __init__(self, *, backend: PgBackend, paths: CharacterPaths, config: DiaryConfig, embedder: Embedder,
                 llm: LLM | None, tz: zoneinfo.ZoneInfo, prompts: Prompts, budget_tokens: int) -> None:
        character_id = paths.root.name
        owners = backend.owners(character_id)
        self.turns = PgDiaryTurns(backend.db, character_id, owners=owners)
        self.index = PgTurnSearch(backend.db, character_id, state=backend.state, owners=owners)
        self.mirror = PgSearchMirror(self.index, embedder, paths)
        self._recorded: dict[str, int] = {}
        self._hnsw_done: set[str] = set()
        self.paths, self.config, self.embedder, self.llm = paths, config, embedder, llm
        self.tz, self.prompts, self.budget_tokens = tz, prompts, budget_tokens
        self._names: Names | None = None

    # -- the Store protocol ---------------------------------------------------------------------

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        return query_texts(self.config, message, recent, self.names())

    def retrieve(self, query: Query) -> list[Hit]:
        """What the files diary puts in a prompt (the same `answer`), over the database: a past
        range the message asks about (an index range scan), then the shared search."""
        if not self.config.enabled:
            return []
        return answer(_PgDiarySource(self, query.user_id), Answering.of(self), query, self.names())

    def _search(self, user_id: str, request: SearchRequest) -> list[SearchHit]:
        """The worker's copy of the user's index (the files ranking); while a large copy is first
        built in the background, the search in SQL (`PgTurnSearch.search`), as halves."""
        found = self.mirror.search(user_id, request)
        return found if found is not None else self._sql_search(user_id, request)

    def _sql_search(self, user_id: str, request: SearchRequest) -> list[SearchHit]:
        start = datetime.fromtimestamp(request.start, timezone.utc) if request.only_range and request.start else None
        end = datetime.fromtimestamp(request.end, timezone.utc) if request.only_range and request.end else None
        found = [h for h in self.index.search(user_id, request.text, request.vector, k=max(1, request.k // 2),
                                              start=start, end=end) if h.turn_id not in request.exclude]
        stored = self.turns.get_many(user_id, [h.turn_id for h in found])
        out: list[SearchHit] = []
        for h in found:
            t = stored.get(h.turn_id)
            if t is None:
                continue
            why = "words" if h.lexical_rank is not None else "meaning"
            for half, body in (("user", t.user), ("assistant", t.assistant)):
                if not body.strip():
                    continue
                score = h.score * (1.0 if request.side in (None, half) else 0.9) * (1.0 if half == "user" else 0.999)
                out.append(SearchHit(turn_id=t.id, ts=int(t.at.timestamp()), side=half, score=score,
                                     lexical=h.lexical_score or 0.0, dense=h.cosine or 0.0, why=why, text=body,
                                     dates=t.dates, in_range=start is not None))
        out.sort(key=lambda s: -s.score)
        return out

    def record(self, turn: Turn) -> None:
        """Tag the turn, resolve its dates, store and index it. Idempotent by turn id: a replay
        re-indexes a stored turn (a crash may have come between the two transactions)."""
        if not self.config.enabled:
            return
        existing = self.turns.get(turn.user_id, turn.id)
        if existing is not None:
            if not existing.deleted and turn.id in self.index.missing(turn.user_id):
                self._index(turn.user_id, [existing])
            return
        at = turn.at.astimezone(self.tz).replace(microsecond=0)
        tag, _ = write_tag(turn.user, turn.assistant, llm=self.llm, prompts=self.prompts)
        dates = self._dates_of(turn.user, turn.assistant, at)
        stored = StoredTurn(id=turn.id, at=at, user=turn.user, assistant=turn.assistant, tag=tag, chat_id=turn.chat_id,
                            resolved_dates=dates_json(dates))
        vectors = self._vectors([stored])  # outside any transaction: the slow part
        if self.turns.append(turn.user_id, stored):
            self._index(turn.user_id, [stored], vectors)
            self._schedule_hnsw(turn.user_id)

    def _schedule_hnsw(self, user_id: str) -> None:
        """Every `HNSW_CHECK_EVERY` turns this worker records for a user (and at its first), build
        the user's HNSW index if they crossed `hnsw_min_rows` (in this background job; another
        worker building it already is skipped). `kioku db index` does it for every user."""
        n = self._recorded[user_id] = self._recorded.get(user_id, 0) + 1
        if self.index.pgvector and n % HNSW_CHECK_EVERY == 1 and user_id not in self._hnsw_done:
            if self.index.ensure_owner_index(user_id) is not None:
                self._hnsw_done.add(user_id)

    def _index(self, user_id: str, turns: Sequence[StoredTurn], vectors: np.ndarray | None = None) -> int:
        """Write the turns' search rows: whole-turn vector and per-half vectors (`turn_vectors`)."""
        vectors = self._vectors(turns) if vectors is None else vectors
        return self.index.add(user_id, [IndexedTurn(t.id, t.at, t.user, t.assistant, v[2], v[:2])
                                        for t, v in zip(turns, vectors)])

    def _vectors(self, turns: Sequence[StoredTurn]) -> np.ndarray:
        return turn_vectors(lambda texts: self.embedder.embed(texts, role="passage"),
                            [(t.user, t.assistant) for t in turns], dim=self.embedder.dim)

    def forget(self, user_id: str, turn_id: str) -> int:
        return self.turns.forget(user_id, turn_id)

    def problems(self) -> list[str]:
        return []

    def close(self) -> None:
        """The search copies are this store's; the pool belongs to the backend (shared by
        every character of the process)."""
        self.mirror.close()

    # -- admin API (inspector, HTTP memory API, CLI) ----------------------------------------------

    def names(self) -> Names:
        if self._names is None:
            self._names = character_names(self.paths)
        return self._names

    def entries(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        return [t.to_entry() for t in self.turns.range(user_id, start, end)]

    def get(self, user_id: str, turn_id: str) -> DiaryEntry | None:
        t = self.turns.get(user_id, turn_id)
        return None if t is None or t.deleted else t.to_entry()

    def user_ids(self) -> list[str]:
        return self.turns.users()

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
        return {tid: t.to_entry() for tid, t in self.turns.get_many(user_id, list(turn_ids)).items()}

    def has_entry(self, user_id: str, entry_id: str) -> bool:
        return self.turns.get(user_id, entry_id) is not None

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        stored = StoredTurn.from_entry(entry)
        added = self.turns.append(user_id, stored)
        if added:
            self._index(user_id, [stored])
        return added

    def edit(self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None,
             tag: str | None = None) -> DiaryEntry:
        t = self.turns.edit(user_id, turn_id, user=user, assistant=assistant, tag=tag, redate=self._dates_of)
        if t is None:
            raise KeyError(f"no diary entry with id {turn_id!r} for user {user_id!r}")
        if user is not None or assistant is not None:
            self._index(user_id, [t])
        return t.to_entry()

    def _dates_of(self, user: str, assistant: str, at: datetime) -> tuple[tuple[str, str], ...]:
        """As the files diary dates a turn, written or edited: against the turn's own time."""
        return resolve_dates([user, assistant], at, self.tz)

    def search(self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None,
               k: int = 20) -> list[DiarySearchResult]:
        """The turns that best match `text` (words and meaning), optionally within [start, end)."""
        vector = self.embedder.embed([text], role="query")[0] if text.strip() else None
        span = (math.ceil(start.timestamp()), math.ceil(end.timestamp())) if start and end else (None, None)
        found = self._search(user_id, SearchRequest(text=text, vector=vector, k=4 * k, start=span[0], end=span[1],
                                                    only_range=start is not None and end is not None, asks_memory=True))
        out: dict[str, DiarySearchResult] = {}
        for h in found:
            if h.turn_id not in out:
                out[h.turn_id] = DiarySearchResult(turn_id=h.turn_id, at=datetime.fromtimestamp(h.ts, self.tz),
                                                   side=h.side, text=h.text, score=h.score, why=h.why)
            if len(out) >= k:
                break
        return list(out.values())

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        return self.turns.day_counts(user_id)

    def last_turn_time(self, user_id: str) -> datetime | None:
        found = self.turns.range(user_id, datetime.fromisoformat("0001-01-02T00:00:00+00:00"),
                                 datetime.fromisoformat("9999-12-30T00:00:00+00:00"))
        return found[-1].at.astimezone(self.tz) if found else None

    def build_search_index(self, user_id: str, *, progress: bool = True) -> int:
        """Index the user's turns that lack a search row or vectors, then bring this worker's
        copy up to date (term vectors too, which only the copy holds); returns how many turns."""
        done = 0
        while ids := self.index.missing(user_id, limit=256):
            stored = self.turns.get_many(user_id, ids)
            self._index(user_id, list(stored.values()))
            done += len(stored)
            if len(stored) < len(ids):
                break
        self.mirror.catch_up(user_id)
        return done

    reindex = build_search_index


class PgCoreStore(CoreMemoryStore):
    """The core store over `PgFactRepository` (facts shared by every worker)."""

    def __init__(self, *, backend: PgBackend, paths: CharacterPaths, config: CoreConfig, embedder: Embedder,
                 llm: LLM | None, prompts: Prompts, tz: zoneinfo.ZoneInfo) -> None:
        super().__init__(paths=paths, config=config, embedder=embedder, llm=llm, prompts=prompts, tz=tz)
        character_id = paths.root.name
        self.repo = PgFactRepository(backend.db, character_id, embedder, tz, owners=backend.owners(character_id),
                                     check_interval_s=config.check_interval_s)
        self.extraction = Extraction(self.repo, self.reconciler, config, tz)
        self.admin = CoreAdmin(self.repo, self.reconciler, tz)


__all__ = ["PgCoreStore", "PgDiaryStore"]


class _PgDiarySource:
    """One user's diary in the database as `answer` reads it (`DiarySource`). A candidate's row is
    its place in `turns`, the turns this answer has read."""

    def __init__(self, store: PgDiaryStore, user_id: str) -> None:
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
        return self.store._search(self.user_id, request)
