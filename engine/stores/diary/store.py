"""The diary store: every past turn, answered by time expressions ("昨天", "last Tuesday") and by
hybrid search (words + meaning) over every turn. One logic for every backend; where the turns are
kept is the `DiaryBackend` it is given (`port.py`).

Reading (`answer.py`): a named past range the message asks about -> its turns (a range scan of
the backend) -> raw turns or per-day digests within the token budget; then the search's best
lines for the budget left (`engine.search`, the same ranking on every backend).

Writing (`record`, on the background worker, idempotent by turn id): the memory LLM tags the
turn (offline fallback on any failure), its relative dates are resolved against its own time,
the backend stores and indexes the entry; when a local day closes, the memory LLM writes that
day's digest.
"""

from __future__ import annotations

import logging
import math
import threading
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import ClassVar

import numpy as np

from engine.adapters.embedder import Embedder
from engine.adapters.llm import LLM
from engine.config import DiaryConfig
from engine.errors import LLMError
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.search.base import SearchRequest
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.diary.answer import Answering, answer
from engine.stores.diary.question import Names, character_names, query_texts
from engine.stores.diary.dates import resolve_dates
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.port import DiaryBackend
from engine.stores.diary.render import STORE
from engine.stores.diary.results import DiarySearchResult
from engine.stores.diary.writing import write_digest, write_tag

log = logging.getLogger(__name__)


