"""The vector side of core memory: one user's fact vectors, searchable by cosine, keyed by fact id.

The vectors live in a FAISS `IndexHNSWFlat` (inner product on L2-normalised vectors, so cosine):

- retrieval scans every vector exactly (a matrix-vector product over the flat storage, ~1 ms at
  10,000 facts), so a fact is never missed because a graph walk went elsewhere;
- the near-duplicate guard, asked once per added fact, walks the HNSW graph once the user has more
  than `GUARD_EXACT_MAX` facts: an exact scan there would make adding facts one by one quadratic
  (20,000 adds would scan 200 million vectors). Below that size it scans exactly too.

Rows only grow: adding appends a row (FAISS grows its storage geometrically, and so does the live
mask here), deleting or replacing a fact marks its row dead. When dead rows outnumber live ones
the index is rebuilt from the live vectors, so each removal costs O(1) amortised and the index
stays within twice its live size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import faiss
import numpy as np

from engine.adapters.embedder import Embedder
from engine.stores.core.facts import Fact, text_hash

GUARD_EXACT_MAX = 4096
"""Up to this many live facts the near-duplicate guard scans exactly; above it, it walks the graph."""
GRAPH_M = 32
"""HNSW neighbours per node: FAISS's usual value for 384-d text embeddings."""
GRAPH_EF_SEARCH = 64
_GUARD_K = 16
_COMPACT_MIN_DEAD = 256


