"""The diary store: every past turn, answered by time expressions ("昨天", "last Tuesday").

Reading: the message's time expressions -> ranges clipped to `now` -> a recall decision (see
`recall.py`) -> a binary search over the sorted timestamp index -> optional semantic filter on
tag vectors -> raw turns or per-day digests within the token budget (see `render.py`).
With no time expression, an optional semantic fallback returns the top-k entries by tag.

Writing (`record`, on the background worker): the memory LLM tags the turn (offline fallback on
any failure), the entry is appended durably, its tag embedded; when a local day closes, the
memory LLM writes that day's digest.
"""

from __future__ import annotations

import logging
import math
import threading
import zoneinfo
from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np

from engine.adapters.embedder import Embedder, thresholds_for
from engine.adapters.llm import LLM
from engine.config import DiaryConfig
from engine.errors import LLMError
from engine.fileio import append_text_durably
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.diary.dayfile import day_file_name, prepare_for_append
from engine.stores.diary.entry import DiaryEntry, format_entry
from engine.stores.diary.recall import clip_to_past, decide
from engine.stores.diary.render import STORE, Candidate, digest_hits, fmt_range, raw_hits
from engine.stores.diary.userdiary import UserDiary
from engine.stores.diary.writing import fallback_digest, small_talk, write_digest, write_tag

log = logging.getLogger(__name__)

