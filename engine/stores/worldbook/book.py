"""The loaded book: which files are in the folder, their last good entries, and a search snapshot.

`refresh()` is cheap when nothing changed (one `scandir` and a stat per file), re-parses only
files whose stat changed and whose bytes really differ, and re-embeds only keys that no loaded
file had before. Readers never lock: each refresh that changes something builds a new immutable
`Snapshot` (entries, keyword automaton, FAISS index) and swaps the reference, so a search that
is running keeps using the snapshot it started with.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import faiss
import numpy as np

from engine.errors import EmbedderError
from engine.fileio import content_hash
from engine.stores.worldbook.matcher import KeywordMatcher
from engine.stores.worldbook.model import BookError, Entry, format_errors
from engine.stores.worldbook.parse import DEFAULT_LIMITS, Limits, ParsedFile, parse_bytes
from engine.stores.worldbook.semantic import CONTENT_CHARS
from engine.stores.worldbook.vectors import KeyVectors

log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml")

# Single queries are ~3x slower with 2 OpenMP threads on small machines; the index is small.
faiss.omp_set_num_threads(1)

StatKey = tuple[int, int, int, int]


def book_files(folder: Path) -> dict[Path, StatKey]:
    """The folder's world-book files (not hidden, not in subfolders) and their stat signatures."""
    out: dict[Path, StatKey] = {}
    try:
        items = list(os.scandir(folder))
    except FileNotFoundError:
        return out
    for item in items:
        if item.name.startswith(".") or not item.name.lower().endswith(SUFFIXES):
            continue
        try:
            if not item.is_file():
                continue
            st = item.stat()
        except OSError:
            continue  # vanished between scandir and stat; the next refresh sees the truth
        # mtime alone can miss two writes within one clock tick; size, ctime and inode catch
        # most of those, and an atomic replace always changes the inode.
        out[Path(item.path)] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    return dict(sorted(out.items()))


@dataclass
class FileState:
    """One file as last seen, with the entries of its last good version."""

    path: Path
    stat: StatKey
    digest: str
    """Hash of the bytes last read (good or broken)."""
    entries: tuple[Entry, ...] = ()
    errors: tuple[BookError, ...] = ()
    keys: tuple[str, ...] = ()
    """Unique texts embedded for `entries` (semantic keys, then content openings), in order;
    rows of `vectors`."""
    vectors: np.ndarray | None = None
    rows: tuple[np.ndarray, np.ndarray, tuple[str, ...], np.ndarray] | None = None
    """Index rows of this file (vectors, local entry index, text, is-content), kept until entries
    or vectors change, so a rebuild after an edit elsewhere only concatenates."""


@dataclass(frozen=True)
class Snapshot:
    """Everything a search needs, immutable once built."""

    entries: tuple[Entry, ...] = ()
    matcher: KeywordMatcher = field(default_factory=lambda: KeywordMatcher(()))
    index: faiss.Index | None = None
    row_entry: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """For each index row, the entry it belongs to."""
    row_key: tuple[str, ...] = ()
    """For each index row, the key (or content opening) it embeds."""
    row_content: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """For each index row, whether it embeds the entry's content rather than a key."""
    constants: tuple[int, ...] = ()


