"""The diary store: every past turn, answered by time expressions ("昨天", "last Tuesday") and by
hybrid search (words + meaning) over every turn.

Reading (`answer.py`): a named past range the message asks about -> a binary search over the
sorted timestamp index -> raw turns or per-day digests within the token budget; then the search's
best lines for the budget left (`engine.search`).

Writing (`record`, on the background worker, idempotent by turn id): the memory LLM tags the
turn (offline fallback on any failure), its relative dates are resolved against its own time,
the entry is appended durably and indexed for search; when a local day closes, the memory LLM
writes that day's digest.
"""

from __future__ import annotations

import logging
import math
import shutil
import threading
import zoneinfo
from collections.abc import Sequence
from datetime import date, datetime, timedelta

import numpy as np

from engine.adapters.embedder import Embedder, thresholds_for
from engine.adapters.llm import LLM
from engine.config import DiaryConfig
from engine.errors import EmbedderError, LLMError
from engine.fileio import append_text_durably
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.search.base import SearchRequest
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.diary.admin import DiarySearchResult, find_entries, find_entry, rewrite_entry
from engine.stores.diary.answer import Answering, Names, answer, character_names, query_texts
from engine.stores.diary.dates import resolve_dates
from engine.stores.diary.dayfile import day_file_name, prepare_for_append
from engine.stores.diary.entry import DiaryEntry, format_entry
from engine.stores.diary.render import STORE
from engine.stores.diary.source import FileDiarySource
from engine.stores.diary.userdiary import UserDiary, doc_of
from engine.stores.diary.writing import write_digest, write_tag

log = logging.getLogger(__name__)

TERMS_PER_TURN = 2048
"""Most vocabulary terms embedded after one recorded turn (a new turn brings a few; an index made
before term vectors existed brings its whole vocabulary, caught up over a few turns)."""


