"""One user's diary: the day files on disk, their index in memory, and the locks that guard both.

`record` (background worker) and `retrieve` (request thread) share one `UserDiary`; every method
takes `self.lock`. Opening loads the saved index and only stats the day files (size + mtime_ns);
files that changed since the index was saved are re-hashed and, if their content changed,
re-parsed. The same check runs again at most once per `REFRESH_S` (one stat pass per interval,
not per prompt), so hand edits are picked up.

Readers never write: a torn tail seen while reading is skipped and reported; it is set aside by
the next append, under `write_lock`, a file lock (`users/<id>/.lock-diary`) that every process
appending to this user's day files takes. The turn search index (`engine.search`) follows the
day files: changed files re-index their turns, and on open the index is reconciled with them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import tzinfo

import numpy as np
import yaml

from filelock import FileLock

from engine.adapters.embedder import Embedder
from engine.errors import DataFileError, EmbedderError
from engine.fileio import append_text_durably, atomic_write_yaml
from engine.paths import UserPaths
from engine.search.base import TurnDoc
from engine.search.expand import BackgroundTerms
from engine.search.claim import FolderClaim
from engine.search.files import FileTurnIndex
from engine.stores.diary.dayfile import DAY_FILE, DayLoad, append_entry, day_file_name, load_day
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.index import DiaryIndex, FileInfo

log = logging.getLogger(__name__)

REFRESH_S = 1.0
"""How often (at most) a read re-stats every day file to pick up hand edits."""
_DAY_CACHE = 64
_SAVE_EVERY = 200
_FOLLOW_MAX = 200
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UserDiary:
    def __init__(self, paths: UserPaths, *, tz: tzinfo, embedder: Embedder, progress: bool = False) -> None:
        self.lock = threading.RLock()
        self.write_lock = FileLock(str(paths.root / ".lock-diary"))
        """Held (across processes) while appending to or repairing a day file."""
        self.dir = paths.diary_dir
        self.digest_dir = self.dir / "digests"
        self.cache_file = paths.cache / "diary" / "index.npz"
        self.tz = tz
        self.embedder = embedder
        self.progress = progress
        self._problems: dict[str, list[str]] = {}
        """Per day file: its skipped or unreadable items, each naming the file and line (cleared
        when the file is read again without them)."""
        self.last_day: str | None = None
        """Local day of the last turn recorded through this process (to notice a day closing)."""
        self._days: OrderedDict[str, tuple[int, int, DayLoad]] = OrderedDict()
        self._verified: dict[str, tuple[int, int]] = {}
        self._appends = 0
        self._last_refresh = 0.0
        with self.lock:
            loaded = DiaryIndex.load(self.cache_file, model_id=embedder.model_id, dim=embedder.dim)
            self.index = loaded or DiaryIndex(model_id=embedder.model_id, dim=embedder.dim)
            self.search = FileTurnIndex(self._search_folder(paths), embedder)
            self.terms = BackgroundTerms(self.search, self.lock, paths.root.name)
            self._opening = True  # the first pass leaves the search index to reconcile_search
            self._in_sync = False
            self.refresh(force=True)
            self._opening = False
            if self.search.sync_token and self.search.sync_token == self._fingerprint():
                self._in_sync = True  # saved in step with these very day files: nothing to compare
            else:
                self.reconcile_search()
            # An index made before term vectors (or cut short), and the rare terms' context vectors
            # (in memory: made after every open), caught up without holding up the open.
            self.terms.start()

    def _search_folder(self, paths: UserPaths):
        """The search index folder this process may write (`FolderClaim`: the shared one, or a
        private copy while another process owns it)."""
        self._search_claim = FolderClaim(paths.cache / "diary" / "search", owner_lock=paths.root / ".lock-diary-search")
        return self._search_claim.path

    @property
    def problems(self) -> list[str]:
        return [p for name in sorted(self._problems) for p in self._problems[name]]

    def day_problems(self, name: str) -> list[str]:
        return list(self._problems.get(name, ()))

    # -- keeping the index true to the files -----------------------------------------------------

    def refresh(self, *, force: bool = False) -> None:
        """Re-stat every day file; re-index those that changed. Saves the index if anything did."""
        with self.lock:
            now = time.monotonic()
            if not force and now - self._last_refresh < REFRESH_S:
                return
            self._last_refresh = now
            on_disk: dict[str, os.stat_result] = {}
            if self.dir.is_dir():
                with os.scandir(self.dir) as it:
                    for de in it:
                        if DAY_FILE.match(de.name) and de.is_file():
                            on_disk[de.name] = de.stat()
            changed = False
            for name in [n for n in self.index.files if n not in on_disk]:
                self.index.remove_file(name)
                changed = True
            stale = [n for n, st in on_disk.items() if not self._matches(n, st)]
            batch: list = []
            for name in self._progress(sorted(stale)):
                self._reindex(name, batch=batch)
                changed = True
            old_ids = self._ids_of_files([info.name for info, _ in batch])
            self.index.replace_files(batch)
            fresh = [e for _, entries in batch for e in entries]
            if len(fresh) > _FOLLOW_MAX and not self._opening:
                self.reconcile_search()  # many new turns (an import, a restored folder): with a progress bar
            else:
                self._follow_search(old_ids, fresh)
            changed = self.embed_missing() or changed
            if changed:
                self.save()

    def _ids_of_files(self, names: list[str]) -> set[str]:
        fnos = [self.index.file_no[n] for n in names if n in self.index.file_no]
        if not fnos:
            return set()
        self.index.flush()
        rows = np.flatnonzero(np.isin(self.index.file, fnos))
        return {i.decode("utf-8") for i in self.index.ids()[rows].tolist()}

    def _follow_search(self, old_ids: set[str], entries: list[DiaryEntry]) -> None:
        """Bring the search index in line with re-read day files: gone turns removed, new or
        edited ones indexed (embedding happens here: a hand edit is rare)."""
        gone = old_ids - {e.id for e in entries}
        if gone:
            self.search.remove(gone)
        if entries and not self._opening:
            try:
                self.search.add([doc_of(e) for e in entries])
            except EmbedderError as exc:  # the next open reconciles; reading goes on
                log.warning("diary: re-indexing edited turns failed (%s)", exc)
                self._in_sync = False

    def reconcile_search(self, *, progress: bool | None = None) -> int:
        """Index the turns the search index lacks and drop the ones the diary no longer has
        (after a crash, a deleted cache, an import). Returns how many turns were indexed."""
        with self.lock:
            self.index.flush()
            have = self.search.digests()
            ids = [i.decode("utf-8") for i in self.index.ids().tolist()]
            want = set(ids)
            extra = set(have) - want
            if extra:
                self.search.remove(extra)
            missing = np.array([i for i, tid in enumerate(ids) if tid not in have], dtype=np.int64)
            if missing.size == 0:
                self._in_sync = True
                return 0
            rows = np.sort(missing)
            show = self.progress if progress is None else progress
            done = 0
            with self._bar(show and rows.size > 50, int(rows.size), "turn vectors", "turn") as update:
                for a in range(0, rows.size, 2000):
                    entries = self.entries_for(rows[a : a + 2000])
                    done += self.search.add([doc_of(e) for e in entries], progress=update)
            self._in_sync = True
            self.catch_up_terms(progress=show)
            self.search.save(force=True)
            return done

    def catch_up_terms(self, *, progress: bool = False) -> int:
        """Embed every vocabulary term of the search index that has no vector yet (query expansion,
        `engine.search.expand`), with a progress bar when there are many. Returns how many."""
        with self.lock:
            behind = len(self.search.terms_behind()[1])
            with self._bar(progress and behind > 500, behind, "term vectors", "term") as update:
                return self.search.catch_up_terms(progress=update)

    @contextmanager
    def _bar(self, show: bool, total: int, what: str, unit: str) -> Iterator[Callable[[int], object] | None]:
        """A progress bar's `update` (None when not shown), closed on leaving."""
        if not show:
            yield None
            return
        from tqdm import tqdm

        with tqdm(total=total, desc=f"{what} {self.dir.parent.name}", unit=unit) as bar:
            yield bar.update

    def _matches(self, name: str, st: os.stat_result) -> bool:
        info = self.index.files.get(name)
        return info is not None and info.size == st.st_size and info.mtime_ns == st.st_mtime_ns

    def _progress(self, names: list[str]) -> Iterable[str]:
        if self.progress and len(names) > 20:
            from tqdm import tqdm

            return tqdm(names, desc=f"diary index {self.dir.parent.name}", unit="day")
        return names

    def _reindex(self, name: str, *, batch: list | None = None) -> DayLoad | None:
        """Bring one file's rows up to date (hash first: a touched but unchanged file is not parsed)."""
        path = self.dir / name
        try:
            data = path.read_bytes()
            st = path.stat()
        except FileNotFoundError:
            self.index.remove_file(name)
            return None
        sha = hashlib.sha256(data).hexdigest()
        info = self.index.files.get(name)
        if info is not None and info.sha == sha and len(data) == st.st_size:
            self.index.files[name] = FileInfo(name, st.st_size, st.st_mtime_ns, sha, info.count)
            self.index.dirty = True
            return None
        try:
            load = load_day(path, tz=self.tz, repair=False)
        except DataFileError as exc:
            log.warning("diary: %s; the day is skipped until it is fixed", exc)
            load = DayLoad([], data, [f"{exc} (the day is skipped until the file is fixed)"])
        self._set_problems(name, load.problems)
        st = path.stat()
        sha = hashlib.sha256(load.data).hexdigest()
        info = FileInfo(name, st.st_size, st.st_mtime_ns, sha, len(load.entries))
        if batch is not None:
            batch.append((info, load.entries))  # the caller indexes the whole batch with one sort
        else:
            old_ids = self._ids_of_files([name])
            self.index.replace_file(info, load.entries)
            self._follow_search(old_ids, load.entries)
            self._days[name] = (st.st_size, st.st_mtime_ns, load)
        return load

    def _set_problems(self, name: str, problems: list[str]) -> None:
        if problems:
            self._problems[name] = list(problems)
        else:
            self._problems.pop(name, None)

    def embed_missing(self) -> bool:
        """Embed tags that have no vector yet (new tags, or a new model). False if none."""
        missing = self.index.missing_tags()
        if not missing:
            return False
        try:
            vectors = self.embedder.embed([self.index.tags[i] or " " for i in missing], role="passage")
        except EmbedderError as exc:
            log.warning("diary: embedding %d tags failed (%s); retried on the next write", len(missing), exc)
            return False
        self.index.set_vectors(missing, vectors)
        return True

    def save(self) -> None:
        with self.lock:
            self._hash_appended()
            try:
                self.index.save(self.cache_file)
            except OSError as exc:  # derived data: a failed save only costs a rebuild later
                log.warning("diary: cannot save the index %s (%s)", self.cache_file, exc)
            self.search.sync_token = self._fingerprint() if self._in_sync else ""
            self.search.save()

    def _fingerprint(self) -> str:
        """The day files as the index knows them (name, size, mtime): equal tokens mean the
        search index was saved in step with exactly these files."""
        h = hashlib.sha256(str(len(self.index)).encode())
        for name in sorted(self.index.files):
            info = self.index.files[name]
            h.update(f"{name}:{info.size}:{info.mtime_ns};".encode())
        return h.hexdigest()[:24]

    def _hash_appended(self) -> None:
        """Files we appended to carry no content hash yet; hash them while their stat still
        matches what we wrote, so a later touch (same content, new mtime) is not re-parsed."""
        for name, info in list(self.index.files.items()):
            if info.sha:
                continue
            path = self.dir / name
            try:
                data = path.read_bytes()
                st = path.stat()
            except FileNotFoundError:
                continue
            if st.st_size == info.size == len(data) and st.st_mtime_ns == info.mtime_ns:
                self.index.files[name] = FileInfo(name, info.size, info.mtime_ns, hashlib.sha256(data).hexdigest(), info.count)

    # -- writing ------------------------------------------------------------------------------

    def append(self, entry: DiaryEntry, *, dedupe: bool) -> bool:
        """Append `entry` to its local day's file (durable when this returns). False when
        `dedupe` and an entry with its id already exists."""
        with self.lock, self.write_lock:
            name = day_file_name(entry.local_day(self.tz))
            path = self.dir / name
            try:
                st = path.stat()
                seen = (st.st_size, st.st_mtime_ns)
            except FileNotFoundError:
                seen = None
            if seen is not None and self._verified.get(name) != seen:
                # First append to this file in this process, or another process wrote to it:
                # set aside a torn tail and end the file on a newline before adding to it
                # (under the file lock, so no other writer is mid-append); then re-index it.
                load = load_day(path, tz=self.tz, repair=True)
                if load.data and not load.data.endswith(b"\n"):
                    append_text_durably(path, "\n")
                self._reindex(name)
            if dedupe and self.index.has_id(entry.id):
                return False
            info = self.index.files.get(name)
            count = info.count if info is not None else 0
            append_entry(path, entry)
            st = path.stat()
            self._verified[name] = (st.st_size, st.st_mtime_ns)
            self.index.add(name, entry, count)
            self.index.files[name] = FileInfo(name, st.st_size, st.st_mtime_ns, "", count + 1)
            self._days.pop(name, None)
            self._appends += 1
            if self._appends % _SAVE_EVERY == 0:
                self.embed_missing()
                self.save()
            return True

    # -- reading ------------------------------------------------------------------------------

    def day(self, name: str) -> DayLoad:
        """The parsed day file (kept while its size and mtime are unchanged)."""
        path = self.dir / name
        st = path.stat()
        got = self._days.get(name)
        if got is not None and got[0] == st.st_size and got[1] == st.st_mtime_ns:
            self._days.move_to_end(name)
            return got[2]
        load = load_day(path, tz=self.tz, repair=False)
        self._days[name] = (st.st_size, st.st_mtime_ns, load)
        while len(self._days) > _DAY_CACHE:
            self._days.popitem(last=False)
        return load

    def entries_for(self, rows: np.ndarray) -> list[DiaryEntry]:
        """The entries at index rows (chronological rows in, same order out)."""
        out: list[DiaryEntry] = []
        loads: dict[int, DayLoad] = {}  # each day file checked once, not once per turn
        for r in rows.tolist():
            f = int(self.index.file[r])
            load = loads.get(f)
            if load is None:
                load = loads[f] = self.day(self.index.file_names[f])
            item = int(self.index.item[r])
            if item < len(load.entries):
                out.append(load.entries[item])
        return out

    # -- digests --------------------------------------------------------------------------------

    def digest(self, day: str, *, turns: int) -> str | None:
        """The memory LLM's digest of `day` (YYYY-MM-DD) if one was written for its current turn count."""
        path = self.digest_dir / f"{day}.yaml"
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict) or data.get("turns") != turns or not isinstance(data.get("digest"), str):
            return None
        return data["digest"]

    def write_digest(self, day: str, *, turns: int, text: str, by: str) -> None:
        atomic_write_yaml(self.digest_dir / f"{day}.yaml", {"date": day, "turns": turns, "by": by, "digest": text})

    def close(self) -> None:
        self.terms.stop()
        with self.lock:
            if self.index.dirty:
                self.embed_missing()
                self.save()
            self.search.sync_token = self._fingerprint() if self._in_sync else ""
            self.search.save(force=True)
            self.search.close()
            self._search_claim.release()


def doc_of(entry: DiaryEntry) -> TurnDoc:
    return TurnDoc(entry.id, entry.timestamp, entry.user, entry.assistant, entry.dates)
