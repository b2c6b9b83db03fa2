"""The turn search index: one folder in the user's `.cache/` (derived data).

    <cache>/diary/search/meta.npz      rows: ids, times, content digests, live flags; BM25 postings
    <cache>/diary/search/vectors.f16   (rows, 3, dim) float16: user half, assistant half, whole turn
    <cache>/diary/search/graph.faiss   HNSW over the whole-turn vectors
    <cache>/diary/search/terms.*       a vector per BM25 term, for query expansion (`expand.py`)

The rarer terms' context vectors (`contexts.py`) are derived from these in memory, never saved.

No pickle: npz read with allow_pickle=False (the manifest is JSON bytes in it), the graph with
FAISS's own reader. Anything missing, from another model, or inconsistent is discarded and the
owner re-adds its turns (the diary does, from its day files). Rows are append-only; a removed or
edited turn leaves a dead row until `compact` (run when a quarter of the rows are dead).
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from engine.adapters.embedder import Embedder
from engine.fileio import atomic_write_bytes
from engine.search.base import IndexStats, Progress, SearchHit, SearchRequest, Tuning, TurnDoc, line_tokens
from engine.search.contexts import TermContexts
from engine.search.expand import TERM_CHUNK, TermVectors, embed_terms
from engine.search.grow import Grow
from engine.search import rank
from engine.search.lexical import Bm25
from engine.search.text import terms
from engine.search.vectors import KINDS, TURN, TextFile, TurnGraph, VectorFile

log = logging.getLogger(__name__)

VERSION = 1
EMBED_CHUNK = 32
"""Turns per embedding call when indexing (x3 texts: both halves and the whole turn)."""


class FileTurnIndex:
    def __init__(self, folder: Path, embedder: Embedder, *, tuning: Tuning | None = None) -> None:
        self.folder = Path(folder)
        self.embedder = embedder
        self.dim = int(embedder.dim)
        self.tuning = tuning or Tuning()
        self.vectors = VectorFile(self.folder / "vectors.f16", self.dim)
        self.texts = TextFile(self.folder / "texts.jsonl")
        self.graph = TurnGraph(self.dim, self.folder / "graph.faiss")
        self.terms = TermVectors(self.folder, self.dim)
        self.contexts = TermContexts(self.dim)
        self._reset_rows()
        self._unsaved = 0
        if not self._load():
            self._reset_rows()
            self.vectors.reset()
            self.texts.reset()
            self.graph.reset()
            self.terms.reset()

    # -- state ------------------------------------------------------------------------------------

    def _reset_rows(self) -> None:
        self.ids: list[str] = []
        self.digest_of: list[str] = []
        self._row_of: dict[str, int] | None = {}
        self.sync_token = ""
        """Set by the owner when the index matches its source (saved; compared on open)."""
        self.ts = Grow(np.int64)
        self.alive = Grow(np.bool_)
        self.has_text = Grow(np.bool_, (2,))
        self.line_tokens = Grow(np.int32, (2,))
        """Per half, what it costs as a prompt line (`base.line_tokens`; -1: indexed before this
        was kept, counted when shown)."""
        self.bm25 = Bm25()
        self._order = Grow(np.int64)
        self._pos = Grow(np.int64)
        self._order_ok = True
        self.version = 0
        """Changes with every added or removed row (cached collection statistics key on it)."""
        self._live = (-1, 0)
        """(version, live rows) when `_row_of` is not built."""

    @property
    def rows(self) -> int:
        return len(self.ids)

    @property
    def row_of(self) -> dict[str, int]:
        """Live turn id -> row; built on first use after a load (opening stays fast)."""
        if self._row_of is None:
            alive = self.alive.view
            self._row_of = {tid: r for r, tid in enumerate(self.ids) if alive[r]}
        return self._row_of

    def __len__(self) -> int:
        if self._row_of is not None:
            return len(self._row_of)
        # Counted once per version (every change bumps it): a search asks twice per prompt, and
        # summing the flags costs ~0.1 ms per 100,000 rows.
        if self._live[0] != self.version:
            self._live = (self.version, int(self.alive.view.sum()))
        return self._live[1]

    def digests(self) -> dict[str, str]:
        return {tid: self.digest_of[row] for tid, row in self.row_of.items()}

    def stats(self) -> IndexStats:
        return IndexStats(turns=len(self), removed=self.rows - len(self), vectors=f"HNSW{32},SQfp16")

    def order(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows sorted by time, position of each row in that order)."""
        if not self._order_ok:
            order = np.argsort(self.ts.view, kind="stable")
            pos = np.empty_like(order)
            pos[order] = np.arange(order.size)
            self._order, self._pos = Grow(np.int64, data=order), Grow(np.int64, data=pos)
            self._order_ok = True
        return self._order.view, self._pos.view

    # -- writing ----------------------------------------------------------------------------------

    def add(
        self, docs: Sequence[TurnDoc], *, progress: Progress | None = None, vectors: np.ndarray | None = None
    ) -> int:
        """Index these turns (embedding them); a doc whose id is present with the same digest is skipped,
        with another digest it replaces the old one; returns how many were indexed. `vectors` ((len(docs), 3, dim), from `embed`) lets a caller
        embed outside its lock."""
        fresh: dict[str, int] = {}
        for i, doc in enumerate(docs):
            row = self.row_of.get(doc.id)
            if row is not None and self.digest_of[row] == doc.digest:
                continue
            fresh[doc.id] = i
        todo = list(fresh.values())
        for a in range(0, len(todo), EMBED_CHUNK):
            picked = todo[a : a + EMBED_CHUNK]
            chunk = [docs[i] for i in picked]
            self._add_rows(chunk, vectors[picked] if vectors is not None else self.embed(chunk))
            if progress is not None:
                progress(len(chunk))
        if self.rows - len(self) > max(1000, self.rows // 4):
            self.compact()
        return len(todo)

    def embed(self, docs: Sequence[TurnDoc]) -> np.ndarray:
        """(len(docs), 3, dim): each turn's user half, assistant half and whole-turn vectors."""
        texts: list[str] = []
        where: list[tuple[int, int]] = []
        for i, doc in enumerate(docs):
            for kind, text in enumerate((doc.user, doc.assistant, _whole(doc))):
                if text.strip():
                    texts.append(text)
                    where.append((i, kind))
        out = np.zeros((len(docs), KINDS, self.dim), dtype=np.float32)
        if texts:
            vecs = self.embedder.embed(texts, role="passage")
            for (i, kind), vec in zip(where, vecs):
                out[i, kind] = vec
        return out

    def _add_rows(self, docs: Sequence[TurnDoc], vectors: np.ndarray) -> None:
        # The data files first: a crash leaves them longer than the rows, which `open` cuts back.
        self.vectors.append(vectors)
        self.texts.append([[d.user, d.assistant, [list(p) for p in d.dates]] for d in docs])
        self.graph.add(vectors[:, TURN])
        for doc in docs:
            old = self.row_of.get(doc.id)
            if old is not None:
                self.alive.view[old] = False
                self.contexts.forget(np.array([2 * old, 2 * old + 1]))  # the edited line's old words
            row = self.rows
            self.ids.append(doc.id)
            self.digest_of.append(doc.digest)
            self.row_of[doc.id] = row
            self.alive.append(True)
            self.has_text.append((bool(doc.user.strip()), bool(doc.assistant.strip())))
            self.line_tokens.append((line_tokens(doc.user), line_tokens(doc.assistant)))
            self.bm25.add(2 * row, terms(doc.user))
            self.bm25.add(2 * row + 1, terms(doc.assistant))
            if self._order_ok and (len(self.ts) == 0 or doc.ts >= self.ts.view[self._order.view[-1]]):
                self._order.append(row)
                self._pos.append(len(self._order) - 1)
            else:
                self._order_ok = False
            self.ts.append(doc.ts)
        self._unsaved += len(docs)
        self.version += 1

    def terms_behind(self) -> tuple[int, list[str]]:
        """(id of the first, names) of the vocabulary's terms that have no vector yet."""
        first = self.terms.rows
        return first, self.bm25.names[first:]

    def add_term_vectors(self, first: int, vectors: np.ndarray) -> bool:
        """Vectors (`expand.embed_terms`) of the terms from id `first` on, embedded by a caller
        outside its lock; False, and nothing added, when another caller added them first."""
        if first != self.terms.rows or first + len(vectors) > len(self.bm25.names):
            return False
        self.terms.append(vectors)
        return True

    def catch_up_terms(self, *, progress: Progress | None = None, vectors=None) -> int:
        """Embed the vocabulary's terms that have no vector yet (or take them from `vectors`:
        names -> vectors, where another worker stored them), and make the rare terms' context
        vectors, now; returns how many terms were added."""
        vectors = vectors or (lambda names: embed_terms(self.embedder, names))
        first, names = self.terms_behind()
        for a in range(0, len(names), TERM_CHUNK):
            chunk = names[a : a + TERM_CHUNK]
            self.add_term_vectors(first + a, vectors(chunk))
            if progress is not None:
                progress(len(chunk))
        self.contexts.refresh(self)
        return len(names)

    def remove(self, turn_ids: Iterable[str]) -> int:
        gone: list[int] = []
        for tid in turn_ids:
            row = self.row_of.pop(tid, None)
            if row is not None:
                self.alive.view[row] = False
                gone += [2 * row, 2 * row + 1]
        self.contexts.forget(np.array(gone, dtype=np.int64))
        n = len(gone) // 2
        self._unsaved += n
        self.version += 1
        return n

    def compact(self) -> None:
        """Drop dead rows: renumber, rewrite the vector file, rebuild BM25 and the graph (from the
        stored vectors and the indexed terms; nothing is re-embedded)."""
        keep = np.flatnonzero(self.alive.view)
        log.info("search: compacting %s (%d of %d rows live)", self.folder, keep.size, self.rows)
        old_vectors = self.vectors.take(keep) if keep.size else np.zeros((0, KINDS, self.dim), np.float32)
        alive_units = np.repeat(self.alive.view, 2)
        self.bm25.merge(alive_units)
        remap = np.full(self.rows, -1, dtype=np.int64)
        remap[keep] = np.arange(keep.size)
        bm = self.bm25
        unit_map = np.full(2 * self.rows, -1, dtype=np.int64)
        unit_map[2 * keep] = 2 * remap[keep]
        unit_map[2 * keep + 1] = 2 * remap[keep] + 1
        bm.post_unit = unit_map[bm.post_unit].astype(np.int32)
        bm.length = Grow(np.int32, data=bm.length.view.reshape(-1, 2)[keep].reshape(-1))
        ids = [self.ids[r] for r in keep.tolist()]
        digests = [self.digest_of[r] for r in keep.tolist()]
        records = [self.texts.get(r) for r in keep.tolist()]
        ts, has_text, costs = self.ts.view[keep], self.has_text.view[keep], self.line_tokens.view[keep]
        self.ids, self.digest_of = ids, digests
        self._row_of = {tid: i for i, tid in enumerate(ids)}
        self.ts, self.alive = Grow(np.int64, data=ts), Grow(np.bool_, data=np.ones(keep.size, dtype=bool))
        self.has_text = Grow(np.bool_, (2,), data=has_text)
        self.line_tokens = Grow(np.int32, (2,), data=costs)
        self._order_ok = False
        self.version += 1
        self.contexts.renumber(unit_map)
        self.vectors.reset()
        self.vectors.append(old_vectors)
        self.texts.reset()
        self.texts.append(records)
        self.graph.reset()
        self.graph.catch_up(self.vectors)
        self._unsaved = max(1, self.rows)
        self.save()

    # -- reading ----------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> list[SearchHit]:
        return rank.search(self, request)

    # -- persistence ------------------------------------------------------------------------------

    def save(self, *, force: bool = False) -> None:
        """Write what changed. The graph is written only after enough new rows (it is the big
        part, and a stale one is caught up from the vector file on open)."""
        try:
            if self._unsaved or force:
                self._save_meta()
                self._unsaved = 0
            self.graph.save(force=force)
            self.terms.graph.save(force=force)
        except OSError as exc:
            log.warning("search: cannot save the index in %s (%s)", self.folder, exc)

    def _save_meta(self) -> None:
        manifest = {
            "version": VERSION, "model": self.embedder.model_id, "dim": self.dim, "rows": self.rows,
            "sync": self.sync_token,
        }
        arrays = {
            "manifest": np.frombuffer(json.dumps(manifest).encode("utf-8"), dtype=np.uint8),
            "ids": np.frombuffer("\n".join(self.ids).encode("utf-8"), dtype=np.uint8),
            "digests": np.array(self.digest_of, dtype="S16") if self.ids else np.zeros(0, dtype="S16"),
            "ts": self.ts.view,
            "alive": self.alive.view,
            "has_text": self.has_text.view,
            "line_tokens": self.line_tokens.view,
            "text_ends": self.texts.all_ends(),
            **self.bm25.arrays(),
        }
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        atomic_write_bytes(self.folder / "meta.npz", buf.getvalue())

    def _load(self) -> bool:
        path = self.folder / "meta.npz"
        if not path.is_file():
            return False
        try:
            with np.load(path, allow_pickle=False) as npz:
                manifest = json.loads(bytes(npz["manifest"]).decode("utf-8"))
                if manifest.get("version") != VERSION or manifest.get("model") != self.embedder.model_id:
                    raise ValueError("made by another version or model")
                if manifest.get("dim") != self.dim:
                    raise ValueError("another vector size")
                rows = int(manifest["rows"])
                sync = str(manifest.get("sync", ""))
                text = bytes(npz["ids"]).decode("utf-8")
                ids = text.split("\n") if rows else []
                digests = _Lazy(npz["digests"])
                ts, alive, has_text = npz["ts"], npz["alive"], npz["has_text"]
                # An index saved before line costs were kept: they are counted when shown.
                costs = npz["line_tokens"] if "line_tokens" in npz.files else np.full((rows, 2), -1, np.int32)
                text_ends = npz["text_ends"]
                bm25 = Bm25.from_arrays(npz)
            if not (len(ids) == len(digests) == ts.size == alive.size == has_text.shape[0] == costs.shape[0]
                    == text_ends.size == rows):
                raise ValueError("row arrays disagree")
            if len(bm25.length) != 2 * rows:
                raise ValueError("BM25 rows disagree")
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            log.warning("search: index %s is unusable (%s); rebuilding it", path, exc)
            return False
        if not self.vectors.open(rows) or not self.texts.open(text_ends):
            log.warning("search: data files in %s are short; rebuilding the index", self.folder)
            return False
        self.ids, self.digest_of = ids, digests
        self.ts, self.alive = Grow(np.int64, data=ts), Grow(np.bool_, data=alive)
        self.has_text = Grow(np.bool_, (2,), data=has_text)
        self.line_tokens = Grow(np.int32, (2,), data=costs)
        self._row_of = None
        self.sync_token = sync
        self.bm25 = bm25
        self._order_ok = False
        self.version += 1
        self.graph.open(self.vectors)
        self.terms.open(len(bm25.names))
        return True

    def records(self, rows: list[int]) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
        """(user, assistant, dates) of each row, read at once."""
        return [(user, assistant, tuple((str(a), str(b)) for a, b in dates))
                for user, assistant, dates in self.texts.get_many(rows)]

    def close(self) -> None:
        """Let go of the data files (saving is the owner's: `save`)."""
        self.vectors.close()
        self.texts.close()
        self.terms.close()

    def clear(self) -> None:
        """Delete everything (the owner re-adds its turns)."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        self._reset_rows()
        self.vectors.reset()
        self.texts.reset()
        self.graph.reset()
        self.terms.reset()
        self.contexts.clear()


class _Lazy(list):
    """The digests as loaded (bytes, decoded when read): decoding 100k strings at open costs
    more than the few lookups most sessions make."""

    def __init__(self, raw: np.ndarray) -> None:
        super().__init__(raw.tolist())

    def __getitem__(self, i):
        v = super().__getitem__(i)
        return v.decode("ascii") if isinstance(v, bytes) else v

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _whole(doc: TurnDoc) -> str:
    if doc.user.strip() and doc.assistant.strip():
        return f"{doc.user}\n{doc.assistant}"
    return doc.user if doc.user.strip() else doc.assistant
