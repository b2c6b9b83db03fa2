"""The searchable book as a few immutable segments that grow by merging, not by rebuilding.

An edit used to rebuild the whole keyword automaton and FAISS index, so adding keys one by one
cost O(book) each: quadratic in the end (2,000 keys added one at a time took 52 s). Now each
refresh puts the changed files' entries into one new small `Segment` (its own automaton and
index), and a segment is merged with the one before it while that one is at most twice its size
(a binary counter: every entry is rebuilt O(log n) times in all). An edited file adds only the
entries it changed (`book.py`): the others keep their place. Entries of a replaced or deleted
version are dead: a snapshot ignores them, and merges drop them; when dead entries outnumber live
ones everything is compacted. Readers never lock: a snapshot is a tuple of immutable segments
plus its own flags of which entries are alive, swapped in whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import faiss
import numpy as np

from engine.stores.worldbook.matcher import KeyMatch, KeywordMatcher, RegexBudget
from engine.stores.worldbook.model import Entry, Key

MERGE_RATIO = 2
"""Merge the newest segment into the one before while that one is at most this many times bigger."""


@dataclass(frozen=True)
class Rows:
    """Semantic rows (keys and content openings) of some entries; one row per (entry, text)."""

    vectors: np.ndarray
    entry: np.ndarray
    """Global entry index of each row."""
    text: tuple[str, ...]
    content: np.ndarray
    """Whether each row embeds the entry's content opening rather than a key."""

    @staticmethod
    def empty(dim: int = 0) -> Rows:
        return Rows(np.zeros((0, dim), np.float32), np.zeros(0, np.int64), (), np.zeros(0, bool))

    @staticmethod
    def concat(parts: Sequence[Rows]) -> Rows:
        parts = [p for p in parts if len(p.entry)]
        if not parts:
            return Rows.empty()
        return Rows(
            np.ascontiguousarray(np.concatenate([p.vectors for p in parts]), dtype=np.float32),
            np.concatenate([p.entry for p in parts]),
            tuple(t for p in parts for t in p.text),
            np.concatenate([p.content for p in parts]),
        )

    def keep(self, mask: np.ndarray) -> Rows:
        return Rows(self.vectors[mask], self.entry[mask], tuple(t for t, m in zip(self.text, mask) if m), self.content[mask])


@dataclass(frozen=True)
class Segment:
    """Some entries (by global index) with their keyword automaton and vector index; immutable."""

    entries: tuple[int, ...]
    matcher: KeywordMatcher
    rows: Rows
    index: faiss.Index | None

    @staticmethod
    def build(table: EntryTable, entries: Sequence[int], rows: Rows) -> Segment:
        matcher = KeywordMatcher([table.entries[i] for i in entries], indices=entries)
        index = None
        if len(rows.entry):
            index = faiss.IndexFlatIP(rows.vectors.shape[1])
            index.add(rows.vectors)
        return Segment(tuple(entries), matcher, rows, index)


@dataclass
class EntryTable:
    """Every entry ever loaded in this generation, by global index, with its file version.

    Append-only (appends are atomic under the GIL; a snapshot only reads indices it was built
    with), so segments and snapshots share it instead of copying entries.
    """

    entries: list[Entry] = field(default_factory=list)

    def add(self, entries: Sequence[Entry]) -> range:
        start = len(self.entries)
        self.entries.extend(entries)
        return range(start, len(self.entries))