@dataclass(eq=False, kw_only=True)
class DiaryStore:
    name: ClassVar[str] = STORE
    backend: DiaryBackend
    paths: CharacterPaths
    """The character's folder (its character file names the participants)."""
    config: DiaryConfig
    embedder: Embedder
    llm: LLM | None
    tz: zoneinfo.ZoneInfo
    prompts: Prompts
    budget_tokens: int
    _names: Names | None = field(default=None, init=False)
    _last_day: dict[str, str] = field(default_factory=dict, init=False)
    """The local day of each user's last recorded turn (digests are written when it changes)."""
    _days_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    # -- the Store protocol ---------------------------------------------------------------------

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        return query_texts(self.config, message, recent, self.names(), self.tz)

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        how = Answering(config=self.config, prompts=self.prompts, tz=self.tz, budget=self.budget_tokens,
                        model_id=self.embedder.model_id)
        return answer(self.backend.source(query.user_id), how, query, self.names())

    def names(self) -> Names:
        if self._names is None:
            self._names = character_names(self.paths)
        return self._names

    def record(self, turn: Turn) -> None:
        """Tag the turn (LLM, else the offline fallback), resolve its relative dates, store and
        index it, and digest closed days. Idempotent by turn id: a replayed turn adds nothing (and
        costs no LLM call); one a crash left unindexed is indexed."""
        if not self.config.enabled:
            return
        if self.backend.contains(turn.user_id, turn.id):
            self.backend.repair(turn.user_id, turn.id)
            return
        at = turn.at.astimezone(self.tz).replace(microsecond=0)
        tag, _source = write_tag(turn.user, turn.assistant, llm=self.llm, prompts=self.prompts)
        entry = DiaryEntry(turn.id, at, tag, turn.user, turn.assistant, self._dates(turn.user, turn.assistant, at))
        if self.backend.append(turn.user_id, entry):
            self.backend.recorded(turn.user_id)
        self._digest_closed_days(turn.user_id, entry.local_day(self.tz))

    def forget(self, user_id: str, turn_id: str) -> int:
        """Delete that turn's entry (and its search rows); how many entries changed."""
        return self.backend.replace(user_id, turn_id, None)

    def problems(self) -> list[str]:
        """Stored days with unreadable items (file:line), per open user."""
        return self.backend.problems()

    def close(self) -> None:
        self.backend.close()

    # -- writing --------------------------------------------------------------------------------

    def _dates(self, user: str, assistant: str, at: datetime) -> tuple[tuple[str, str], ...]:
        """The absolute dates of the turn's relative time expressions, against its own time."""
        return resolve_dates([user, assistant], at, self.tz)

    def _digest_closed_days(self, user_id: str, today: date) -> None:
        """When the user's local day changes, ask the memory LLM for digests of the recent closed days."""
        with self._days_lock:
            if self._last_day.get(user_id) == today.isoformat():
                return
            self._last_day[user_id] = today.isoformat()
        if self.llm is None or self.config.digest_backfill_days == 0:
            return
        first = today - timedelta(days=self.config.digest_backfill_days)
        counts = dict(self.backend.day_counts(user_id))
        for day in (first + timedelta(days=i) for i in range(self.config.digest_backfill_days)):
            turns = counts.get(day, 0)
            if turns == 0 or self.backend.digest(user_id, day, turns):
                continue
            start = datetime.combine(day, time(), self.tz)
            entries = self.backend.range(user_id, start, datetime.combine(day + timedelta(days=1), time(), self.tz))
            try:
                text = write_digest(day.isoformat(), entries, llm=self.llm, prompts=self.prompts)
            except (LLMError, ValueError) as exc:
                log.warning("diary: digest of %s by the memory LLM failed (%s); the tag digest stands in", day, exc)
                continue
            self.backend.write_digest(user_id, day, turns=len(entries), text=text, by=self.llm.name)

    # -- the admin API (inspector, HTTP memory API, CLI, importers) ------------------------------

    def search(
        self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None, k: int = 20,
        vector: np.ndarray | None = None,
    ) -> list[DiarySearchResult]:
        """The turns that best match `text` (words and meaning), optionally within [start, end).
        `vector`: `text`'s query embedding when the caller has it (else embedded here)."""
        if vector is None and text.strip():
            vector = self.embedder.embed([text], role="query")[0]
        span = (math.ceil(start.timestamp()), math.ceil(end.timestamp())) if start and end else (None, None)
        request = SearchRequest(text=text, vector=vector, k=4 * k, start=span[0], end=span[1],
                                only_range=start is not None and end is not None, asks_memory=True)
        out: dict[str, DiarySearchResult] = {}
        for h in self.backend.search(user_id, request):
            if h.turn_id not in out:
                out[h.turn_id] = DiarySearchResult(turn_id=h.turn_id, at=datetime.fromtimestamp(h.ts, self.tz),
                                                   side=h.side, text=h.text, score=h.score, why=h.why)
            if len(out) >= k:
                break
        return list(out.values())

    def edit(
        self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None, tag: str | None = None
    ) -> DiaryEntry:
        """Correct a turn's texts or tag; its dates are resolved again (with nothing else given, the
        turn is only dated again: `kioku reindex --dates`). Returns the new entry."""
        old = self.get(user_id, turn_id)
        if old is None:
            raise KeyError(f"no diary entry with id {turn_id!r} for user {user_id!r}")
        new_user = old.user if user is None else user
        new_reply = old.assistant if assistant is None else assistant
        entry = DiaryEntry(old.id, old.at, old.tag if tag is None else tag, new_user, new_reply,
                           self._dates(new_user, new_reply, old.at))
        if entry != old:
            self.backend.replace(user_id, turn_id, entry)
        return entry

    def redate(self, user_id: str) -> int:
        """Resolve every turn's dates again by this version's rules and rewrite only the turns whose
        dates change (turns written by earlier versions keep the dates those gave them); how many."""
        changed = 0
        for day, _ in self.backend.day_counts(user_id):
            start = datetime.combine(day, time(), self.tz)
            for e in self.backend.range(user_id, start, datetime.combine(day + timedelta(days=1), time(), self.tz)):
                dates = self._dates(e.user, e.assistant, e.at)
                if dates != e.dates:
                    self.backend.replace(user_id, e.id, DiaryEntry(e.id, e.at, e.tag, e.user, e.assistant, dates))
                    changed += 1
        return changed

    def entries(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        """Every entry with start <= time < end, chronological."""
        return self.backend.range(user_id, start, end)

    def get(self, user_id: str, turn_id: str) -> DiaryEntry | None:
        return self.backend.get_many(user_id, [turn_id]).get(turn_id)

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
        return self.backend.get_many(user_id, turn_ids)

    def has_entry(self, user_id: str, entry_id: str) -> bool:
        return self.backend.contains(user_id, entry_id)

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        """Write an entry with its own time, tag and dates, without the LLM (imports). Idempotent by
        id: False when an entry with this id exists (use `entry_id_for` for content ids)."""
        return self.backend.append(user_id, entry)

    def append_many(self, user_id: str, entries: Sequence[DiaryEntry], *, progress: bool = False) -> int:
        """Bulk import of the entries not already present (by id); how many were written."""
        return self.backend.append_many(user_id, entries, progress=progress)

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        """Every local day with turns, and how many, oldest first (the inspector's calendar)."""
        return self.backend.day_counts(user_id)

    def last_turn_time(self, user_id: str) -> datetime | None:
        return self.backend.last_turn_time(user_id)

    def user_ids(self) -> list[str]:
        return self.backend.users()

    def reindex(self, user_id: str, *, progress: bool = False) -> int:
        """Rebuild what the backend derives for the user (CLI `reindex`); the entry count."""
        return self.backend.rebuild(user_id, progress=progress)

    def build_search_index(self, user_id: str, *, progress: bool = True) -> int:
        """Index the user's turns that lack search rows or vectors (after an import, or an old
        cache) and the vocabulary's terms that lack theirs; how many turns were indexed."""
        return self.backend.index_missing(user_id, progress=progress)
