"""The diary and core-memory stores of the Postgres backend (the `Store` protocol, same names).

Diary (`PgDiaryStore`): a turn is tagged and its relative dates resolved as in the files backend,
then written to `diary_turns` and indexed in `turn_search` (vector + jieba/tsvector). A prompt
asks the database: a past range the message asks about is an index range scan on (user, time),
answered whole when it fits the budget, else by its most relevant turns (the search restricted to
the range) with a note of how many were left out; then the hybrid search over every turn of the
user fills the budget left. Rendering is the diary's own (`engine.stores.diary.render`).

Core (`PgCoreStore`): the files core store with its fact repository swapped for
`PgFactRepository` (extraction, reconciliation, relevance and administration unchanged).
"""

from __future__ import annotations

import logging
import zoneinfo
from collections.abc import Sequence
from datetime import date, datetime

import numpy as np

from engine.adapters.embedder import Embedder
from engine.adapters.llm import LLM
from engine.config import CoreConfig, DiaryConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.search.base import SearchHit
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.core import CoreMemoryStore
from engine.stores.core.admin import CoreAdmin
from engine.stores.core.extraction import Extraction
from engine.stores.diary.admin import DiarySearchResult
from engine.stores.diary.answer import (
    MIN_SEARCH_TOKENS, RAW_CANDIDATES, SEARCH_K, Names, is_small_talk, search_text, side_of,
)
from engine.stores.diary.dates import resolve_dates
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.recall import clip_to_past, decide
from engine.stores.diary.render import STORE, Candidate, fmt_range, raw_hits, search_hits
from engine.stores.diary.writing import write_tag
from engine.storage.postgres.backend import PgBackend
from engine.storage.postgres.core_repo import PgFactRepository
from engine.storage.postgres.diary import PgDiaryTurns, StoredTurn
from engine.storage.postgres.search import IndexedTurn, PgTurnSearch
from engine.tokens import count_tokens

log = logging.getLogger(__name__)