class Book:
    """The world-book folder of one character, kept current by `refresh()`."""

    def __init__(
        self,
        folder: Path,
        *,
        vectors: KeyVectors | None,
        limits: Limits = DEFAULT_LIMITS,
        content: bool = True,
        check_interval_s: float = 0.0,
    ) -> None:
        self.folder = Path(folder)
        self.check_interval_s = check_interval_s
        """`refresh()` looks at the folder at most once per this many seconds unless forced."""
        self._checked = -float("inf")
        self.checks = 0
        """Stat passes over the folder so far (for tests and benches)."""
        self._vectors = vectors
        self.limits = limits
        self.content = content
        """Embed each semantic entry's content opening as one more row (see `semantic.py`)."""
        self._files: dict[Path, FileState] = {}
        self._lock = threading.Lock()
        self.snapshot = Snapshot()
        self.embed_error: str | None = None
        # Vectors of keys from replaced or deleted file versions, reusable by the next embedding
        # pass (an edited file keeps its unchanged keys; a renamed file embeds nothing).
        self._retired: dict[str, np.ndarray] = {}
        self.reloads = 0
        """Snapshots built so far (each one after at least one file changed)."""

    @property
    def files(self) -> tuple[FileState, ...]:
        return tuple(self._files.values())

    def refresh(self, *, force: bool = False) -> bool:
        """Pick up added, edited and deleted files; True when the snapshot changed.

        Throttled: within `check_interval_s` of the last look nothing is checked (a prompt asks
        twice, and a busy service many times a second), unless `force`."""
        if not force and time.monotonic() - self._checked < self.check_interval_s:
            return False
        with self._lock:
            if not force and time.monotonic() - self._checked < self.check_interval_s:
                return False  # another thread looked while this one waited for the lock
            self._checked = time.monotonic()
            self.checks += 1
            seen = book_files(self.folder)
            changed = False
            for path in list(self._files):
                if path not in seen:
                    self._retire(self._files.pop(path))
                    changed = True
            for path, stat in seen.items():
                state = self._files.get(path)
                if state is not None and state.stat == stat:
                    continue
                changed |= self._reread(path, stat, state)
            changed |= self._embed_missing()
            if self.embed_error is None:
                self._retired.clear()
            if changed:
                self._rebuild()
            return changed

    def _reread(self, path: Path, stat: StatKey, state: FileState | None) -> bool:
        try:
            with open(path, "rb") as f:
                # Never more than one byte past the size cap: a huge file is reported, not read.
                data = f.read(self.limits.max_file_bytes + 1)
        except OSError as exc:
            log.warning("world book: cannot read %s (%s); keeping what was loaded", path, exc)
            return False
        if state is not None and content_hash(data) == state.digest:
            state.stat = stat  # touched or rewritten with the same bytes: nothing to parse
            return False
        parsed = parse_bytes(data, path=path, limits=self.limits)
        if state is None:
            state = self._files[path] = FileState(path, stat, parsed.digest)
        state.stat, state.digest = stat, parsed.digest
        self._apply(state, parsed)
        return True

    def _apply(self, state: FileState, parsed: ParsedFile) -> None:
        if parsed.errors:
            # Keep the last good version active; report what is wrong with the new one.
            state.errors = parsed.errors
            kept = f"; keeping its last good version ({len(state.entries)} entries)" if state.entries else ""
            log.warning("world book: %s is invalid%s:\n%s", state.path, kept, format_errors(parsed.errors))
            return
        keys = tuple(dict.fromkeys(t for e in parsed.entries for t, _ in semantic_texts(e, self.content)))
        if keys != state.keys:
            self._retire(state)
            state.vectors = None  # recomputed by _embed_missing, reusing vectors of known keys
        state.entries, state.errors, state.keys = parsed.entries, (), keys
        state.rows = None

    def _embed_missing(self) -> bool:
        if self._vectors is None:
            return False
        pending = [s for s in self._files.values() if s.vectors is None]
        if not pending:
            return False
        known: dict[str, np.ndarray] = dict(self._retired)
        for other in self._files.values():
            if other.vectors is not None:
                known.update(zip(other.keys, other.vectors))
        try:
            for state in pending:
                state.vectors = self._vectors.vectors(state.keys, known)
                state.rows = None
                known.update(zip(state.keys, state.vectors))
        except EmbedderError as exc:
            # Keyword triggers keep working; semantic search of these files waits for the next try.
            self.embed_error = str(exc)
            log.warning("world book: embedding keys failed, semantic search is incomplete: %s", exc)
            return True
        self.embed_error = None
        self._vectors.prune(s.keys for s in self._files.values())
        return True

    def _retire(self, state: FileState) -> None:
        if state.vectors is not None:
            self._retired.update(zip(state.keys, state.vectors))

    def _rebuild(self) -> None:
        entries: list[Entry] = []
        blocks: list[np.ndarray] = []
        row_entry: list[np.ndarray] = []
        row_key: list[str] = []
        row_content: list[np.ndarray] = []
        for state in self._files.values():
            base = len(entries)
            entries.extend(state.entries)
            if state.vectors is None or not state.keys:
                continue
            if state.rows is None:
                state.rows = _file_rows(state, self.content)
            vectors, local, keys, content = state.rows
            blocks.append(vectors)
            row_entry.append(local + base)
            row_key.extend(keys)
            row_content.append(content)
        index = None
        if blocks:
            matrix = np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32)
            index = faiss.IndexFlatIP(matrix.shape[1])
            index.add(matrix)
        self.snapshot = Snapshot(
            entries=tuple(entries),
            matcher=KeywordMatcher(entries),
            index=index,
            row_entry=np.concatenate(row_entry) if row_entry else np.zeros(0, dtype=np.int64),
            row_key=tuple(row_key),
            row_content=np.concatenate(row_content) if row_content else np.zeros(0, dtype=bool),
            constants=tuple(i for i, e in enumerate(entries) if e.constant and e.enabled),
        )
        self.reloads += 1

    def errors(self) -> list[BookError]:
        return [e for s in self._files.values() for e in s.errors]


def semantic_texts(entry: Entry, content: bool) -> list[tuple[str, bool]]:
    """(text, is content) embedded for an entry: its semantic keys, then its content's opening."""
    if not entry.semantic_keys:
        return []
    out = [(k, False) for k in entry.semantic_keys]
    if content:
        out.append((entry.content[:CONTENT_CHARS], True))
    return out


def _file_rows(state: FileState, content: bool) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], np.ndarray]:
    """One row per (enabled entry, semantic text) of a file: its vector, entry index, text, kind."""
    assert state.vectors is not None
    slot = {k: i for i, k in enumerate(state.keys)}
    rows = [(i, t, c) for i, e in enumerate(state.entries) for t, c in semantic_texts(e, content)]
    vectors = state.vectors[[slot[t] for _, t, _ in rows]]
    local = np.fromiter((i for i, _, _ in rows), dtype=np.int64, count=len(rows))
    kinds = np.fromiter((c for _, _, c in rows), dtype=bool, count=len(rows))
    return vectors, local, tuple(t for _, t, _ in rows), kinds
