"""One user's derived core-memory cache in `.cache/` (always safe to delete; no pickle anywhere).

- `core.faiss`      the vector index (`index.py`), written with `faiss.serialize_index`;
- `core_state.json` which embedder made it, the content hash of `core_mem.yml` it matches, the
                    row -> (fact id, text hash) map, and a column snapshot of the parsed facts
                    (`table.py`) so that opening an unchanged file skips the YAML parse.

Both the row map and the snapshot are parallel lists, not one object per fact: at 100,000 facts,
decoding a dict per fact (and the garbage collector walking them) was most of the open time.

On open: same file hash and a consistent cache -> used as is. Otherwise the file is parsed and
only the facts whose text hash changed (or that are new) are embedded again. A missing, stale or
corrupt cache is rebuilt with a warning, never an error. Caches of versions 1 and 2 (a flat
`IndexIDMap2`) keep their vectors: they are moved into the graph index, nothing is embedded again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from engine.adapters.embedder import Embedder
from engine.fileio import atomic_write_bytes, atomic_write_text
from engine.stores.core.facts import Fact
from engine.stores.core.index import FactIndex
from engine.stores.core.table import FactTable, to_snapshot

log = logging.getLogger(__name__)

CACHE_VERSION = 3
_READABLE = (1, 2, CACHE_VERSION)
# Versions 1 and 2 stored the snapshot differently (1: one dict per fact) or the index flat (1, 2).
_SNAPSHOT_VERSIONS = (2, CACHE_VERSION)
INDEX_FILE = "core.faiss"
STATE_FILE = "core_state.json"


@dataclass
class Cached:
    """What a readable cache holds."""

    index: FactIndex
    file_hash: str
    facts: FactTable | None
    """The parsed facts snapshot (None when the cache has none this version can use)."""
    old_version: bool = False
    """Written by an older version: worth saving again in the current one."""


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
            if state.get("version") not in _READABLE:
                return None
            if state.get("model") != self.model_id or int(state.get("dim", -1)) != self.dim:
                log.info("core cache %s was built with another embedder; rebuilding", self.folder)
                return None
            raw = faiss.read_index(str(index_path))
            if raw.d != self.dim:
                raise ValueError(f"index dimension {raw.d} != embedder dimension {self.dim}")
            index = _index_v3(raw, state) if state["version"] == CACHE_VERSION else _index_flat(raw, state, self.dim)
            snapshot = state.get("facts") if state["version"] in _SNAPSHOT_VERSIONS else None
            facts = FactTable.from_snapshot(snapshot) if snapshot is not None else None
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            # RuntimeError: faiss's reader on a truncated or foreign file.
            log.warning("core cache in %s is corrupt (%s: %s); rebuilding it", self.folder, type(exc).__name__, exc)
            return None
        return Cached(index=index, file_hash=str(state["file_hash"]), facts=facts,
                      old_version=state["version"] != CACHE_VERSION)

    def save(self, index: FactIndex, *, file_hash: str, facts: Iterable[Fact]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.folder / INDEX_FILE, faiss.serialize_index(index.graph).tobytes())
        state = {
            "version": CACHE_VERSION,
            "model": self.model_id,
            "dim": self.dim,
            "file_hash": file_hash,
            "rows": {
                "fact": index.row_fact,
                "hash": [None if f is None else index.embedded_hash[f] for f in index.row_fact],
            },
            "facts": to_snapshot(facts),
        }
        atomic_write_text(self.folder / STATE_FILE, json.dumps(state, ensure_ascii=False, separators=(",", ":")))


def _index_v3(raw: Any, state: Mapping[str, Any]) -> FactIndex:
    if not isinstance(raw, faiss.IndexHNSWFlat):
        raise ValueError(f"index is a {type(raw).__name__}, expected IndexHNSWFlat")
    rows, hashes = state["rows"]["fact"], state["rows"]["hash"]
    # The two files are written one after the other; a crash between them leaves a row count
    # that disagrees, which must not be trusted.
    if not len(rows) == len(hashes) == raw.ntotal:
        raise ValueError(f"the index has {raw.ntotal} rows, the state file {len(rows)}")
    index = FactIndex(int(raw.d))
    index.graph = raw
    index.graph.hnsw.efSearch = max(index.graph.hnsw.efSearch, 16)
    index.row_fact = [None if f is None else str(f) for f in rows]
    index.fact_row = {f: r for r, f in enumerate(index.row_fact) if f is not None}
    index.embedded_hash = {str(f): str(h) for f, h in zip(rows, hashes) if f is not None}
    if len(index.embedded_hash) != len(index.fact_row) or len(index.fact_row) != sum(f is not None for f in rows):
        raise ValueError("the row map repeats a fact id")
    index._grow(len(rows))
    index._live[: len(rows)] = [f is not None for f in rows]
    index.dead = len(rows) - len(index.fact_row)
    return index


def _index_flat(raw: Any, state: Mapping[str, Any], dim: int) -> FactIndex:
    """A version 1 or 2 cache: an `IndexIDMap2` over a flat index; its vectors move to a graph index."""
    if not isinstance(raw, faiss.IndexIDMap2):
        raise ValueError(f"index is a {type(raw).__name__}, expected IndexIDMap2")
    entries = state["entries"]
    if state["version"] == 1:
        fact_ids = [str(k) for k in entries]
        faiss_ids = [int(v[0]) for v in entries.values()]
        hashes = [str(v[1]) for v in entries.values()]
    else:
        fact_ids, faiss_ids, hashes = entries["fact"], entries["faiss"], entries["hash"]
    if not len(fact_ids) == len(faiss_ids) == len(hashes):
        raise ValueError("the id map columns differ in length")
    stored = faiss.vector_to_array(raw.id_map)
    if not np.array_equal(np.sort(stored), np.sort(np.asarray(faiss_ids, dtype=np.int64))):
        raise ValueError("the index ids do not match the state file")
    by_faiss = {i: (f, h) for f, i, h in zip(fact_ids, faiss_ids, hashes)}
    if len(by_faiss) != len(fact_ids):
        raise ValueError("the id map repeats an id")
    flat = faiss.downcast_index(raw.index)
    n = int(flat.ntotal)
    vectors = faiss.rev_swig_ptr(flat.get_xb(), n * dim).reshape(n, dim).copy() if n else np.zeros((0, dim), np.float32)
    order = [by_faiss[int(i)] for i in stored.tolist()]
    index = FactIndex(dim)
    index.append_rows([f for f, _ in order], [h for _, h in order], vectors)
    return index