class DiaryStore:
    name = STORE

    def __init__(
        self,
        *,
        paths: CharacterPaths,
        config: DiaryConfig,
        embedder: Embedder,
        llm: LLM | None,
        tz: zoneinfo.ZoneInfo,
        prompts: Prompts,
        budget_tokens: int,
        progress: bool = False,
    ) -> None:
        self.paths = paths
        self.config = config
        self.embedder = embedder
        self.llm = llm
        self.tz = tz
        self.prompts = prompts
        self.budget_tokens = budget_tokens
        self.progress = progress
        self.filter_threshold = thresholds_for(embedder, "diary_filter", config.filter_threshold)
        self._names: Names | None = None
        self._users: dict[str, UserDiary] = {}
        self._users_lock = threading.Lock()

    # -- per-user state -------------------------------------------------------------------------

    def user(self, user_id: str) -> UserDiary:
        """The user's diary, opened (index loaded or rebuilt) on first use."""
        with self._users_lock:
            diary = self._users.get(user_id)
            if diary is None:
                diary = UserDiary(self.paths.user(user_id), tz=self.tz, embedder=self.embedder, progress=self.progress)
                self._users[user_id] = diary
            return diary

    # -- the Store protocol ---------------------------------------------------------------------

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        return query_texts(self.config, message, recent, self.names())

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        return answer(FileDiarySource(self, self.user(query.user_id)), Answering.of(self), query, self.names())

    def names(self) -> Names:
        if self._names is None:
            self._names = character_names(self.paths)
        return self._names

    def record(self, turn: Turn) -> None:
        """Tag the turn (LLM, else the offline fallback), resolve its relative dates, append it
        durably, index it for search, and digest closed days. Idempotent by turn id: a replayed
        turn adds nothing (and costs no LLM call)."""
        if not self.config.enabled:
            return
        diary = self.user(turn.user_id)
        with diary.lock:
            if diary.index.has_id(turn.id):
                self._index_turns(diary, [turn.id])  # a crash may have come between the two
                return
        at = turn.at.astimezone(self.tz).replace(microsecond=0)
        tag, _source = write_tag(turn.user, turn.assistant, llm=self.llm, prompts=self.prompts)
        dates = resolve_dates([turn.user, turn.assistant], at, self.tz)
        entry = DiaryEntry(turn.id, at, tag, turn.user, turn.assistant, dates)
        # Embed outside the lock (the slow part); apply under it.
        vectors = diary.search.embed([doc_of(entry)])
        if diary.append(entry, dedupe=True):
            with diary.lock:
                diary.search.add([doc_of(entry)], vectors=vectors)
                diary.embed_missing()
            self._embed_new_terms(diary)
        self._digest_closed_days(diary, entry.local_day(self.tz).isoformat())

    def _embed_new_terms(self, diary: UserDiary) -> None:
        """Vectors for the search vocabulary's new words (query expansion), embedded outside the
        lock; at most TERMS_PER_TURN at a time (an index from before term vectors catches up over
        a few turns); then the context vectors of the rare words the turn touched. A failure only
        delays them: the turn is stored and indexed already."""
        if diary.terms.running:  # the open's catch-up thread gets there
            return
        try:
            diary.terms.step(TERMS_PER_TURN)
        except EmbedderError as exc:
            log.warning("diary: embedding new search terms failed (%s); retried with the next turn", exc)
        diary.terms.make_contexts()  # here rather than in the next prompt's lookup

    def _index_turns(self, diary: UserDiary, ids: list[str]) -> None:
        have = diary.search.digests()
        if any(i not in have for i in ids):
            diary.reconcile_search(progress=False)

    # -- search / admin API (inspector, HTTP service, CLI) ------------------------------------------

    def search(
        self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None, k: int = 20
    ) -> list[DiarySearchResult]:
        """The turns that best match `text` (words and meaning), optionally within [start, end)."""
        diary = self.user(user_id)
        vector = self.embedder.embed([text], role="query")[0] if text.strip() else None
        span = (math.ceil(start.timestamp()), math.ceil(end.timestamp())) if start and end else (None, None)
        request = SearchRequest(
            text=text, vector=vector, k=4 * k, start=span[0], end=span[1], only_range=start is not None and end is not None, asks_memory=True
        )
        with diary.lock:
            diary.refresh()
            found = diary.search.search(request)
        out: dict[str, DiarySearchResult] = {}
        for h in found:
            if h.turn_id in out:
                continue
            out[h.turn_id] = DiarySearchResult(
                turn_id=h.turn_id, at=datetime.fromtimestamp(h.ts, self.tz), side=h.side, text=h.text,
                score=h.score, why=h.why,
            )
            if len(out) >= k:
                break
        return list(out.values())

    def forget(self, user_id: str, turn_id: str) -> int:
        """Delete that turn's entry (day file rewritten under the write lock; index updated)."""
        return rewrite_entry(self, self.user(user_id), turn_id, None)

    def edit(
        self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None, tag: str | None = None
    ) -> DiaryEntry:
        """Correct a turn's texts or tag (dates re-resolved); returns the new entry."""
        diary = self.user(user_id)
        old = find_entry(diary, turn_id)
        if old is None:
            raise KeyError(f"no diary entry with id {turn_id!r} for user {user_id!r}")
        new_user = old.user if user is None else user
        new_reply = old.assistant if assistant is None else assistant
        dates = resolve_dates([new_user, new_reply], old.at, self.tz)
        entry = DiaryEntry(old.id, old.at, old.tag if tag is None else tag, new_user, new_reply, dates)
        rewrite_entry(self, diary, turn_id, entry)
        return entry

    def _digest_closed_days(self, diary: UserDiary, today: str) -> None:
        """When the local day changes, ask the memory LLM for digests of the recent closed days."""
        if diary.last_day == today:
            return
        diary.last_day = today
        if self.llm is None or self.config.digest_backfill_days == 0:
            return
        first = (datetime.fromisoformat(today) - timedelta(days=self.config.digest_backfill_days)).date()
        for day in (first + timedelta(days=i) for i in range(self.config.digest_backfill_days)):
            name = f"{day.isoformat()}.yaml"
            with diary.lock:
                info = diary.index.files.get(name)
                if info is None or info.count == 0 or diary.digest(day.isoformat(), turns=info.count):
                    continue
                entries = diary.day(name).entries
            try:
                text = write_digest(day.isoformat(), entries, llm=self.llm, prompts=self.prompts)
            except (LLMError, ValueError) as exc:
                log.warning("diary: digest of %s by the memory LLM failed (%s); the tag digest stands in", day, exc)
                continue
            with diary.lock:
                diary.write_digest(day.isoformat(), turns=len(entries), text=text, by=self.llm.name)

    # -- read / import API (HTTP service, CLI, importers) ------------------------------------------

    def entries(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        """Every entry with start <= time < end, chronological."""
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh(force=True)
            lo, hi = diary.index.span(math.ceil(start.timestamp()), math.ceil(end.timestamp()) - 1)
            return diary.entries_for(np.arange(lo, hi))

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        """Write an entry with its own time and tag, without the LLM (imports). Idempotent by id:
        returns False when an entry with this id exists (use `entry_id_for` for content ids)."""
        diary = self.user(user_id)
        added = diary.append(entry, dedupe=True)
        if added:
            with diary.lock:
                diary.search.add([doc_of(entry)])
                diary.embed_missing()
        return added

    def append_many(self, user_id: str, entries: Sequence[DiaryEntry], *, progress: bool = False) -> int:
        """Bulk import: entries not already present (by id) are written with one fsynced append
        per day file, then the changed files are re-indexed once (one sort, one embedding
        batch, one index save). Returns how many were written."""
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh(force=True)
            fresh = [e for e in dict((e.id, e) for e in entries).values() if not diary.index.has_id(e.id)]
            if not fresh:
                return 0
            by_day: dict[str, list[DiaryEntry]] = {}
            for e in fresh:
                by_day.setdefault(day_file_name(e.local_day(self.tz)), []).append(e)
            days = sorted(by_day.items())
            if progress:
                from tqdm import tqdm

                days = tqdm(days, desc="diary days", unit="day")
            with diary.write_lock:
                for name, group in days:
                    path = diary.dir / name
                    # A torn tail is set aside and the file ends on a newline before we add to it.
                    prepare_for_append(path, tz=self.tz)
                    append_text_durably(path, "".join(format_entry(e) for e in group))
            diary.refresh(force=True)
            diary.reconcile_search(progress=progress)
        return len(fresh)

    def has_entry(self, user_id: str, entry_id: str) -> bool:
        diary = self.user(user_id)
        with diary.lock:
            return diary.index.has_id(entry_id)

    def reindex(self, user_id: str) -> int:
        """Rebuild the user's index from the day files (CLI `reindex`); returns the entry count."""
        with self._users_lock:
            old = self._users.pop(user_id, None)
        if old is not None:
            old.close()
        cache = self.paths.user(user_id).cache / "diary"
        cache.joinpath("index.npz").unlink(missing_ok=True)
        shutil.rmtree(cache / "search", ignore_errors=True)
        diary = self.user(user_id)  # rebuilds both, with progress bars when `progress` is on
        with diary.lock:
            return len(diary.index)

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        """Every local day with turns, and how many, oldest first (the inspector's calendar)."""
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh()
            return sorted((date.fromisoformat(name[:10]), info.count)
                          for name, info in diary.index.files.items() if info.count)

    def last_turn_time(self, user_id: str) -> datetime | None:
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh()
            diary.index.flush()
            if diary.index.ts.shape[0] == 0:
                return None
            return datetime.fromtimestamp(int(diary.index.ts[-1]), self.tz)

    def get(self, user_id: str, turn_id: str) -> DiaryEntry | None:
        """The entry of one turn, or None."""
        return find_entry(self.user(user_id), turn_id)

    def user_ids(self) -> list[str]:
        return self.paths.user_ids()

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
        """The entries of these turns, by id (missing ones left out)."""
        return find_entries(self.user(user_id), turn_ids)

    def build_search_index(self, user_id: str, *, progress: bool = True) -> int:
        """Index the user's turns that lack search vectors (after an import, or an old cache) and
        the vocabulary's terms that lack theirs; returns how many turns were indexed. `kioku
        reindex` and the MoeChat import call this."""
        diary = self.user(user_id)
        diary.terms.wait()  # the open's catch-up (if any) finishes first: the two would embed the same terms
        with diary.lock:
            diary.refresh(force=True)
            done = diary.reconcile_search(progress=progress)
            if diary.catch_up_terms(progress=progress):
                diary.search.save(force=True)
            return done

    def problems(self) -> list[str]:
        """Day files with unreadable items (file:line), per open user."""
        with self._users_lock:
            users = list(self._users.items())
        return [f"{user_id}: {p}" for user_id, diary in users for p in diary.problems]

    def close(self) -> None:
        with self._users_lock:
            users = list(self._users.values())
        for diary in users:
            diary.close()
