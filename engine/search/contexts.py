"""Term contexts: what each rarer word of the diary is said about, for the second query expansion.

Why: `expand.py` finds the terms nearest a query by each term's own vector, a word embedded alone,
and such vectors match by form as much as by topic ("activities" -> "platform", "part", "parade").
A term's context vector adds the mean of the vectors of the lines that hold it: what the diary says
with that word ("hikes" -> "canyon", "campfire", "marshmallow"; "pottery" -> "clay", "bowl"). BM25
over the terms nearest a query by these vectors is a seventh ranking signal (`rank.search`), beside
the word-vector expansion. Measured on LoCoMo dev (`bench/bench_recall.py`): see
`Tuning.context_weight`.

Only a term held by at most `MAX_LINES` lines has one: a common word's lines say everything, their
mean drifts to the diary's own and sits near every query (the lines' mean alone, uncapped, offered
"got", "made", "cool"). The cap is a count of lines, not a share of the diary: what makes a word's lines
say one thing is how few they are, however long the diary.

Derived data, in memory only (nothing is embedded; the lines' and the terms' vectors are the
index's): made for every rare term after the index opens, in the background (~0.9 s at 100,000
turns, `expand.BackgroundTerms`, a chunk per hold of the lock); after each turn for the words it
added (on the diary's worker); and before each lookup for at most `LOOKUP_LIMIT` terms whose line
count or word vector changed since, or whose lines were removed or edited (`forget`: those terms
are not offered until remade). A compaction renumbers the lines and keeps the vectors. A term without its word vector
yet is not offered (as in `expand.py`); lookups during a catch-up use the vectors made so far.

A lookup weighs only the rare terms of the search's candidate lines (it keeps which lines hold
which rare term): a term in no candidate line would add nothing to any candidate's score, so the
vector product covers the candidates' rare terms, not the diary's rare vocabulary (which grows
with the diary: 11,426 terms in `bench/bench_prompt.py`'s 100,000 synthetic turns); the (line,
term) pairs are scanned once, a mask over integers. It runs on the search's helper thread
(`rank._NEAR_TERMS`) while the search reads the candidates' vectors.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from engine.search.grow import Grow
from engine.search.lexical import Bm25
from engine.search.vectors import VectorFile



class TermFile(Protocol):
    """The index's term vectors (`expand.TermVectors`)."""

    @property
    def rows(self) -> int: ...

    file: VectorFile


class ContextSource(Protocol):
    """What the term contexts read of a turn index (`files.FileTurnIndex`)."""

    bm25: Bm25
    terms: TermFile
    vectors: VectorFile
    alive: Grow
    version: int

MAX_LINES = 20
"""A term held by more lines than this has no context vector (LoCoMo dev, all five conversations,
multi-hop: 10 lines 0.717, 20 lines 0.717, 50 lines 0.713; no cap crowds out the topical words)."""
LOOKUP_LIMIT = 128
"""Vectors a lookup makes before it looks (a turn changes ~10-30); when more are behind (an index
just opened) the owner's background thread makes them (`expand.BackgroundTerms`),
and lookups meanwhile use the vectors made so far. ~70 µs per term at 100,000 turns (~6 µs per line)."""
CHUNK = 256
"""Vectors made per hold of the owner's lock when catching up (~20 ms at 100,000 turns)."""
GATHER = 65_536
"""Lines' vectors read per step when making many terms at once (bounds the memory it takes)."""