RAW_CANDIDATES = 400
"""At most this many raw turns of one range are read from disk to choose from."""


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
        self.fallback_threshold = thresholds_for(embedder, "diary_fallback", config.fallback_threshold)
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
        return []

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        from engine.timeparse import parse_time_ranges

        now = query.now.astimezone(self.tz)
        expressions = parse_time_ranges(query.message, now=now)
        diary = self.user(query.user_id)
        if not expressions:
            return self._fallback(diary, query) if self.config.semantic_fallback else []
        ranges = []
        for expr in expressions:
            clipped = clip_to_past(expr.start, expr.end, now)
            if clipped is not None:
                ranges.append((expr, clipped))
        decision = decide(query.message, has_past_range=bool(ranges), require_cue=self.config.require_recall_cue)
        if not decision.use:
            return []
        with diary.lock:
            diary.refresh()
            cands: dict[int, Candidate] = {}
            parts = []
            for expr, (start, stop) in ranges:
                diary.sync_days(start, stop)
            for expr, (start, stop) in ranges:
                clipped = stop < expr.end
                # Half-open [start, end); a range clipped at now keeps the turns of now's second.
                last = math.floor(stop.timestamp()) if clipped else math.ceil(expr.end.timestamp()) - 1
                lo, hi = diary.index.span(math.ceil(start.timestamp()), last)
                rows = np.arange(lo, hi)
                scores = self._scores(diary, rows, query.vector)
                n_range = len(rows)
                if self.config.semantic_filter:
                    keep = scores >= self.filter_threshold
                    rows, scores = rows[keep], scores[keep]
                desc = fmt_range(expr.start, expr.end, self.tz)
                reason = f'expression "{expr.text}" → {desc}, {len(rows)} turns'
                if clipped:
                    reason += f" (up to now, {now:%Y-%m-%d %H:%M})"
                if self.config.semantic_filter:
                    reason += f", {n_range - len(rows)} dropped by the tag filter < {self.filter_threshold:.2f}"
                if decision.cue:
                    reason += f', recall cue "{decision.cue}"'
                parts.append((expr, desc, len(rows)))
                for r, s in zip(rows.tolist(), scores.tolist()):
                    if r not in cands:
                        cands[r] = self._candidate(diary, r, s, reason)
            ordered = sorted(cands.values(), key=lambda c: (c.ts, c.row))
            return self._answer(diary, ordered, parts)

    def _scores(self, diary: UserDiary, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        if rows.size == 0 or vector is None:
            return np.zeros(rows.size, dtype=np.float32)
        tags = diary.index.tag[rows]
        sims = diary.index.tagvec[tags] @ np.asarray(vector, dtype=np.float32).reshape(-1)
        # A tag without a vector yet (embedding failed) must not be filtered out for it.
        return np.where(diary.index.tag_ok[tags], sims, np.float32(1.0)).astype(np.float32)

    def _candidate(self, diary: UserDiary, row: int, score: float, reason: str) -> Candidate:
        ts = int(diary.index.ts[row])
        # Day files are per local day, so the file name is the entry's local day (no tz maths).
        day = diary.index.file_names[int(diary.index.file[row])][:10]
        return Candidate(row, ts, day, diary.index.tags[int(diary.index.tag[row])], float(score), reason)

    def _answer(self, diary: UserDiary, cands: list[Candidate], parts: list) -> list[Hit]:
        language = self.prompts.language
        ranges = "；".join(f"“{e.text}” {d}" for e, d, _ in parts) if language == "zh" else "; ".join(
            f'"{e.text}" {d}' for e, d, _ in parts
        )
        if not cands:
            text = (
                f"（{ranges} 没有任何对话记录）" if language == "zh" else f"(no conversation records for {ranges})"
            )
            return [Hit(STORE, text, 1.0, f"{ranges}: 0 turns", pinned=True, meta={"kind": "empty"})]
        days = {c.day for c in cands}
        budget = self.budget_tokens
        if len(cands) <= self.config.digest_over_turns or len(days) == 1:
            hits, left = raw_hits(
                cands,
                lambda pool: diary.entries_for(np.array([c.row for c in pool], dtype=np.int64)),
                tz=self.tz,
                budget=budget,
                max_turn_tokens=self.config.max_turn_tokens,
                limit=RAW_CANDIDATES,
            )
            if not left:
                return hits
            how = "，以上是最相关的部分" if language == "zh" else "; the most relevant ones are shown"
            note = self.prompts.render("diary_omitted", range=ranges, total=len(cands), omitted=left, how=how)
            reason = f"{left} of {len(cands)} turns left out for the token budget"
        else:
            hits, left, left_days = digest_hits(
                cands, lambda day, group: self._digest_text(diary, day, group), language=language, budget=budget
            )
            more = ""
            if left_days:
                more = (
                    f"，另有 {left_days} 天（{left} 轮）限于篇幅未列出"
                    if language == "zh"
                    else f"; {left_days} more days ({left} turns) are left out for length"
                )
            note = self.prompts.render("diary_digested", range=ranges, total=len(cands), days=len(days), more=more)
            reason = f"{len(cands)} turns over {len(days)} days shown as daily digests; {left} turns left out"
        hits.append(
            Hit(STORE, note, 1.0, reason, pinned=True, meta={"kind": "omitted", "omitted": left, "total": len(cands)})
        )
        return hits

    def _digest_text(self, diary: UserDiary, day: str, group: list[Candidate]) -> tuple[str, str]:
        info = diary.index.files.get(f"{day}.yaml")
        if info is not None and info.count == len(group):
            text = diary.digest(day, turns=info.count)
            if text:
                return text, "llm digest"
        return fallback_digest([c.tag for c in group], language=self.prompts.language), "digest from tags"

    def _fallback(self, diary: UserDiary, query: Query) -> list[Hit]:
        """Top-k entries whose tag is close to the query, over the whole diary."""
        with diary.lock:
            diary.refresh()
            index = diary.index
            index.flush()
            if len(index) == 0 or query.vector is None or not index.tags:
                return []
            sims = index.tagvec @ np.asarray(query.vector, dtype=np.float32).reshape(-1)
            chit = small_talk(self.prompts.language)
            usable = index.tag_ok & (sims >= self.fallback_threshold)
            for i, t in enumerate(index.tags):
                if usable[i] and (not t.strip() or t in (chit, "日常闲聊", "small talk")):
                    usable[i] = False
            good = np.flatnonzero(usable)
            if good.size == 0:
                return []
            rows = np.flatnonzero(np.isin(index.tag, good))
            row_sims = sims[index.tag[rows]]
            best = rows[np.argsort(-row_sims, kind="stable")[: self.config.fallback_top_k]]
            best.sort()
            entries = diary.entries_for(best)
            from engine.stores.diary.render import turn_text

            hits = []
            for r, e in zip(best.tolist(), entries):
                s = float(sims[index.tag[r]])
                hits.append(
                    Hit(
                        STORE,
                        turn_text(e, self.tz, max_tokens=self.config.max_turn_tokens),
                        s,
                        f'no time expression; tag "{e.tag}" similarity {s:.3f} ≥ {self.fallback_threshold:.2f}',
                        meta={"kind": "similar", "id": e.id, "time": e.at.isoformat(), "tag": e.tag},
                    )
                )
            return hits

    def record(self, turn: Turn) -> None:
        """Tag the turn (LLM, else the offline fallback), append it durably, and digest closed days."""
        if not self.config.enabled:
            return
        tag, _source = write_tag(turn.user, turn.assistant, llm=self.llm, prompts=self.prompts)
        entry = DiaryEntry(turn.id, turn.at.astimezone(self.tz).replace(microsecond=0), tag, turn.user, turn.assistant)
        diary = self.user(turn.user_id)
        diary.append(entry, dedupe=False)
        with diary.lock:
            diary.embed_missing()
        self._digest_closed_days(diary, entry.local_day(self.tz).isoformat())

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
            diary.refresh()
            diary.sync_days(start, end)
            lo, hi = diary.index.span(math.ceil(start.timestamp()), math.ceil(end.timestamp()) - 1)
            return diary.entries_for(np.arange(lo, hi))

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        """Write an entry with its own time and tag, without the LLM (imports). Idempotent by id:
        returns False when an entry with this id exists (use `entry_id_for` for content ids)."""
        diary = self.user(user_id)
        added = diary.append(entry, dedupe=True)
        if added:
            with diary.lock:
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
            for name, group in days:
                path = diary.dir / name
                # A torn tail is set aside and the file ends on a newline before we add to it.
                prepare_for_append(path, tz=self.tz)
                append_text_durably(path, "".join(format_entry(e) for e in group))
            diary.refresh(force=True)
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
        self.paths.user(user_id).cache.joinpath("diary", "index.npz").unlink(missing_ok=True)
        diary = self.user(user_id)
        with diary.lock:
            return len(diary.index)

    def problems(self) -> list[str]:
        """A broken file already fails retrieval with its file and line; nothing else degrades quietly."""
        return []

    def close(self) -> None:
        with self._users_lock:
            users = list(self._users.values())
        for diary in users:
            diary.close()
