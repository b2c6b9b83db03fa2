"""The diary in files (`DiaryBackend`): `users/<id>/memorys/YYYY-MM-DD.yaml`, one file per local
day, the source of truth; the day index and the turn search index derived in `.cache/`
(`UserDiary`). Forgetting or editing a turn rewrites its day file atomically under the user's
write lock, keeping any item that does not parse byte for byte.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timedelta, tzinfo

import numpy as np

from engine.adapters.embedder import Embedder
from engine.errors import EmbedderError
from engine.fileio import append_text_durably, atomic_write_bytes
from engine.keyed import Keyed
from engine.paths import CharacterPaths
from engine.search.base import SearchHit, SearchRequest
from engine.stores.diary.dayfile import day_file_name, load_day, prepare_for_append, split_items
from engine.stores.diary.entry import DiaryEntry, format_entry
from engine.stores.diary.render import RangeTurns
from engine.stores.diary.userdiary import UserDiary, doc_of

log = logging.getLogger(__name__)

TERMS_PER_TURN = 2048
"""Most vocabulary terms embedded after one recorded turn (a new turn brings a few; an index made
before term vectors existed brings its whole vocabulary, caught up over a few turns)."""


class FilesDiary:
    """Every user's diary of one character, in day files."""

    def __init__(self, paths: CharacterPaths, *, tz: tzinfo, embedder: Embedder, progress: bool = False,
                 tag_filter: float | None = None) -> None:
        """`tag_filter`: keep only the turns of an asked range whose tag is this close to the
        message (MoeChat's is_check_memorys; None: keep all)."""
        self.paths = paths
        self.tz = tz
        self.embedder = embedder
        self.progress = progress
        self.tag_filter = tag_filter
        self._users: Keyed[str, UserDiary] = Keyed(
            lambda user_id: UserDiary(self.paths.user(user_id), tz=self.tz, embedder=self.embedder, progress=self.progress))

    def user(self, user_id: str) -> UserDiary:
        """The user's diary, opened (index loaded or rebuilt) on first use."""
        return self._users.get(user_id)

    def source(self, user_id: str) -> "FileDiarySource":
        return FileDiarySource(self.user(user_id), tz=self.tz, tag_filter=self.tag_filter)

    # -- writing ----------------------------------------------------------------------------------

    def append(self, user_id: str, entry: DiaryEntry) -> bool:
        diary = self.user(user_id)
        with diary.lock:
            if diary.index.has_id(entry.id):
                return False
        vectors = diary.search.embed([doc_of(entry)])  # outside the lock: the slow part
        if not diary.append(entry, dedupe=True):
            return False
        with diary.lock:
            diary.search.add([doc_of(entry)], vectors=vectors)
            diary.embed_missing()
        return True

    def append_many(self, user_id: str, entries: Sequence[DiaryEntry], *, progress: bool = False) -> int:
        """Entries not already present (by id) are written with one fsynced append per day file,
        then the changed files are re-indexed once (one sort, one embedding batch, one save)."""
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

    def contains(self, user_id: str, turn_id: str) -> bool:
        diary = self.user(user_id)
        with diary.lock:
            return diary.index.has_id(turn_id)

    def repair(self, user_id: str, turn_id: str) -> None:
        diary = self.user(user_id)
        with diary.lock:
            if turn_id not in diary.search.digests():
                diary.reconcile_search(progress=False)

    def replace(self, user_id: str, turn_id: str, entry: DiaryEntry | None) -> int:
        """Rewrite the turn's day file without it, or with `entry` in its place (the entry keeps the
        turn's time, so it names the file). Items of the file that do not parse are kept byte for
        byte (nothing the user wrote is lost)."""
        diary = self.user(user_id)
        old = entry if entry is not None else self.get_many(user_id, [turn_id]).get(turn_id)
        if old is None:
            return 0
        path = diary.dir / day_file_name(old.local_day(self.tz))
        new = "" if entry is None else format_entry(entry)
        changed = 0
        with diary.lock, diary.write_lock:
            load = load_day(path, tz=self.tz, repair=True)
            if load.problems:
                # Keep the file's own text for everything but the entry: rebuild item by item.
                pieces = []
                for chunk, item in split_items(load.data, path=path, tz=self.tz):
                    if item is not None and item.id == turn_id:
                        changed += 1
                        pieces.append(new.encode("utf-8"))
                    else:
                        pieces.append(chunk)
                data = b"".join(pieces)
            else:
                out = []
                for e in load.entries:
                    if e.id == turn_id:
                        changed += 1
                        out.append(new)
                    else:
                        out.append(format_entry(e))
                data = "".join(out).encode("utf-8")
            if changed:
                atomic_write_bytes(path, data)
            diary.refresh(force=True)
        return changed

    def write_digest(self, user_id: str, day: date, *, turns: int, text: str, by: str) -> None:
        diary = self.user(user_id)
        with diary.lock:
            diary.write_digest(day.isoformat(), turns=turns, text=text, by=by)

    def recorded(self, user_id: str) -> None:
        """Vectors for the search vocabulary's new words (query expansion), embedded outside the
        lock, at most TERMS_PER_TURN at a time; then the context vectors of the rare words the
        turn touched. A failure only delays them: the turn is stored and indexed already."""
        diary = self.user(user_id)
        if diary.terms.running:  # the open's catch-up thread gets there
            return
        try:
            diary.terms.step(TERMS_PER_TURN)
        except EmbedderError as exc:
            log.warning("diary: embedding new search terms failed (%s); retried with the next turn", exc)
        diary.terms.make_contexts()  # here rather than in the next prompt's lookup

    def index_missing(self, user_id: str, *, progress: bool = False) -> int:
        diary = self.user(user_id)
        diary.terms.wait()  # the open's catch-up (if any) finishes first: the two would embed the same terms
        with diary.lock:
            diary.refresh(force=True)
            done = diary.reconcile_search(progress=progress)
            if diary.catch_up_terms(progress=progress):
                diary.search.save(force=True)
            return done

    def rebuild(self, user_id: str, *, progress: bool = False) -> int:
        old = self._users.pop(user_id)
        if old is not None:
            old.close()
        cache = self.paths.user(user_id).cache / "diary"
        cache.joinpath("index.npz").unlink(missing_ok=True)
        shutil.rmtree(cache / "search", ignore_errors=True)
        diary = self.user(user_id)  # rebuilds both, with progress bars when `progress` is on
        with diary.lock:
            return len(diary.index)

    # -- reading ----------------------------------------------------------------------------------

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
        """One look at the files, one read per day file."""
        wanted = {t.encode("utf-8") for t in turn_ids}
        if not wanted:
            return {}
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh(force=True)
            diary.index.flush()
            rows = np.flatnonzero(np.isin(diary.index.ids(), list(wanted)))
            return {e.id: e for e in diary.entries_for(rows) if e.id.encode("utf-8") in wanted}

    def range(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh(force=True)
            lo, hi = diary.index.span(math.ceil(start.timestamp()), math.ceil(end.timestamp()) - 1)
            return diary.entries_for(np.arange(lo, hi))

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
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

    def users(self) -> list[str]:
        return self.paths.user_ids()

    def digest(self, user_id: str, day: date, turns: int) -> str | None:
        diary = self.user(user_id)
        with diary.lock:
            return diary.digest(day.isoformat(), turns=turns)

    def search(self, user_id: str, request: SearchRequest) -> list[SearchHit]:
        diary = self.user(user_id)
        with diary.lock:
            diary.refresh()
            return diary.search.search(request)

    def problems(self) -> list[str]:
        users = self._users.items()
        return [f"{user_id}: {p}" for user_id, diary in users for p in diary.problems]

    def close(self) -> None:
        for _, diary in self._users.items():
            diary.close()


class FileDiarySource:
    """One user's day files as `answer` reads them: the index columns, the day files, the digests
    folder and the user's search index."""

    def __init__(self, diary: UserDiary, *, tz: tzinfo, tag_filter: float | None) -> None:
        self.diary = diary
        self.tz = tz
        self.tag_filter = tag_filter
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
        if self.tag_filter is not None and vector is not None and rows.size:
            tags = index.tag[rows]
            sims = index.tagvec[tags] @ np.asarray(vector, dtype=np.float32).reshape(-1)
            keep = ~index.tag_ok[tags] | (sims >= self.tag_filter)
            dropped = f", {int((~keep).sum())} dropped by the tag filter < {self.tag_filter:.2f}"
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
