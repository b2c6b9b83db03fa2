"""Turn vectors: every row's three vectors (user half, assistant half, whole turn) in an
append-only float16 file, and a FAISS HNSW graph over the whole-turn vectors. The same two pieces
hold the vocabulary's term vectors (one per row, `engine.search.expand`).

The file is the store: candidates found by the graph (or by BM25, or a time range) are re-scored
exactly from it, so the graph only has to find candidates. HNSW (M=32, fp16 storage) is chosen
for scale: at 100,000 and 1,000,000 turns one query costs well under a millisecond with one thread,
against ~5 ms / ~50 ms for an exact scan (bench/bench_search.py measures both and the recall of
the graph against the exact scan); a small user's graph (`EXACT_ROWS`) is not walked but scanned.
Rows are added incrementally; removed rows stay in the graph and
are filtered out, until a compaction rebuilds it from the file (no re-embedding).

FAISS threads: for single queries one OpenMP thread is fastest and leaves the cores to the
embedder; the application sets `faiss.omp_set_num_threads(1)` at start (not done here: importing
a library must not change the process).
"""

from __future__ import annotations

import functools
import json
import logging
import mmap
import os
from pathlib import Path

import numpy as np

from engine.fileio import atomic_write_bytes

log = logging.getLogger(__name__)

HNSW_M = 32
EF_SEARCH = 128
EF_CONSTRUCTION = 40
EXACT_ROWS = 4096
"""Up to this many rows a search scans the graph's own fp16 storage instead of walking the graph:
about as cheap there (one 384-d query, one thread, `bench/bench_search.py --turns`: terms' graph
0.036 against 0.058 ms at 1,000 rows, 0.152 against 0.114 ms at 4,000, 0.743 against 0.159 ms at
20,000; turns' graph 0.156 against 0.176 ms at 4,000), and exact, so a small user's results do not
depend on the order and batches in which rows were added (the files backend and a Postgres
worker's copy add them differently: on LoCoMo conv-43 5 of 178 prompts differed before)."""
KINDS = 3  # user half, assistant half, whole turn
USER, ASSISTANT, TURN = 0, 1, 2


class VectorFile:
    """(rows, kinds, dim) float16, appended to, read through a memory map.

    The file is held open from `open` / `reset` to `close`, and appends and maps go through that
    handle, not the path: a cache folder deleted under a running process (a user clearing
    `.cache/`) then leaves the process reading and appending its own, now unlinked, file until it
    closes, and the next open finds the data missing and rebuilds. By path, an append re-created
    a short file that the next map refused ("mmap length is greater than file size"), so every
    later record and search of that user failed until a restart."""

    def __init__(self, path: Path, dim: int, *, kinds: int = KINDS) -> None:
        self.path = path
        self.dim = dim
        self.kinds = kinds
        self._row_bytes = kinds * dim * 2
        self._map: np.ndarray | None = None
        self._file = _HeldFile(path)
        self.rows = 0

    def open(self, rows: int, *, fewer_ok: bool = False) -> bool:
        """Use the first `rows` rows of the file (a longer file is cut back). False when the file
        holds fewer rows than that (it must then be rebuilt), unless `fewer_ok`: then the rows it
        holds (the owner catches up the rest)."""
        self._map = None
        size = self._file.open()
        if size < rows * self._row_bytes:
            if not fewer_ok:
                return False
            rows = size // self._row_bytes
        if size != rows * self._row_bytes:
            self._file.truncate(rows * self._row_bytes)
        self.rows = rows
        return True

    def reset(self) -> None:
        self._map = None
        self._file.create()
        self.rows = 0

    def close(self) -> None:
        self._map = None
        self._file.close()

    def append(self, vectors: np.ndarray) -> None:
        """Append rows ((n, kinds, dim) float); not fsynced: derived data, checked on open."""
        data = np.ascontiguousarray(vectors, dtype=np.float16).reshape(-1, self.kinds, self.dim)
        self._file.append(data.tobytes())
        self.rows += data.shape[0]
        self._map = None

    def matrix(self) -> np.ndarray:
        if self._map is None or self._map.shape[0] != self.rows:
            if self.rows == 0:
                self._map = np.zeros((0, self.kinds, self.dim), dtype=np.float16)
            else:
                self._map = np.memmap(self._file.handle(), dtype=np.float16, mode="r", shape=(self.rows, self.kinds, self.dim))
        return self._map

    def take(self, rows: np.ndarray, kind: int | np.ndarray | None = None) -> np.ndarray:
        """(len(rows), kinds, dim) float32 for these rows; (len(rows), dim) of one `kind` only
        (or of a kind per row: an array as long as `rows`)."""
        if rows.size == 0:
            shape = (0, self.kinds, self.dim) if kind is None else (0, self.dim)
            return np.zeros(shape, dtype=np.float32)
        matrix = self.matrix()
        if rows.size < 2 or bool(np.all(rows[1:] >= rows[:-1])):
            return _float32(matrix[rows] if kind is None else matrix[rows, kind])
        order = np.argsort(rows, kind="stable")  # sorted reads are friendlier to the page cache
        if isinstance(kind, np.ndarray):
            kind = kind[order]
        got = _float32(matrix[rows[order]] if kind is None else matrix[rows[order], kind])
        out = np.empty_like(got)
        out[order] = got
        return out