class TermContexts:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.clear()

    def clear(self) -> None:
        """Forget every vector (the index was emptied)."""
        self.matrix = Grow(np.float32, (self.dim,))
        """One row per term that has a vector, unit length."""
        self.row_of = Grow(np.int64)
        """Per term id: its row, -1 when it has none."""
        self.made_at = Grow(np.int32)
        """Per term id: its line count when its vector was made, -1 when it never was."""
        self.pair_unit = Grow(np.int64)
        self.pair_term = Grow(np.int64)
        """Which rare term each line holds, as (unit, term) pairs (a term's pairs consecutive, from
        its latest making; -1: an older making's, dropped at the next compaction): a lookup weighs
        only the terms of its candidate lines."""
        self.span = Grow(np.int64, (2,))
        """Per term id: where its pairs are."""
        self._dropped = 0

    @property
    def rows(self) -> int:
        return len(self.matrix)

    def forget(self, units: np.ndarray) -> None:
        """These lines were removed or replaced: the terms they hold are not offered until remade
        from their live lines (at the next refresh), so a removed line describes nothing."""
        if units.size == 0:
            return
        hit = np.isin(self.pair_unit.view, units) & (self.pair_term.view >= 0)
        terms = np.unique(self.pair_term.view[hit])
        if terms.size == 0:
            return
        self._drop_pairs(terms)
        self.span.view[terms] = 0
        self.made_at.view[terms] = -1

    def renumber(self, unit_map: np.ndarray) -> None:
        """The index was compacted (`unit_map[old unit]` = new unit, -1 for a dropped one): the
        pairs follow; the vectors stay (a dropped line's terms were forgotten when it died)."""
        units = unit_map[self.pair_unit.view]
        self.pair_term.view[units < 0] = -1
        self.pair_unit.view[:] = np.maximum(units, 0)
        self._compact_pairs()

    def catching_up(self, ix: ContextSource) -> bool:
        """More vectors are missing than a lookup makes: the owner's background thread should."""
        return self.behind(ix) > LOOKUP_LIMIT

    def behind(self, ix: ContextSource) -> int:
        """How many rare terms have no vector, or one made before their line count changed."""
        return int(self._wanted(ix).size)

    def refresh(self, ix: ContextSource, limit: int | None = None) -> int:
        """Make up to `limit` (all: None) of the vectors that are missing or out of date, lowest
        term ids first; returns how many. The caller holds the index's lock."""
        want = self._wanted(ix)
        if limit is not None:
            want = want[:limit]
        if want.size:
            self._make(ix, want)
            self.made_at.view[want] = ix.bm25.df.view[want]
        return int(want.size)

    def _wanted(self, ix: ContextSource) -> np.ndarray:
        n = min(len(ix.bm25.names), ix.terms.rows)
        if n > len(self.row_of):
            grow = n - len(self.row_of)
            self.row_of.extend(np.full(grow, -1, dtype=np.int64))
            self.made_at.extend(np.full(grow, -1, dtype=np.int32))
            self.span.extend(np.zeros((grow, 2), dtype=np.int64))
        df = ix.bm25.df.view[:n]
        return np.flatnonzero((df > 0) & (df <= MAX_LINES) & (df != self.made_at.view[:n]))

    def nearest(self, ix: ContextSource, vector: np.ndarray, skip: set[str], m: int, units: np.ndarray) -> list[int]:
        """Ids of the `m` terms held by any of `units` (the search's candidate lines) whose context
        vectors are nearest `vector`, leaving out those in `skip` (the query's own) and those now
        held by more than `MAX_LINES` lines. A term in no candidate line would score nothing, so
        only those are weighed.
        Makes the vectors a recorded turn has changed first (at most `LOOKUP_LIMIT`)."""
        self.refresh(ix, LOOKUP_LIMIT)
        if m <= 0 or self.rows == 0 or units.size == 0:
            return []
        wanted = np.zeros(len(ix.bm25.length), dtype=bool)
        wanted[units] = True
        pair_term = self.pair_term.view
        held = np.unique(pair_term[wanted[self.pair_unit.view] & (pair_term >= 0)])
        held = held[ix.bm25.df.view[held] <= MAX_LINES]
        if held.size == 0:
            return []
        sims = self.matrix.view[self.row_of.view[held]] @ np.asarray(vector, dtype=np.float32).reshape(-1)
        top = np.argsort(-sims, kind="stable")[: m + len(skip) + 4]
        names = ix.bm25.names
        out = [int(held[i]) for i in top.tolist() if sims[i] > 0 and names[held[i]] not in skip]
        return out[:m]

    def _make(self, ix: ContextSource, term_ids: np.ndarray) -> None:
        unit_alive = ix.bm25.live_units(ix.alive.view, ix.version)
        units: list[np.ndarray] = []
        owner: list[np.ndarray] = []
        size = 0
        for j, tid in enumerate(term_ids.tolist()):
            u = ix.bm25._postings(tid)[0]
            u = u[unit_alive[u]]
            units.append(u)
            owner.append(np.full(u.size, j, dtype=np.int64))
            size += u.size
            if size >= GATHER:
                self._put(ix, term_ids, units, owner)
                units, owner, size = [], [], 0
        self._put(ix, term_ids, units, owner)

    def _put(self, ix: ContextSource, term_ids: np.ndarray, units: list[np.ndarray], owner: list[np.ndarray]) -> None:
        """The context vectors of the terms that own these lines (each term's lines all in one
        call; a term with no live line gets none)."""
        if not units:
            return
        u = np.concatenate(units).astype(np.int64)
        j = np.concatenate(owner)
        if u.size == 0:
            return
        lines = ix.vectors.take(u >> 1, kind=u & 1)  # a unit is row 2r (user half) or 2r + 1
        # Each term's lines are consecutive: one sum per run.
        starts = np.flatnonzero(np.r_[True, j[1:] != j[:-1]])
        ends = np.r_[starts[1:], j.size]
        sums = np.stack([lines[a:b].sum(axis=0) for a, b in zip(starts.tolist(), ends.tolist())])
        picked = j[starts]
        word = ix.terms.file.take(term_ids[picked], kind=0)
        mean = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-6)
        vec = mean + word
        vec /= np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-6)
        # No word vector (a stop word): nothing to be near to.
        usable = np.linalg.norm(word, axis=1) > 0
        vec[~usable] = 0.0
        tids = term_ids[picked]
        rows = self.row_of.view[tids]
        old = rows >= 0
        self.matrix.view[rows[old]] = vec[old]
        new = np.flatnonzero(~old & usable)
        if new.size:
            self.row_of.view[tids[new]] = np.arange(self.rows, self.rows + new.size)
            self.matrix.extend(vec[new])
        self._pair(tids, u, ends - starts, usable)

    def _pair(self, tids: np.ndarray, units: np.ndarray, counts: np.ndarray, usable: np.ndarray) -> None:
        """Record which lines hold these terms (`units`: each term's `counts` lines in turn),
        dropping their earlier pairs; a term with no vector gets none."""
        self._drop_pairs(tids)
        keep = np.repeat(usable, counts)
        kept = counts * usable
        first = len(self.pair_unit) + np.r_[0, np.cumsum(kept)[:-1]]
        self.span.view[tids] = np.stack([first, first + kept], axis=1)
        self.pair_unit.extend(units[keep])
        self.pair_term.extend(np.repeat(tids, counts)[keep])
        if self._dropped > max(GATHER, len(self.pair_unit) // 2):
            self._compact_pairs()

    def _drop_pairs(self, terms: np.ndarray) -> None:
        """Mark these terms' current pairs dropped (their spans are then rewritten by the caller)."""
        for a, b in self.span.view[terms].tolist():
            if b > a:
                self.pair_term.view[a:b] = -1
                self._dropped += b - a

    def _compact_pairs(self) -> None:
        live = self.pair_term.view >= 0
        unit, term = self.pair_unit.view[live], self.pair_term.view[live]
        self.pair_unit, self.pair_term = Grow(np.int64, data=unit), Grow(np.int64, data=term)
        # A term's pairs stay consecutive: its first index and count are its new span.
        names, first, count = np.unique(term, return_index=True, return_counts=True)
        self.span.view[:] = 0
        self.span.view[names] = np.stack([first, first + count], axis=1)
        self._dropped = 0
