"""The vector side of core memory: a FAISS index with stable integer ids, and its cache on disk.

`IndexIDMap2` over `IndexFlatIP` on L2-normalised vectors: inner product is cosine, and the id map
lets an update or delete touch one vector instead of rebuilding. Exact search is fine here: a
flat scan is ~1 ms at 10,000 facts and ~17 ms at 100,000 (bench/bench_core.py); at 100,000 it
reads 150 MB of vectors per query and is bound by memory bandwidth, not by the code around it.

Cache files, in the user's `.cache/` folder (derived, always safe to delete):

- `core.faiss`      the index, written with `faiss.write_index` (no pickle anywhere);
- `core_state.json` which embedder made it, the content hash of `core_mem.yml` it matches,
                    fact id -> (faiss id, text hash), and a column snapshot of the parsed facts
                    (`table.py`) so that opening an unchanged file skips the YAML parse.

Both the id map and the snapshot are stored as parallel lists, not one object per fact: at 100,000
facts, decoding a dict per fact (and the garbage collector walking them) was most of the open time.

On open: same file hash and a consistent cache -> used as is. Otherwise the file is parsed and
only the facts whose text hash changed (or that are new) are embedded again. A missing, stale or
corrupt cache is rebuilt with a warning, never an error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from engine.adapters.embedder import Embedder
from engine.fileio import atomic_write_bytes, atomic_write_text
from engine.stores.core.facts import Fact, text_hash
from engine.stores.core.table import FactTable, to_snapshot

log = logging.getLogger(__name__)

CACHE_VERSION = 2
# Version 1 stored the id map as {fact id: [faiss id, text hash]} and the snapshot as one dict per
# fact: its index is still used (nothing is embedded again), its snapshot is not (the file is
# parsed once, and the cache rewritten as version 2).
_INDEX_VERSIONS = (1, CACHE_VERSION)
INDEX_FILE = "core.faiss"
STATE_FILE = "core_state.json"


class FactIndex:
    """Vectors of the live facts of one user, searchable by cosine, keyed by fact id."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        # Three flat dicts rather than fact id -> (faiss id, hash) tuples: built with one
        # `dict(zip(...))` each from the cache's columns, no object per fact.
        self.faiss_id: dict[str, int] = {}
        """fact id -> faiss id."""
        self.embedded_hash: dict[str, str] = {}
        """fact id -> text hash of the text that was embedded."""
        self.fact_of: dict[int, str] = {}
        """faiss id -> fact id."""
        self.next_id = 1

    def __len__(self) -> int:
        return len(self.faiss_id)

    def is_current(self, fact: Fact) -> bool:
        return self.embedded_hash.get(fact.id) == text_hash(fact.text)

    def add(self, facts: Sequence[Fact], vectors: np.ndarray) -> None:
        """Add (or replace) the vectors of `facts`; a replaced fact gets a fresh faiss id."""
        if not facts:
            return
        self.remove([f.id for f in facts if f.id in self.faiss_id])
        ids = np.arange(self.next_id, self.next_id + len(facts), dtype=np.int64)
        self.next_id += len(facts)
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)
        for fact, int_id in zip(facts, ids.tolist()):
            self.faiss_id[fact.id] = int_id
            self.embedded_hash[fact.id] = text_hash(fact.text)
            self.fact_of[int_id] = fact.id

    def remove(self, fact_ids: Sequence[str]) -> None:
        ints = []
        for fact_id in fact_ids:
            if fact_id in self.faiss_id:
                ints.append(self.faiss_id.pop(fact_id))
                del self.embedded_hash[fact_id]
        if ints:
            for i in ints:
                del self.fact_of[i]
            self.index.remove_ids(np.asarray(ints, dtype=np.int64))

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """For each row of `vectors`, up to `k` (fact id, cosine) pairs, best first."""
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"query vector has dimension {vectors.shape[1]}, the core index has {self.dim}")
        k = min(k, len(self))
        if k <= 0:
            return [[] for _ in range(len(vectors))]
        scores, ids = self.index.search(vectors, k)
        return [
            [(self.fact_of[i], float(s)) for s, i in zip(row_s, row_i) if i >= 0 and i in self.fact_of]
            for row_s, row_i in zip(scores.tolist(), ids.tolist())
        ]

    def vector(self, fact_id: str) -> np.ndarray:
        return self.index.reconstruct(self.faiss_id[fact_id])


