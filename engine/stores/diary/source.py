"""The files diary as `answer` reads it (`DiarySource`): the index columns, the day files, the
digests folder and the user's search index."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import contextmanager
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

import numpy as np

from engine.search.base import SearchHit, SearchRequest
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.render import RangeTurns
from engine.stores.diary.userdiary import UserDiary

if TYPE_CHECKING:
    from engine.stores.diary.store import DiaryStore


class FileDiarySource:
    def __init__(self, store: "DiaryStore", diary: UserDiary) -> None:
        self.store = store
        self.diary = diary
        self.tz: tzinfo = store.tz
        self._digests: set[str] | None = None
        """The digest files there are, listed once per answer (a month asks for 31 days, most
        often with no digest written: one listing instead of 31 failed opens)."""

    @contextmanager
    def hold(self):
        with self.diary.lock:
            self.diary.refresh()
            yield

    def span(self, lo: int, hi: int, vector, reason: Callable[[int, str], str]) -> RangeTurns:
        index = self.diary.index
        a, b = index.span(lo, hi - 1)
        rows = np.arange(a, b)
        dropped = ""
        if self.store.config.semantic_filter and vector is not None and rows.size:
            # MoeChat's is_check_memorys: keep only turns whose tag is close to the message.
            tags = index.tag[rows]
            sims = index.tagvec[tags] @ np.asarray(vector, dtype=np.float32).reshape(-1)
            keep = ~index.tag_ok[tags] | (sims >= self.store.filter_threshold)
            dropped = f", {int((~keep).sum())} dropped by the tag filter < {self.store.filter_threshold:.2f}"
            rows = rows[keep]
        # Day files are per local day, so a turn's day is its file's name (no tz maths); each
        # file's name and each tag are looked up once, not once per turn.
        files, file_at = np.unique(index.file[rows], return_inverse=True)
        tags, tag_at = np.unique(index.tag[rows], return_inverse=True)
        day = np.array([index.file_names[f][:10] for f in files.tolist()], dtype="<U10")[file_at]
        tag = np.array([index.tags[g] for g in tags.tolist()], dtype=object)[tag_at]
        return RangeTurns.of(rows, index.ts[rows], day, tag, reason(b - a, dropped))

    def turn_ids(self, rows: np.ndarray) -> list[str]:
        return [i.decode("utf-8") for i in self.diary.index.ids()[rows].tolist()]

    def entries(self, rows: np.ndarray) -> list[DiaryEntry]:
        return self.diary.entries_for(np.asarray(rows, dtype=np.int64))

    def digest(self, day: str, turns: int) -> str | None:
        name = f"{day}.yaml"
        if self._digests is None:
            try:
                self._digests = set(os.listdir(self.diary.digest_dir))
            except OSError:
                self._digests = set()
        info = self.diary.index.files.get(name)
        if info is None or info.count != turns or name not in self._digests:
            return None
        return self.diary.digest(day, turns=turns)

    def broken(self, start: datetime, stop: datetime) -> list[str]:
        diary, tz = self.diary, self.tz
        day, last = start.astimezone(tz).date(), stop.astimezone(tz).date()
        if (last - day).days > 400:
            return list(diary.problems)
        out: list[str] = []
        while day <= last:
            out += diary.day_problems(f"{day:%Y-%m-%d}.yaml")
            day += timedelta(days=1)
        return out

    def search(self, request: SearchRequest) -> list[SearchHit]:
        return self.diary.search.search(request)