class _HeldFile:
    """One derived data file, opened once and then used through its handle (see `VectorFile`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None

    def handle(self):
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a+b")  # noqa: SIM115 - held until close()
        return self._fh

    def open(self) -> int:
        """(Re)open the file at its path, created empty when missing; returns its size."""
        self.close()
        return os.fstat(self.handle().fileno()).st_size

    def create(self) -> None:
        """An empty file at the path (the folder re-created if it was deleted)."""
        self.close()
        self.handle().truncate(0)

    def truncate(self, size: int) -> None:
        self.handle().truncate(size)

    def append(self, data: bytes) -> None:
        fh = self.handle()
        fh.write(data)  # append mode: always at the end
        fh.flush()  # before anything maps it

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


@functools.cache
def _half_table() -> np.ndarray:
    """Every float16 bit pattern's float32 value (256 KB)."""
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


BULK_CAST = 4_000_000
"""Numbers past which `_float32` casts rather than looks up."""


def _float32(halves: np.ndarray) -> np.ndarray:
    """float16 -> float32, exactly numpy's conversion, by table lookup: numpy's own cast runs
    ~1.8 ns per number here and a search converts ~300,000 (0.5 -> 0.28 ms). Past a few million
    numbers (a bulk read: the context vectors of a whole vocabulary) the cast is the faster one
    (16M numbers: table 39 ms, cast 32 ms; at 4M they are even)."""
    if halves.size > BULK_CAST:
        return halves.astype(np.float32)
    return np.take(_half_table(), np.ascontiguousarray(halves).view(np.uint16))