def sync_index(index: FactIndex, facts: Sequence[Fact], embedder: Embedder) -> int:
    """Make `index` hold exactly the live facts' current texts; embed only what changed. Returns
    how many texts were embedded."""
    live = {f.id: f for f in facts if f.live}
    index.remove([fid for fid in list(index.faiss_id) if fid not in live])
    stale = [f for f in live.values() if not index.is_current(f)]
    if stale:
        index.add(stale, embedder.embed([f.text for f in stale], role="passage"))
    return len(stale)


@dataclass
class Cached:
    """What a readable cache holds."""

    index: FactIndex
    file_hash: str
    facts: FactTable | None
    """The parsed facts snapshot (None when the cache has none this version can use)."""


class IndexCache:
    """Reads and writes one user's `core.faiss` + `core_state.json`."""

    def __init__(self, folder: Path, embedder: Embedder) -> None:
        self.folder = Path(folder)
        self.model_id = embedder.model_id
        self.dim = int(embedder.dim)

    def load(self) -> Cached | None:
        state_path, index_path = self.folder / STATE_FILE, self.folder / INDEX_FILE
        if not state_path.exists() or not index_path.exists():
            return None
        try:
            state = json.loads(state_path.read_bytes())
            if state.get("version") not in _INDEX_VERSIONS:
                return None
            if state.get("model") != self.model_id or int(state.get("dim", -1)) != self.dim:
                log.info("core cache %s was built with another embedder; rebuilding", self.folder)
                return None
            raw = faiss.read_index(str(index_path))
            loaded = self._index_from(raw, state)
            snapshot = state.get("facts") if state["version"] == CACHE_VERSION else None
            facts = FactTable.from_snapshot(snapshot) if snapshot is not None else None
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            # RuntimeError: faiss's reader on a truncated or foreign file.
            log.warning("core cache in %s is corrupt (%s: %s); rebuilding it", self.folder, type(exc).__name__, exc)
            return None
        return Cached(index=loaded, file_hash=str(state["file_hash"]), facts=facts)

    def _index_from(self, raw: Any, state: Mapping[str, Any]) -> FactIndex:
        if raw.d != self.dim:
            raise ValueError(f"index dimension {raw.d} != embedder dimension {self.dim}")
        index = FactIndex(self.dim)
        # read_index already returns the concrete class; a downcast wrapper would not own the
        # C++ object, which would be freed with `raw`.
        index.index = raw
        if not isinstance(index.index, faiss.IndexIDMap2):
            raise ValueError(f"index is a {type(index.index).__name__}, expected IndexIDMap2")
        entries = state["entries"]
        if state["version"] == 1:
            fact_ids = [str(k) for k in entries]
            faiss_ids = [int(v[0]) for v in entries.values()]
            hashes = [str(v[1]) for v in entries.values()]
        else:
            fact_ids, faiss_ids, hashes = entries["fact"], entries["faiss"], entries["hash"]
        if not len(fact_ids) == len(faiss_ids) == len(hashes):
            raise ValueError("the id map columns differ in length")
        # The two files are written one after the other; a crash between them leaves ids that
        # disagree, which must not be trusted.
        stored_ids = np.sort(faiss.vector_to_array(index.index.id_map))
        if not np.array_equal(stored_ids, np.sort(np.asarray(faiss_ids, dtype=np.int64))):
            raise ValueError("the index ids do not match the state file")
        index.faiss_id = dict(zip(fact_ids, faiss_ids))
        index.embedded_hash = dict(zip(fact_ids, hashes))
        index.fact_of = dict(zip(faiss_ids, fact_ids))
        if not len(index.faiss_id) == len(index.fact_of) == len(fact_ids):
            raise ValueError("the id map repeats an id")
        index.next_id = int(state["next_id"])
        return index

    def save(self, index: FactIndex, *, file_hash: str, facts: Iterable[Fact]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        index_path = self.folder / INDEX_FILE
        atomic_write_bytes(index_path, faiss.serialize_index(index.index).tobytes())
        fact_ids = list(index.faiss_id)
        state = {
            "version": CACHE_VERSION,
            "model": self.model_id,
            "dim": self.dim,
            "file_hash": file_hash,
            "next_id": index.next_id,
            "entries": {
                "fact": fact_ids,
                "faiss": [index.faiss_id[f] for f in fact_ids],
                "hash": [index.embedded_hash[f] for f in fact_ids],
            },
            "facts": to_snapshot(facts),
        }
        atomic_write_text(self.folder / STATE_FILE, json.dumps(state, ensure_ascii=False, separators=(",", ":")))
