"""The loaded book: which files are in the folder, their last good entries, and a search snapshot.

`refresh()` is cheap when nothing changed (one `scandir` and a stat per file), re-parses only
files whose stat changed and whose bytes really differ, and re-embeds only texts that no loaded
file had before. Readers never lock: each refresh that changes something swaps in a new immutable
`Snapshot`, so a search that is running keeps using the one it started with. The entries that
changed files really changed (new, or different from the entry with the same uid) become one new
small segment; the rest keep their place, so appending a key to a file of a hundred entries
indexes one entry, not a hundred. Segments merge geometrically (`segments.py`), so a book that
grows one key at a time costs O(log n) small rebuilds per key, not O(book).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.errors import EmbedderError
from engine.fileio import content_hash
from engine.stores.worldbook.model import BookError, Entry, format_errors
from engine.stores.worldbook.limits import DEFAULT_LIMITS, Limits
from engine.stores.worldbook.parse import ParsedFile, parse_bytes
from engine.stores.worldbook.segments import EntryTable, Rows, Segment, Snapshot, grow
from engine.stores.worldbook.semantic import CONTENT_CHARS
from engine.stores.worldbook.vectors import KeyVectors

log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml")

StatKey = tuple[int, int, int, int]


def book_files(folder: Path) -> dict[str, StatKey]:
    """The folder's world-book files (not hidden, not in subfolders) by path, with their stat
    signatures, in name order. Plain strings: this runs on every check, for every file."""
    out: dict[str, StatKey] = {}
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
        out[item.path] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
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
    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Global index of each of `entries` in the search segments."""
    indexed: dict[str, tuple[Entry, int, bool]] = field(default_factory=dict)
    """By uid, as last indexed: (entry, global index, whether it got semantic rows)."""
    stale: bool = True
    """Entries or vectors changed since they were last indexed."""
    constants: tuple[int, ...] = ()
    """Global indices of its enabled constant entries."""
    ruled: tuple[int, ...] = ()
    """Global indices of its enabled entries with a per-prompt rule (`Entry.rules`)."""
    key_rows: int = 0
    """Semantic rows of its keys in the index (content openings not counted)."""


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
        self._files: dict[str, FileState] = {}
        self._lock = threading.Lock()
        self._table = EntryTable()
        self.snapshot = Snapshot()
        self.embed_error: str | None = None
        # Every embedded text of the loaded files, with how many files use it, so an embedding
        # pass looks up known texts without walking the whole book.
        self._known: dict[str, np.ndarray] = {}
        self._uses: dict[str, int] = {}
        # Vectors of texts from replaced or deleted file versions, reusable by the next embedding
        # pass (an edited file keeps its unchanged keys; a renamed file embeds nothing).
        self._retired: dict[str, np.ndarray] = {}
        self._since_prune = -1
        """Files whose texts changed since the vector cache was last pruned (-1: never pruned)."""
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

    def _reread(self, path: str, stat: StatKey, state: FileState | None) -> bool:
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
        parsed = parse_bytes(data, path=Path(path), limits=self.limits)
        if state is None:
            state = self._files[path] = FileState(Path(path), stat, parsed.digest)
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
        state.entries, state.errors, state.keys, state.stale = parsed.entries, (), keys, True

    def _embed_missing(self) -> bool:
        if self._vectors is None:
            return False
        pending = [s for s in self._files.values() if s.vectors is None]
        if not pending:
            return False
        known = ChainMap(self._known, self._retired)
        try:
            for state in pending:
                state.vectors = self._vectors.vectors(state.keys, known)
                state.stale = True
                for text, vector in zip(state.keys, state.vectors):
                    self._known[text] = vector
                    self._uses[text] = self._uses.get(text, 0) + 1
        except EmbedderError as exc:
            # Keyword triggers keep working; semantic search of these files waits for the next try.
            self.embed_error = str(exc)
            log.warning("world book: embedding keys failed, semantic search is incomplete: %s", exc)
            return True
        self.embed_error = None
        # Amortised: a full prune walks every file, so only after as many files changed.
        if self._since_prune < 0 or self._since_prune >= len(self._files):
            self._vectors.prune(s.keys for s in self._files.values())
            self._since_prune = 0
        return True

    def _retire(self, state: FileState) -> None:
        if state.vectors is None:
            return
        self._since_prune += 1
        for text, vector in zip(state.keys, state.vectors):
            self._retired[text] = vector
            left = self._uses.get(text, 0) - 1
            if left > 0:
                self._uses[text] = left
            else:
                self._uses.pop(text, None)
                self._known.pop(text, None)

    def _rebuild(self) -> None:
        states = [s for s in self._files.values() if s.entries]
        alive = sum(len(s.entries) for s in states)
        if len(self._table.entries) > 2 * alive + 1000:
            # Mostly dead entries: start a new table (O(book), after at least as many edits).
            self._table = EntryTable()
            for s in states:
                s.stale, s.indexed = True, {}
            previous: tuple[Segment, ...] = ()
        else:
            previous = self.snapshot.segments
        added: list[int] = []
        rows: list[Rows] = []
        for s in (s for s in states if s.stale):
            added += self._index(s, rows)
        live = np.zeros(len(self._table.entries), dtype=bool)
        if states:
            live[np.concatenate([s.indices for s in states])] = True
        new = Segment.build(self._table, added, Rows.concat(rows)) if added else None
        self.snapshot = Snapshot(
            table=self._table,
            segments=grow(previous, self._table, new, live, alive),
            alive=live,
            count=alive,
            key_rows=sum(s.key_rows for s in states),
            constants=tuple(i for s in states for i in s.constants),
            ruled=tuple(i for s in states for i in s.ruled),
        )
        self.reloads += 1

    def _index(self, state: FileState, rows: list[Rows]) -> list[int]:
        """Give the file's entries global indices: an entry equal to the one indexed under its uid
        keeps its index (and its rows, if it has them or still needs none), others are added.
        Appends the new entries' semantic rows to `rows`; returns their indices."""
        with_rows = state.vectors is not None
        start = len(self._table.entries)
        indices: list[int] = []
        fresh: list[tuple[int, Entry]] = []
        indexed: dict[str, tuple[Entry, int, bool]] = {}
        for e in state.entries:
            old = state.indexed.get(e.uid)
            if old is not None and old[0] == e and (old[2] or not with_rows):
                indexed[e.uid] = old
            else:
                fresh.append((start + len(fresh), e))
                indexed[e.uid] = (e, fresh[-1][0], with_rows)
            indices.append(indexed[e.uid][1])
        self._table.add([e for _, e in fresh])
        state.indexed = indexed
        state.indices = np.asarray(indices, dtype=np.int64)
        state.stale = False
        state.constants = tuple(g for g, e in zip(indices, state.entries) if e.constant and e.enabled)
        state.ruled = tuple(g for g, e in zip(indices, state.entries) if e.rules and e.enabled)
        state.key_rows = _key_rows(state, self.content) if with_rows else 0
        if with_rows and fresh:
            rows.append(_file_rows(state, fresh, self.content))
        return [g for g, _ in fresh]

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


def _key_rows(state: FileState, content: bool) -> int:
    return sum(1 for e in state.entries for _, c in semantic_texts(e, content) if not c)


def _file_rows(state: FileState, entries: list[tuple[int, Entry]], content: bool) -> Rows:
    """One row per (entry, semantic text) of some of a file's entries, given with their global
    indices: its vector, global entry, text, kind."""
    assert state.vectors is not None
    slot = {k: i for i, k in enumerate(state.keys)}
    rows = [(g, t, c) for g, e in entries for t, c in semantic_texts(e, content)]
    if not rows:
        return Rows.empty(state.vectors.shape[1])
    return Rows(
        np.ascontiguousarray(state.vectors[[slot[t] for _, t, _ in rows]], dtype=np.float32),
        np.fromiter((g for g, _, _ in rows), dtype=np.int64, count=len(rows)),
        tuple(t for _, t, _ in rows),
        np.fromiter((c for _, _, c in rows), dtype=bool, count=len(rows)),
    )
