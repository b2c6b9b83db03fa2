"""Vectors of entry keys, cached on disk per file so a restart or an edit embeds only new keys.

Each file's semantic keys (unique, in file order) are stored as one `.npy` array named by the hash
of the model id and the key list: the keys alone determine the vectors, so an edit that changes
only descriptions reuses the same array. Loaded with `allow_pickle=False` (never pickle); a
missing, stale or corrupt array is simply recomputed.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from engine.adapters.embedder import Embedder
from engine.fileio import content_hash

log = logging.getLogger(__name__)

_VERSION = "wb1"  # bump when what is embedded for a key changes


class KeyVectors:
    """Embeds key texts (passage role) through a per-file on-disk cache."""

    def __init__(self, embedder: Embedder, cache_dir: Path | None) -> None:
        self.embedder = embedder
        self.dir = cache_dir / content_hash(f"{_VERSION}\0{embedder.model_id}")[:16] if cache_dir else None
        self.embedded = 0
        """Key texts sent to the embedder since construction (for tests, benches and status)."""

    def _path(self, keys: Sequence[str]) -> Path | None:
        if self.dir is None:
            return None
        return self.dir / f"{content_hash(chr(0).join(keys))[:32]}.npy"

    def vectors(self, keys: Sequence[str], known: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """(len(keys), dim) float32 for `keys`: from the cache file, else from `known`, else embedded."""
        dim = self.embedder.dim
        if not keys:
            return np.zeros((0, dim), dtype=np.float32)
        path = self._path(keys)
        cached = self._load(path, (len(keys), dim))
        if cached is not None:
            return cached
        known = known or {}
        out = np.empty((len(keys), dim), dtype=np.float32)
        missing = [i for i, k in enumerate(keys) if k not in known]
        for i, key in enumerate(keys):
            if key in known:
                out[i] = known[key]
        if missing:
            fresh = self.embedder.embed([keys[i] for i in missing], role="passage")
            self.embedded += len(missing)
            out[missing] = fresh
        if path is not None:
            self._save(path, out)
        return out

    @staticmethod
    def _load(path: Path | None, shape: tuple[int, int]) -> np.ndarray | None:
        if path is None or not path.is_file():
            return None
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            log.warning("world book: vector cache %s is unreadable (%s); re-embedding", path, exc)
            return None
        if array.shape != shape or array.dtype != np.float32:
            return None
        return np.ascontiguousarray(array)

    @staticmethod
    def _save(path: Path, array: np.ndarray) -> None:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        # Replaced atomically but not fsynced: this is derived data (a torn or lost file after a
        # power cut is unreadable or missing, and is recomputed), and two fsyncs per edited file
        # were most of the cost of growing a book one key at a time.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(buffer.getvalue())
            os.replace(tmp, path)
        except OSError as exc:  # a read-only cache costs a re-embed, nothing more
            tmp.unlink(missing_ok=True)
            log.warning("world book: cannot write vector cache %s (%s)", path, exc)

    def prune(self, keep: Iterable[Sequence[str]]) -> None:
        """Delete cache files of key lists no longer in any loaded file, and temporary files left
        by a process killed mid-write (after a minute: another process may be writing one now)."""
        if self.dir is None or not self.dir.is_dir():
            return
        wanted = {p.name for p in (self._path(k) for k in keep) if p is not None}
        for path in self.dir.glob("*.npy"):
            if path.name not in wanted:
                path.unlink(missing_ok=True)
        now = time.time()
        for path in self.dir.glob(".*.tmp"):
            try:
                if now - path.stat().st_mtime > 60:
                    path.unlink(missing_ok=True)
            except OSError:
                pass
