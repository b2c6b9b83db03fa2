"""An on-disk embedding cache keyed by (model id, role, text hash), so nothing is embedded twice.

Stored in SQLite as raw float32 bytes: no pickle, and a corrupt file is simply rebuilt.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from engine.adapters.embedder import Embedder, Role

log = logging.getLogger(__name__)


class CachedEmbedder:
    """Wraps an embedder; passages are looked up in the cache first. Queries are not cached
    (they are rarely repeated, and a write per message would cost more than it saves)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.default_thresholds: Mapping[str, float] = inner.default_thresholds
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = self._open()
        self.calls = 0
        """How many texts were actually sent to the inner embedder (cache misses)."""

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            log.warning("embedding cache %s is corrupt (%s); rebuilding it", self.path, exc)
            self.path.unlink(missing_ok=True)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # Derived data: losing the last writes on a crash only costs a re-embed.
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, role TEXT, hash BLOB, vec BLOB, "
            "PRIMARY KEY (model, role, hash))"
        )
        db.execute("SELECT count(*) FROM vectors").fetchone()
        return db

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = list(texts)
        if role == "query" or not texts:
            self.calls += len(texts)
            return self.inner.embed(texts, role=role)
        hashes = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        found = self._lookup(role, hashes)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing = [i for i, h in enumerate(hashes) if h not in found]
        for i, h in enumerate(hashes):
            if h in found:
                out[i] = found[h]
        if missing:
            unique = list(dict.fromkeys(texts[i] for i in missing))
            vecs = self.inner.embed(unique, role=role)
            self.calls += len(unique)
            by_text = dict(zip(unique, vecs))
            for i in missing:
                out[i] = by_text[texts[i]]
            self._store(role, [(hashlib.sha256(t.encode("utf-8")).digest(), v) for t, v in by_text.items()])
        return out

    def _lookup(self, role: str, hashes: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(hashes), 500):
                chunk = hashes[i : i + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT hash, vec FROM vectors WHERE model=? AND role=? AND hash IN ({marks})",
                    (self.model_id, role, *chunk),
                ).fetchall()
                for h, blob in rows:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape == (self.dim,):
                        found[h] = vec
        return found

    def _store(self, role: str, rows: list[tuple[bytes, np.ndarray]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                [(self.model_id, role, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in rows],
            )
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
