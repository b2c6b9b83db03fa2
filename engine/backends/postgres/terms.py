"""The diary's words' vectors in the database (`term_vectors`), shared by every worker.

Query expansion (`engine.search.expand`) offers the vocabulary's terms nearest a question; each
worker's copy of a user's index (`mirror.py`) needs a vector per term. Embedding them per worker
made a fresh worker rank without expansion until its background thread caught up, so the same
question ranked differently before and after warm-up. Now the worker that writes a turn embeds the
words the database has no vector for yet (`ensure`, in the diary's background job, as the files
backend does after each turn), and a copy takes the vectors it lacks from here (`fill`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from engine.search.expand import embed_terms
from engine.search.text import is_content, terms
from engine.backends.postgres.connect import Database

BATCH = 2_000
"""Terms per query when reading or writing (bounds one statement's size)."""


class PgTermVectors:
    def __init__(self, db: Database, embedder) -> None:
        self.db = db
        self.embedder = embedder
        self.dim = int(embedder.dim)

    def get(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those of `names` the database has."""
        out: dict[str, np.ndarray] = {}
        want = list(dict.fromkeys(n for n in names if is_content(n)))
        with self.db.tx() as conn:
            for a in range(0, len(want), BATCH):
                rows = conn.execute("SELECT term, vec FROM term_vectors WHERE term = ANY(%s)",
                                    (want[a : a + BATCH],)).fetchall()
                out.update((term, np.frombuffer(vec, dtype="<f4")) for term, vec in rows)
        return out

    def vectors(self, names: Sequence[str]) -> np.ndarray:
        """(len(names), dim) vectors: stored ones read, the others embedded and stored (zeros for
        a word that carries no content, as `expand.embed_terms` gives)."""
        have = self.get(names)
        missing = list(dict.fromkeys(n for n in names if is_content(n) and n not in have))
        if missing:
            made = embed_terms(self.embedder, missing)
            self._put(dict(zip(missing, made)))
            have.update(zip(missing, made))
        return self._array(names, have)

    def ensure(self, texts: Iterable[str]) -> int:
        """Store a vector for every content word of `texts` the database lacks; returns how many
        were embedded."""
        words = list(dict.fromkeys(t for text in texts for t in terms(text) if is_content(t)))
        if not words:
            return 0
        have = self.get(words)
        missing = [w for w in words if w not in have]
        if missing:
            self._put(dict(zip(missing, embed_terms(self.embedder, missing))))
        return len(missing)

    def fill(self, behind: Callable[[], tuple[int, list[str]]], add: Callable[[int, np.ndarray], bool]) -> int:
        """Give an index the vectors it lacks that the database holds, in term-id order up to the
        first word the database has none for (a background embedding takes it from there), a
        batch per query; returns how many were added. While the database lacks the next word this
        costs one query of at most `BATCH` words per search."""
        added = 0
        while True:
            first, names = behind()
            names = names[:BATCH]
            if not names:
                return added
            have = self.get(names)
            n = 0
            while n < len(names) and (names[n] in have or not is_content(names[n])):
                n += 1
            if n == 0 or not add(first, self._array(names[:n], have)):
                return added
            added += n
            if n < len(names):
                return added

    def _array(self, names: Sequence[str], have: dict[str, np.ndarray]) -> np.ndarray:
        """(len(names), dim): each name's vector, zeros for a word without one (no content)."""
        out = np.zeros((len(names), self.dim), dtype=np.float32)
        for i, name in enumerate(names):
            if name in have:
                out[i] = have[name]
        return out

    def _put(self, vectors: dict[str, np.ndarray]) -> None:
        items = [(t, np.asarray(v, dtype="<f4").tobytes()) for t, v in vectors.items()]
        with self.db.tx() as conn, conn.cursor() as cur:
            for a in range(0, len(items), BATCH):
                cur.executemany("INSERT INTO term_vectors (term, vec) VALUES (%s, %s) ON CONFLICT (term) DO NOTHING",
                                items[a : a + BATCH])
