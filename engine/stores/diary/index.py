"""The derived index of one user's diary: sorted timestamps, where each entry lives, tag vectors.

Kept in memory as numpy arrays and saved to `<user cache>/diary/index.npz` (no pickle: plain
arrays, the manifest as JSON bytes). Each day file is recorded with its size, mtime_ns and sha256:
on open a file whose size and mtime_ns are unchanged is trusted without reading it (that is what
makes opening 1,100 day files take milliseconds); a changed one is re-hashed, and re-parsed only
if its content hash differs. Everything here can be rebuilt from the day files.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.fileio import atomic_write_bytes
from engine.search.grow import Grow
from engine.stores.diary.entry import DiaryEntry

log = logging.getLogger(__name__)

VERSION = 1


@dataclass
class FileInfo:
    name: str
    size: int
    mtime_ns: int
    sha: str
    """sha256 of the content, or "" when only the stat is known (after our own append)."""
    count: int


class DiaryIndex:
    """Entries sorted by (time, file, position); rows point into the day files."""

    def __init__(self, *, model_id: str, dim: int) -> None:
        self.model_id = model_id
        self.dim = dim
        self.files: dict[str, FileInfo] = {}
        self.file_names: list[str] = []  # file number -> name (append-only until compacted)
        self.file_no: dict[str, int] = {}
        self.ts = np.zeros(0, dtype=np.int64)
        self.file = np.zeros(0, dtype=np.int32)
        self.item = np.zeros(0, dtype=np.int32)
        self.tag = np.zeros(0, dtype=np.int32)
        self._ids: np.ndarray | None = np.zeros(0, dtype="S1")
        self._ids_loader = None
        self.tags: list[str] = []
        self.tag_no: dict[str, int] = {}
        # Grown by doubling: 20,000 distinct tags added one by one cost linear time, not quadratic.
        self._tagvec = Grow(np.float32, (dim,))
        self._tag_ok = Grow(np.bool_)
        self._pending: list[tuple[int, int, int, int, str]] = []
        self._id_set: set[str] | None = None
        self.dirty = False

    # -- rows -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.ts.shape[0]) + len(self._pending)

    def tag_id(self, tag: str) -> int:
        n = self.tag_no.get(tag)
        if n is None:
            n = len(self.tags)
            self.tags.append(tag)
            self.tag_no[tag] = n
            self._tagvec.extend(np.zeros((1, self.dim), dtype=np.float32))
            self._tag_ok.append(False)
        return n

    @property
    def tagvec(self) -> np.ndarray:
        return self._tagvec.view

    @property
    def tag_ok(self) -> np.ndarray:
        return self._tag_ok.view

    def _file_id(self, name: str) -> int:
        n = self.file_no.get(name)
        if n is None:
            n = len(self.file_names)
            self.file_names.append(name)
            self.file_no[name] = n
        return n

    def add(self, name: str, entry: DiaryEntry, item: int) -> None:
        """One appended entry; merged into the sorted arrays on the next read."""
        self._pending.append((entry.timestamp, self._file_id(name), item, self.tag_id(entry.tag), entry.id))
        if self._id_set is not None:
            self._id_set.add(entry.id)
        self.dirty = True

    def replace_file(self, info: FileInfo, entries: list[DiaryEntry]) -> None:
        """Drop the rows of `info.name` and index `entries` (its parsed content) instead."""
        self.replace_files([(info, entries)])

    def replace_files(self, files: list[tuple[FileInfo, list[DiaryEntry]]]) -> None:
        """`replace_file` for many files with one sort (a rebuild of 1,100 days sorts once)."""
        if not files:
            return
        self.flush()
        fnos = np.array([self._file_id(info.name) for info, _ in files], dtype=np.int32)
        keep = ~np.isin(self.file, fnos)
        entries = [e for _, es in files for e in es]
        ids = self.ids()[keep]
        new_ids = np.array([e.id.encode("utf-8") for e in entries], dtype="S")
        width = max(ids.dtype.itemsize, new_ids.dtype.itemsize if entries else 1)
        self._set_rows(
            np.concatenate([self.ts[keep], np.array([e.timestamp for e in entries], dtype=np.int64)]),
            np.concatenate([self.file[keep], np.repeat(fnos, [len(es) for _, es in files]).astype(np.int32)]),
            np.concatenate([self.item[keep]] + [np.arange(len(es), dtype=np.int32) for _, es in files]),
            np.concatenate([self.tag[keep], np.array([self.tag_id(e.tag) for e in entries], dtype=np.int32)]),
            np.concatenate([ids.astype(f"S{width}"), new_ids.astype(f"S{width}")]),
        )
        for info, _ in files:
            self.files[info.name] = info
        self._id_set = None
        self.dirty = True

    def remove_file(self, name: str) -> None:
        if name in self.files:
            self.replace_file(FileInfo(name, 0, 0, "", 0), [])
            del self.files[name]

    def _set_rows(self, ts, file, item, tag, ids) -> None:
        order = np.lexsort((item, file, ts))
        self.ts, self.file, self.item, self.tag = ts[order], file[order], item[order], tag[order]
        self._ids, self._ids_loader = ids[order], None

    def flush(self) -> None:
        """Merge pending appends into the sorted arrays (a plain append when they come last)."""
        if not self._pending:
            return
        ts, file, item, tag, ids = zip(*self._pending)
        self._pending = []
        new_ids = np.array([i.encode("utf-8") for i in ids], dtype="S")
        old_ids = self.ids()
        width = max(old_ids.dtype.itemsize, new_ids.dtype.itemsize)
        arrays = (
            np.concatenate([self.ts, np.array(ts, dtype=np.int64)]),
            np.concatenate([self.file, np.array(file, dtype=np.int32)]),
            np.concatenate([self.item, np.array(item, dtype=np.int32)]),
            np.concatenate([self.tag, np.array(tag, dtype=np.int32)]),
            np.concatenate([old_ids.astype(f"S{width}"), new_ids.astype(f"S{width}")]),
        )
        n_old = self.ts.shape[0]
        new_ts = arrays[0][n_old:]
        if (n_old == 0 or new_ts[0] >= self.ts[-1]) and np.all(np.diff(new_ts) >= 0):
            self.ts, self.file, self.item, self.tag = arrays[:4]
            self._ids, self._ids_loader = arrays[4], None
        else:
            self._set_rows(*arrays)

    def ids(self) -> np.ndarray:
        if self._ids is None and self._ids_loader is not None:
            self._ids = self._ids_loader()
            self._ids_loader = None
        assert self._ids is not None
        return self._ids

    def has_id(self, entry_id: str) -> bool:
        if self._id_set is None:
            self.flush()
            self._id_set = {i.decode("utf-8") for i in self.ids().tolist()}
        return entry_id in self._id_set

    def span(self, start: int, stop: int) -> tuple[int, int]:
        """Rows with start <= ts <= stop (both epoch seconds), as a half-open slice."""
        self.flush()
        lo = int(np.searchsorted(self.ts, start, side="left"))
        hi = int(np.searchsorted(self.ts, stop, side="right"))
        return lo, max(lo, hi)

    # -- vectors ------------------------------------------------------------------------------

    def missing_tags(self) -> list[int]:
        return [int(i) for i in np.flatnonzero(~self.tag_ok)]

    def set_vectors(self, tag_ids: list[int], vectors: np.ndarray) -> None:
        self.tagvec[tag_ids] = vectors
        self.tag_ok[tag_ids] = True
        self.dirty = True

    # -- persistence --------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the whole index atomically to `path` (an .npz; the manifest is JSON bytes in it)."""
        self.flush()
        manifest = {
            "version": VERSION,
            "model": self.model_id,
            "dim": self.dim,
            "file_names": self.file_names,
            "files": [[f.name, f.size, f.mtime_ns, f.sha, f.count] for f in self.files.values()],
            "tags": self.tags,
        }
        buf = io.BytesIO()
        np.savez(
            buf,
            manifest=np.frombuffer(json.dumps(manifest, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
            ts=self.ts,
            fileno=self.file,
            item=self.item,
            tag=self.tag,
            ids=self.ids(),
            tagvec=self.tagvec,
            tag_ok=self.tag_ok,
        )
        atomic_write_bytes(path, buf.getvalue())
        self.dirty = False

    @classmethod
    def load(cls, path: Path, *, model_id: str, dim: int) -> "DiaryIndex | None":
        """The saved index, or None when it is missing, unreadable or from another format.
        Tag vectors from another model are dropped (re-embedded), the rest is kept."""
        if not path.is_file():
            return None
        try:
            npz = np.load(path, allow_pickle=False)
            manifest = json.loads(bytes(npz["manifest"]).decode("utf-8"))
            if manifest.get("version") != VERSION:
                return None
            index = cls(model_id=model_id, dim=dim)
            index.file_names = list(manifest["file_names"])
            index.file_no = {n: i for i, n in enumerate(index.file_names)}
            index.files = {f[0]: FileInfo(f[0], int(f[1]), int(f[2]), str(f[3]), int(f[4])) for f in manifest["files"]}
            index.ts, index.file = npz["ts"], npz["fileno"]
            index.item, index.tag = npz["item"], npz["tag"]
            index._ids, index._ids_loader = None, lambda: np.load(path, allow_pickle=False)["ids"]
            index.tags = list(manifest["tags"])
            index.tag_no = {t: i for i, t in enumerate(index.tags)}
            n = len(index.tags)
            if manifest.get("model") == model_id and manifest.get("dim") == dim:
                tagvec, tag_ok = npz["tagvec"], npz["tag_ok"]
            else:
                tagvec, tag_ok = np.zeros((n, dim), dtype=np.float32), np.zeros(n, dtype=bool)
            if tagvec.shape != (n, dim) or tag_ok.shape != (n,):
                raise ValueError("tag arrays disagree")
            index._tagvec, index._tag_ok = Grow(np.float32, (dim,), data=tagvec), Grow(np.bool_, data=tag_ok)
            sizes = {index.ts.shape[0], index.file.shape[0], index.item.shape[0], index.tag.shape[0]}
            if len(sizes) != 1:
                raise ValueError("array shapes disagree")
            if index.tag.size and int(index.tag.max()) >= n:
                raise ValueError("tag numbers out of range")
            if index.file.size and int(index.file.max()) >= len(index.file_names):
                raise ValueError("file numbers out of range")
            return index
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
            # Not deleted here (readers never write); the rebuilt index replaces it when saved.
            log.warning("diary cache %s is unreadable (%s); rebuilding it", path, exc)
            return None