class PgDiaryStore:
    name = STORE

    def __init__(self, *, backend: PgBackend, paths: CharacterPaths, config: DiaryConfig, embedder: Embedder,
                 llm: LLM | None, tz: zoneinfo.ZoneInfo, prompts: Prompts, budget_tokens: int) -> None:
        character_id = paths.root.name
        owners = backend.owners(character_id)
        self.turns = PgDiaryTurns(backend.db, character_id, owners=owners)
        self.index = PgTurnSearch(backend.db, character_id, state=backend.state, owners=owners)
        self.paths, self.config, self.embedder, self.llm = paths, config, embedder, llm
        self.tz, self.prompts, self.budget_tokens = tz, prompts, budget_tokens
        self._names: Names | None = None

    # -- the Store protocol ---------------------------------------------------------------------

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        if self.config.enabled and self.config.search and recent and message.strip():
            return [message]
        return []

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        from engine.timeparse import parse_time_ranges

        now = query.now.astimezone(self.tz)
        names = self.names()
        expressions = parse_time_ranges(query.message, now=now)
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        ranges = [(e, c) for e in expressions if (c := clip_to_past(e.start, e.end, now)) is not None]
        decision = decide(query.message, has_past_range=bool(ranges), require_cue=self.config.require_recall_cue,
                          before_today=any(stop <= today for _, (_, stop) in ranges))
        vector = _message_vector(query)
        text = search_text(query.message, [e.span for e in expressions], names)
        hits: list[Hit] = []
        covered: set[str] = set()
        budget = self.budget_tokens
        if decision.use:
            hits += self._range_hits(query.user_id, ranges, decision.cue, vector, text)
            covered = {str(i) for h in hits for i in (h.meta.get("ids") or [h.meta.get("id")]) if i}
            budget -= sum(h.tokens or count_tokens(h.text) for h in hits)
        if self.config.search and budget >= MIN_SEARCH_TOKENS and not is_small_talk(query.message, text):
            found = self._search(query.user_id, text, vector, side=side_of(query.message, names), exclude=covered)
            window = {" ".join(m.get("content", "").split()) for m in query.recent}
            hits += search_hits(found, tz=self.tz, budget=budget, max_line_tokens=self.config.max_turn_tokens,
                                skip_texts=window, reason="hybrid search (words + meaning)", names=(names.user, names.char))
        return hits

    def _range_hits(self, user_id: str, ranges: list, cue: str, vector: np.ndarray | None, text: str) -> list[Hit]:
        turns: dict[str, StoredTurn] = {}
        parts = []
        for expr, (start, stop) in ranges:
            found = self.turns.range(user_id, start, stop, limit=RAW_CANDIDATES)
            desc = fmt_range(expr.start, expr.end, self.tz)
            parts.append(f'"{expr.text}" {desc}')
            for t in found:
                turns.setdefault(t.id, t)
        described = "; ".join(parts)
        if not turns:
            note = (f"（{described} 没有任何对话记录）" if self.prompts.language == "zh"
                    else f"(no conversation records for {described})")
            return [Hit(STORE, note, 1.0, f"{described}: 0 turns", pinned=True, meta={"kind": "empty"})]
        ordered = sorted(turns.values(), key=lambda t: (t.at, t.id))
        scores: dict[str, float] = {}
        if len(ordered) > 1 and text.strip():
            start, stop = ranges[0][1]
            for h in self.index.search(user_id, text, vector, k=min(len(ordered), RAW_CANDIDATES), start=start, end=stop):
                scores[h.turn_id] = h.score
        reason = f"{described}, {len(ordered)} turns" + (f', recall cue "{cue}"' if cue else "")
        cands = [Candidate(i, int(t.at.timestamp()), t.local_day.isoformat(), t.tag, scores.get(t.id, 0.0), reason)
                 for i, t in enumerate(ordered)]
        hits, left = raw_hits(cands, lambda pool: [ordered[c.row].to_entry() for c in pool], tz=self.tz,
                              budget=self.budget_tokens, max_turn_tokens=self.config.max_turn_tokens, limit=RAW_CANDIDATES)
        if left:
            how = "，以上是最相关的部分" if self.prompts.language == "zh" else "; the most relevant ones are shown"
            note = self.prompts.render("diary_omitted", range=described, total=len(cands), omitted=left, how=how)
            hits.append(Hit(STORE, note, 1.0, f"{left} of {len(cands)} turns left out for the token budget",
                            pinned=True, meta={"kind": "omitted", "omitted": left, "total": len(cands)}))
        return hits

    def _search(self, user_id: str, text: str, vector: np.ndarray | None, *, side: str | None,
                exclude: set[str]) -> list[SearchHit]:
        """The index's best turns as halves (the diary's rendering shows lines), best first."""
        found = [h for h in self.index.search(user_id, text, vector, k=SEARCH_K // 2) if h.turn_id not in exclude]
        stored = self.turns.get_many(user_id, [h.turn_id for h in found])
        out: list[SearchHit] = []
        for h in found:
            t = stored.get(h.turn_id)
            if t is None:
                continue
            why = "words" if h.lexical_rank is not None else "meaning"
            for half, body in (("user", t.user), ("assistant", t.assistant)):
                # The half the question is about ranks first (as the files index's side bonus does).
                score = h.score * (1.0 if side in (None, half) else 0.9) * (1.0 if half == "user" else 0.999)
                out.append(SearchHit(turn_id=t.id, ts=int(t.at.timestamp()), side=half, score=score,
                                     lexical=h.lexical_score or 0.0, dense=h.cosine or 0.0, why=why, text=body,
                                     dates=t.dates))
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
                self._index(turn.user_id, existing)
            return
        at = turn.at.astimezone(self.tz).replace(microsecond=0)
        tag, _ = write_tag(turn.user, turn.assistant, llm=self.llm, prompts=self.prompts)
        dates = resolve_dates([turn.user, turn.assistant], at, self.tz)
        stored = StoredTurn(id=turn.id, at=at, user=turn.user, assistant=turn.assistant, tag=tag, chat_id=turn.chat_id,
                            resolved_dates=tuple({"text": t, "date": d} for t, d in dates))
        vector = self._vector(stored)  # outside any transaction: the slow part
        if self.turns.append(turn.user_id, stored):
            self._index(turn.user_id, stored, vector)

    def _vector(self, t: StoredTurn) -> np.ndarray:
        return self.embedder.embed([f"{t.user}\n{t.assistant}"], role="passage")[0]

    def _index(self, user_id: str, t: StoredTurn, vector: np.ndarray | None = None) -> None:
        vector = self._vector(t) if vector is None else vector
        self.index.add(user_id, [IndexedTurn(t.id, t.at, t.user, t.assistant, vector)])

    def forget(self, user_id: str, turn_id: str) -> int:
        return self.turns.forget(user_id, turn_id)

    def problems(self) -> list[str]:
        return []

    def close(self) -> None:
        """The pool belongs to the backend (shared by every character of the process)."""

    # -- admin API (inspector, HTTP memory API, CLI) ----------------------------------------------

    def names(self) -> Names:
        if self._names is None:
            from engine.character import load_character

            try:
                c = load_character(self.paths)
                self._names = Names(c.user_name, c.name)
            except Exception as exc:  # noqa: BLE001 - names only steer ranking; never fail a prompt
                log.warning("diary: character names unavailable (%s); search without them", exc)
                self._names = Names("", "")
        return self._names

    def entries(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        return [t.to_entry() for t in self.turns.range(user_id, start, end)]

    def get(self, user_id: str, turn_id: str) -> DiaryEntry | None:
        t = self.turns.get(user_id, turn_id)
        return None if t is None or t.deleted else t.to_entry()

    def has_entry(self, user_id: str, entry_id: str) -> bool:
        return self.turns.get(user_id, entry_id) is not None

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        stored = StoredTurn.from_entry(entry)
        added = self.turns.append(user_id, stored)
        if added:
            self._index(user_id, stored)
        return added

    def edit(self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None,
             tag: str | None = None) -> DiaryEntry:
        t = self.turns.edit(user_id, turn_id, user=user, assistant=assistant, tag=tag)
        if t is None:
            raise KeyError(f"no diary entry with id {turn_id!r} for user {user_id!r}")
        if user is not None or assistant is not None:
            self._index(user_id, t)
        return t.to_entry()

    def search(self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None,
               k: int = 20) -> list[DiarySearchResult]:
        vector = self.embedder.embed([text], role="query")[0] if text.strip() else None
        found = self.index.search(user_id, text, vector, k=k, start=start, end=end)
        stored = self.turns.get_many(user_id, [h.turn_id for h in found])
        return [DiarySearchResult(turn_id=h.turn_id, at=stored[h.turn_id].at.astimezone(self.tz), side="user",
                                  text=stored[h.turn_id].user, score=h.score,
                                  why="words" if h.lexical_rank is not None else "meaning")
                for h in found if h.turn_id in stored]

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        return self.turns.day_counts(user_id)

    def last_turn_time(self, user_id: str) -> datetime | None:
        found = self.turns.range(user_id, datetime.fromisoformat("0001-01-02T00:00:00+00:00"),
                                 datetime.fromisoformat("9999-12-30T00:00:00+00:00"))
        return found[-1].at.astimezone(self.tz) if found else None

    def build_search_index(self, user_id: str, *, progress: bool = True) -> int:
        """Index the user's turns that lack a search row or vector; returns how many."""
        done = 0
        while ids := self.index.missing(user_id, limit=256):
            stored = self.turns.get_many(user_id, ids)
            vectors = self.embedder.embed([f"{t.user}\n{t.assistant}" for t in stored.values()], role="passage")
            self.index.add(user_id, [IndexedTurn(t.id, t.at, t.user, t.assistant, v)
                                     for t, v in zip(stored.values(), vectors)])
            done += len(stored)
            if len(stored) < len(ids):
                break
        return done

    reindex = build_search_index


def _message_vector(query: Query) -> np.ndarray | None:
    texts, vectors = query.pieces.get(STORE, ((), None))
    if texts and vectors is not None and len(vectors):
        return np.asarray(vectors[0], dtype=np.float32)
    return query.vector


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