def new_graph(dim: int) -> faiss.IndexHNSWFlat:
    graph = faiss.IndexHNSWFlat(dim, GRAPH_M, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efSearch = GRAPH_EF_SEARCH
    return graph


class FactIndex:
    """Vectors of the live facts of one user."""

    def __init__(self, dim: int, *, guard_exact_max: int = GUARD_EXACT_MAX) -> None:
        self.dim = dim
        self.graph = new_graph(dim)
        self.guard_exact_max = guard_exact_max
        self.row_fact: list[str | None] = []
        """Row -> fact id; None for a dead row (deleted or replaced)."""
        self.fact_row: dict[str, int] = {}
        self.embedded_hash: dict[str, str] = {}
        """Fact id -> text hash of the text whose vector is in the index."""
        self._live = np.zeros(64, dtype=bool)
        self.dead = 0

    def __len__(self) -> int:
        return len(self.fact_row)

    def is_current(self, fact: Fact) -> bool:
        return self.embedded_hash.get(fact.id) == text_hash(fact.text)

    # ------------------------------------------------------------------ changes

    def add(self, facts: Sequence[Fact], vectors: np.ndarray) -> None:
        """Add (or replace) the vectors of `facts`."""
        if facts:
            self.append_rows([f.id for f in facts], [text_hash(f.text) for f in facts], vectors)

    def append_rows(self, fact_ids: Sequence[str], hashes: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if vectors.shape != (len(fact_ids), self.dim):
            raise ValueError(f"{vectors.shape[0]}x{vectors.shape[1]} vectors for {len(fact_ids)} facts of dimension {self.dim}")
        self.remove([f for f in fact_ids if f in self.fact_row])
        start = len(self.row_fact)
        self.graph.add(vectors)
        self._grow(start + len(fact_ids))
        self._live[start : start + len(fact_ids)] = True
        self.row_fact.extend(fact_ids)
        for offset, (fact_id, digest) in enumerate(zip(fact_ids, hashes)):
            self.fact_row[fact_id] = start + offset
            self.embedded_hash[fact_id] = digest

    def remove(self, fact_ids: Iterable[str]) -> None:
        for fact_id in fact_ids:
            row = self.fact_row.pop(fact_id, None)
            if row is None:
                continue
            del self.embedded_hash[fact_id]
            self.row_fact[row] = None
            self._live[row] = False
            self.dead += 1
        if self.dead > max(_COMPACT_MIN_DEAD, len(self)):
            self._compact()

    def _grow(self, rows: int) -> None:
        if rows > len(self._live):
            bigger = np.zeros(max(rows, 2 * len(self._live)), dtype=bool)
            bigger[: len(self._live)] = self._live
            self._live = bigger

    def _compact(self) -> None:
        rows = [r for r, f in enumerate(self.row_fact) if f is not None]
        ids = [self.row_fact[r] for r in rows]
        vectors = self.vectors()[rows].copy()
        hashes = [self.embedded_hash[f] for f in ids if f is not None]
        self.graph = new_graph(self.dim)
        self.row_fact, self.fact_row, self.embedded_hash = [], {}, {}
        self._live = np.zeros(64, dtype=bool)
        self.dead = 0
        self.append_rows([f for f in ids if f is not None], hashes, vectors)

    # ------------------------------------------------------------------ reading

    def vectors(self) -> np.ndarray:
        """(rows, dim) view of every stored vector, dead rows included; valid until the next add."""
        n = int(self.graph.ntotal)
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        storage = faiss.downcast_index(self.graph.storage)
        return faiss.rev_swig_ptr(storage.get_xb(), n * self.dim).reshape(n, self.dim)

    def scores(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of one vector against every row, dead rows included (FAISS's own SIMD loop:
        numpy's BLAS call costs ~10x more for one vector on a busy machine)."""
        vector = self._check(vector)[0]
        n = int(self.graph.ntotal)
        out = np.empty(n, dtype=np.float32)
        if n:
            storage = faiss.downcast_index(self.graph.storage)
            faiss.fvec_inner_products_ny(faiss.swig_ptr(out), faiss.swig_ptr(vector), storage.get_xb(), self.dim, n)
        return out

    def live_scores(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine of `vector` against every live fact: (rows, scores), in row order."""
        scores = self.scores(vector)
        if self.dead:
            rows = np.flatnonzero(self._live[: len(scores)])
            return rows, scores[rows]
        return np.arange(len(scores)), scores

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """For each row of `vectors`, up to `k` (fact id, cosine) pairs, best first; exact."""
        vectors = self._check(vectors)
        k = min(k, len(self))
        if k <= 0:
            return [[] for _ in range(len(vectors))]
        out = []
        for vector in vectors:
            scores = self.scores(vector)
            if self.dead:
                scores[~self._live[: len(scores)]] = -np.inf
            top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
            top = top[np.argsort(-scores[top], kind="stable")]
            out.append([(self.row_fact[r], float(scores[r])) for r in top.tolist()])  # type: ignore[misc]
        return out

    def nearest(self, vector: np.ndarray) -> tuple[str, float] | None:
        """The live fact closest to `vector` (for the near-duplicate guard)."""
        if not len(self):
            return None
        if len(self) > self.guard_exact_max:
            scores, rows = self.graph.search(self._check(vector), _GUARD_K)
            for score, row in zip(scores[0].tolist(), rows[0].tolist()):
                if row >= 0 and self.row_fact[row] is not None:
                    return self.row_fact[row], float(score)  # type: ignore[return-value]
            # Every neighbour found was a dead row (one fact replaced many times): scan exactly.
        [best] = self.search(vector, 1)
        return best[0] if best else None

    def vector(self, fact_id: str) -> np.ndarray:
        return self.vectors()[self.fact_row[fact_id]].copy()

    def _check(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"query vector has dimension {vectors.shape[1]}, the core index has {self.dim}")
        return vectors


def sync_index(index: FactIndex, facts: Sequence[Fact], embedder: Embedder) -> int:
    """Make `index` hold exactly the live facts' current texts; embed only what changed. Returns
    how many texts were embedded."""
    live = {f.id: f for f in facts if f.live}
    index.remove([fid for fid in list(index.fact_row) if fid not in live])
    stale = [f for f in live.values() if not index.is_current(f)]
    if stale:
        index.add(stale, embedder.embed([f.text for f in stale], role="passage"))
    return len(stale)