class TextFile:
    """Each row's texts (user, assistant, resolved dates) as JSON lines in an append-only file,
    located by end offsets, so hits are shown without reading the day files. Held open like
    `VectorFile`, for the same reason."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ends = np.zeros(0, dtype=np.int64)
        self._pending: list[int] = []
        self._map: mmap.mmap | None = None
        self._file = _HeldFile(path)

    @property
    def rows(self) -> int:
        return self.ends.size + len(self._pending)

    def _all_ends(self) -> np.ndarray:
        if self._pending:
            self.ends = np.concatenate([self.ends, np.array(self._pending, dtype=np.int64)])
            self._pending = []
        return self.ends

    def open(self, ends: np.ndarray) -> bool:
        self._unmap()
        size = self._file.open()
        need = int(ends[-1]) if ends.size else 0
        if size < need:
            return False
        if size != need:
            self._file.truncate(need)
        self.ends, self._pending = np.asarray(ends, dtype=np.int64), []
        return True

    def reset(self) -> None:
        self._unmap()
        self._file.create()
        self.ends, self._pending = np.zeros(0, dtype=np.int64), []

    def close(self) -> None:
        self._unmap()
        self._file.close()

    def append(self, records: list[list]) -> None:
        end = int(self._pending[-1]) if self._pending else (int(self.ends[-1]) if self.ends.size else 0)
        blobs = []
        for rec in records:
            blob = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
            end += len(blob)
            blobs.append(blob)
            self._pending.append(end)
        self._file.append(b"".join(blobs))

    def get(self, row: int) -> list:
        return self.get_many([row])[0]

    def get_many(self, rows: list[int]) -> list[list]:
        """The records of `rows`, decoded at once (one JSON array): a search shows ~80 of them."""
        if not rows:
            return []
        ends = self._all_ends()
        if self._map is None or len(self._map) < int(ends[max(rows)]):
            # A plain mmap: slicing it gives bytes at once (a numpy memmap makes a view object per
            # slice, a third of a search's cost of showing its ~80 lines).
            self._unmap()
            self._map = mmap.mmap(self._file.handle().fileno(), 0, access=mmap.ACCESS_READ)
        at = np.asarray(rows, dtype=np.int64)
        stops = ends[at].tolist()
        starts = np.where(at > 0, ends[np.maximum(at - 1, 0)], 0).tolist()
        return json.loads(b"[" + b",".join([self._map[a:b] for a, b in zip(starts, stops)]) + b"]")

    def _unmap(self) -> None:
        # Slices of the map are copies, so nothing refers to it: close it now rather than at
        # garbage collection (an open mapping keeps Windows from truncating the file).
        if self._map is not None:
            self._map.close()
            self._map = None

    def all_ends(self) -> np.ndarray:
        return self._all_ends()


class TurnGraph:
    """HNSW over one column of a `VectorFile` (the whole-turn vectors, or the term vectors), saved
    in its own file; graph ids are row numbers. It is written only after enough new rows (it is
    the big part of an index, and a stale one is caught up from the vector file on open)."""

    def __init__(self, dim: int, path: Path, *, column: int = TURN, m: int = HNSW_M) -> None:
        self.dim = dim
        self.path = path
        self.column = column
        self.m = m
        self.index = self._new()
        self.unsaved = 0
        """Rows added since the graph was last read or written."""

    def _new(self):
        import faiss

        index = faiss.IndexHNSWSQ(self.dim, faiss.ScalarQuantizer.QT_fp16, self.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_CONSTRUCTION
        return index

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def add(self, vectors: np.ndarray) -> None:
        if len(vectors):
            self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))
            self.unsaved += len(vectors)

    def reset(self) -> None:
        """Empty, and its file deleted (a stale file must not be read as this graph's later)."""
        self.index = self._new()
        self.unsaved = 0
        self.path.unlink(missing_ok=True)

    def open(self, store: VectorFile) -> None:
        """The saved graph, caught up with `store` (rebuilt from it when missing, unreadable, or
        holding more rows than the store)."""
        if not self._load() or self.size > store.rows:
            self.index = self._new()
        self.unsaved = 0
        self.catch_up(store)

    def catch_up(self, store: VectorFile, *, chunk: int = 20_000) -> int:
        """Add the store's rows the graph does not have yet; returns how many."""
        matrix = store.matrix()
        start = self.size
        for a in range(start, store.rows, chunk):
            self.add(np.asarray(matrix[a : a + chunk, self.column], dtype=np.float32))
        return store.rows - start

    def search(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines), best first; at most k (exactly the best k up to `EXACT_ROWS` rows)."""
        return self.scan(vector, k) if self.size <= EXACT_ROWS else self.walk(vector, k)

    def walk(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """`search` by walking the graph (approximate), whatever its size."""
        import faiss

        return _best(self.index, vector, k, faiss.SearchParametersHNSW(efSearch=max(EF_SEARCH, k)))

    def scan(self, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """`search` by scanning every row of the graph's fp16 storage (exact), whatever its size."""
        import faiss

        index = self.index  # held for the call: its storage is freed with it
        return _best(faiss.downcast_index(index.storage), vector, k, None)

    def scan_among(self, vector: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
        """The `k` of `rows` (sorted, all in the graph) nearest `vector`, by scanning only their
        fp16 vectors in FAISS: a month of turns costs ~0.4 ms where reading them into numpy and
        taking the products cost ~3 ms (the float16 conversion of every number)."""
        import faiss

        if rows.size == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64)
        a, b = int(rows[0]), int(rows[-1]) + 1
        # A time range of an append-only diary is one run of rows: a range test per row, no set.
        selector = faiss.IDSelectorRange(a, b) if b - a == rows.size else faiss.IDSelectorBatch(rows)
        index = self.index  # held for the call: its storage is freed with it
        found, _ = _best(faiss.downcast_index(index.storage), vector, k, faiss.SearchParameters(sel=selector))
        return found

    def save(self, *, force: bool = False) -> None:
        """Write the graph if rows were added: at once with `force`, else after a tenth more rows
        (at least 500)."""
        import faiss

        if self.unsaved and (force or self.unsaved >= max(500, self.size // 10)):
            atomic_write_bytes(self.path, faiss.serialize_index(self.index).tobytes())
            self.unsaved = 0

    def _load(self) -> bool:
        """Read the saved graph; False when missing or unreadable (the caller rebuilds)."""
        import faiss

        if not self.path.is_file():
            return False
        try:
            index = faiss.read_index(str(self.path))  # straight from the file: no copies
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("search: vector graph %s is unreadable (%s); rebuilding it", self.path, exc)
            return False
        if index.d != self.dim:
            return False
        self.index = index
        return True


def _best(index, vector: np.ndarray, k: int, params) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cosines) of one FAISS search of `vector`, best first; at most k."""
    if index.ntotal == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    sims, ids = index.search(np.asarray(vector, dtype=np.float32).reshape(1, -1), min(k, index.ntotal), params=params)
    keep = ids[0] >= 0
    return ids[0][keep].astype(np.int64), sims[0][keep]