@dataclass(frozen=True)
class Snapshot:
    """Everything a search needs, immutable once built."""

    table: EntryTable = field(default_factory=EntryTable)
    segments: tuple[Segment, ...] = ()
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Per global entry index (as the table was when built): whether the entry is active. Never
    written after the snapshot is built (a rebuild makes a new array)."""
    count: int = 0
    """Live entries."""
    key_rows: int = 0
    """Live semantic rows that embed a key (not a content opening)."""
    constants: tuple[int, ...] = ()
    ruled: tuple[int, ...] = ()
    """Live entries with a per-prompt rule (`Entry.rules`): probability, groups, recursion flags,
    scan depth, sticky / cooldown / delay."""

    @cached_property
    def ruled_set(self) -> frozenset[int]:
        return frozenset(self.ruled)

    def entry(self, i: int) -> Entry:
        return self.table.entries[i]

    def is_live(self, i: int) -> bool:
        return bool(self.alive[i])

    def entries(self) -> Iterator[tuple[int, Entry]]:
        """Live entries with their global index (O(book): for status and calibration, not per prompt)."""
        for seg in self.segments:
            for i in seg.entries:
                if self.is_live(i):
                    yield i, self.table.entries[i]

    @property
    def searchable(self) -> bool:
        return any(seg.index is not None for seg in self.segments)

    def scan(self, text: str, budget: RegexBudget | None = None) -> list[KeyMatch]:
        """Every live (entry, key) found in `text`, over all segments."""
        return [m for seg in self.segments for m in seg.matcher.scan(text, budget, self.is_live) if self.is_live(m.entry)]

    def regex_keys(self) -> Iterator[tuple[Entry, Key]]:
        for seg in self.segments:
            for i, key in seg.matcher.regex_entries:
                if self.is_live(i):
                    yield self.table.entries[i], key

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[float, int, str, bool]]]:
        """For each query vector, its best `k` live rows: (cosine, entry, text, is content), best first."""
        out: list[list[tuple[float, int, str, bool]]] = [[] for _ in range(len(vectors))]
        for seg in self.segments:
            if seg.index is None:
                continue
            found = self._search_segment(seg, vectors, k)
            for p, rows in enumerate(found):
                out[p].extend(rows)
        return [sorted(rows, key=lambda r: -r[0])[:k] for rows in out]

    def _search_segment(self, seg: Segment, vectors: np.ndarray, k: int) -> list[list[tuple[float, int, str, bool]]]:
        assert seg.index is not None
        depth = min(seg.index.ntotal, k * 2)
        while True:
            scores, rows = seg.index.search(vectors, depth)
            found = [
                [(float(s), int(seg.rows.entry[r]), seg.rows.text[r], bool(seg.rows.content[r]))
                 for s, r in zip(scores[p], rows[p]) if r >= 0 and self.is_live(int(seg.rows.entry[r]))]
                for p in range(len(vectors))
            ]
            # Dead rows may fill the top of an old segment: look deeper until k live rows or the end.
            if depth >= seg.index.ntotal or all(len(f) >= k for f in found):
                return found
            depth = min(seg.index.ntotal, depth * 4)


def grow(
    segments: Sequence[Segment], table: EntryTable, new: Segment | None, live: np.ndarray, alive: int
) -> tuple[Segment, ...]:
    """The segments after adding `new` (`live`: the alive flags by global index; `alive`: how
    many are set): the newest merged
    into the one before while that one is not much bigger; everything compacted when dead entries
    outnumber live ones. Costs O(log n) rebuilds per entry over a book's life, never O(book) per edit."""
    segments = list(segments)
    if new is not None and new.entries:
        segments.append(new)
    total = sum(len(s.entries) for s in segments)
    if segments and total > 2 * alive:
        return (_merge(table, segments, live),) if alive else ()
    while len(segments) >= 2 and len(segments[-2].entries) <= MERGE_RATIO * len(segments[-1].entries):
        segments[-2:] = [_merge(table, segments[-2:], live)]
    return tuple(segments)


def _merge(table: EntryTable, segments: Sequence[Segment], live: np.ndarray) -> Segment:
    entries = [i for s in segments for i in s.entries if live[i]]
    parts = []
    for s in segments:
        if len(s.rows.entry):
            parts.append(s.rows.keep(live[s.rows.entry]))
    return Segment.build(table, entries, Rows.concat(parts))
