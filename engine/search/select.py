"""Choosing a search's hits from its scored candidates (`rank.py`): the range's lines first, then
the rest by score, near-duplicates skipped, the texts of those taken read at once."""

from __future__ import annotations

import math

import numpy as np

from engine.search.base import SIDES, SearchHit, SearchRequest
from engine.search.ranked import RankedIndex


def select(ix: RankedIndex, req: SearchRequest, cand, score, eligible, first, core, range_mask, lu, du, vecs: "Units",
           q_terms, content) -> list[SearchHit]:
    """The best eligible units: the `first` ones (a range's lines), then the rest by score (lines
    past the gate or in the range have gained `gate_bonus`); near-duplicates skipped."""
    ri, si = np.nonzero(eligible)
    if ri.size == 0:
        return []
    key = np.lexsort((-score[ri, si], ~first[ri, si]))
    ri, si = ri[key], si[key]
    # The range's hits lead (`first`): past `range_k` of them, only the other days' are taken. The
    # range's units past twice that many (room for near-duplicates) are not looked at.
    range_room = req.k if req.only_range or req.range_k is None else req.range_k
    if range_room < req.k:
        ranged = range_mask[ri, si]
        keep = ~ranged | (np.cumsum(ranged) <= 2 * range_room)
        ri, si = ri[keep], si[keep]
    query_terms = tuple(sorted(content & set(q_terms)))  # the query's words a lexical hit shares
    # Compared at once: the range's units looked at, then about k of the rest.
    dup = Duplicates(vecs, ri, si, req.k + (range_room if range_room < req.k else 0), ix.tuning.duplicate_cosine)
    # Read as Python numbers once: a hit needs six of them.
    row_of = cand[ri]
    rows, ts, tokens = row_of.tolist(), ix.ts.view[row_of].tolist(), ix.line_tokens.view[row_of, si].tolist()
    scores, lexical, dense = score[ri, si].tolist(), lu[ri, si].tolist(), du[ri, si].tolist()
    in_range, is_core = range_mask[ri, si].tolist(), core[ri, si].tolist()
    sides = si.tolist()
    taken: list[int] = []
    for j in range(len(sides)):
        if in_range[j] and range_room <= 0:
            continue
        if dup.skip(j):
            continue
        range_room -= in_range[j]
        taken.append(j)
        if len(taken) >= req.k:
            break
    hits: list[SearchHit] = []
    for j, texts in zip(taken, ix.records([rows[j] for j in taken])):  # the texts read at once
        row, s = rows[j], sides[j]
        why = "range" if req.only_range else ("words" if lexical[j] > 0 else "meaning") if is_core[j] else "context"
        hits.append(
            SearchHit(
                turn_id=ix.ids[row],
                ts=ts[j],
                side=SIDES[s],
                score=scores[j],
                lexical=lexical[j],
                dense=dense[j] if math.isfinite(dense[j]) else 0.0,
                terms=query_terms if lexical[j] > 0 else (),
                why=why,
                in_range=in_range[j],
                text=texts[s],
                dates=texts[2],
                tokens=tokens[j],
            )
        )
    return hits


class Duplicates:
    """Which units, taken in rank order, are near-duplicates of one taken before them. A unit
    that is only a neighbour has no vector read: it is nobody's near-duplicate."""

    def __init__(self, vecs: "Units", ri: np.ndarray, si: np.ndarray, k: int, cosine: float) -> None:
        # The units likely to be taken are compared all at once (one matrix product); past them
        # (when many were duplicates) each unit is compared with the kept ones as it comes.
        at = vecs.at(ri, si)
        self.at, self.flat, self.cosine = at.tolist(), vecs.flat, cosine
        self.head = min(ri.size, k + k // 4)
        with_vec = np.flatnonzero(at[: self.head] >= 0)
        v = vecs.flat[at[with_vec]]
        close = np.triu(v @ v.T >= cosine, 1)
        self.before: dict[int, list[int]] = {}
        for i, j in zip(*(with_vec[x].tolist() for x in np.nonzero(close))):
            self.before.setdefault(j, []).append(i)
        self.kept: set[int] = set()
        self.kept_at: list[int] = []

    def skip(self, j: int) -> bool:
        """Whether unit `j` repeats a kept one; if not, it is kept (call in rank order)."""
        at = self.at[j]
        if at < 0:
            return False
        if j < self.head:
            if any(i in self.kept for i in self.before.get(j, ())):
                return True
        elif self.kept_at and float(np.max(self.flat[self.kept_at] @ self.flat[at])) >= self.cosine:
            return True
        self.kept.add(j)
        self.kept_at.append(at)
        return False


class Units:
    """The half vectors of the candidate rows that are candidates in their own right (`base`); a
    row that is only a neighbour has none read."""

    def __init__(self, base_vectors: np.ndarray, base: np.ndarray) -> None:
        self.base = base_vectors
        """(rows in `base`, 3, dim): user half, assistant half, whole turn."""
        self.flat = base_vectors.reshape(-1, base_vectors.shape[-1])
        """Every vector, the three of a row together: row `at`'s half `side` is `flat[3 * at + side]`."""
        self._at = np.full(base.size, -1, dtype=np.int64)
        self._at[base] = np.arange(int(base.sum()))

    def at(self, rows: np.ndarray, sides: np.ndarray) -> np.ndarray:
        """Per (candidate row, side): its index in `flat`, or -1 for a neighbour-only row."""
        at = self._at[rows]
        return np.where(at >= 0, 3 * at + sides, -1)
