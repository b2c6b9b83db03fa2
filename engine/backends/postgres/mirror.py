"""Each worker's copy of a user's turn search index, fed from `turn_search`: the prompt's search
runs the files backend's own ranking code over the database's rows.

Why a copy: the diary's ranking (per-line and per-turn vectors and BM25 with the shared word
segmentation, reciprocal-rank fusion, neighbour smoothing within a conversation, the side bonus,
the relevance gate, near-duplicate skipping) lives in `engine.search` (`FileTurnIndex` +
`engine.search.rank`). Re-writing it in SQL would drift from it; running that very code over
the rows of the database gives the files backend's recall (bench/bench_recall.py
`--storage postgres`) and follows every change made there.

The copy is derived data in the worker's own cache folder
(`<data>/agents/<character>/users/<user>/.cache/pg-search/`), saved with the database instance
and the last `seq` it holds. A query first fetches the rows changed since then (every add, edit
and forget bumps `seq`, and one user's changes commit in `seq` order, see
`search.lock_owner_index`), so a turn recorded through another worker is found on the next
message. A worker that starts empty builds the copy on the user's first query from the stored
vectors (no embedding; only rows written without their per-half vectors are embedded here).
There is no other ranking to fall back on while a copy is built (the rows are caught up before a
search ranks); a build that outlasts the prompt's time limit for the diary leaves that prompt
without diary lines (named in its diagnostics) and goes on; `kioku db index` or `reindex` builds
the copies ahead. The words' vectors for query expansion come from the database too
(`terms.py`: the worker that writes a turn stores its new words' vectors), taken before the search
ranks, and the rare words' context vectors are made then, so a fresh worker ranks as a warm one
does; only words the database has no vector for (turns written before schema v4) are embedded in
a background thread, and are not offered until then.
At most `max_users` copies stay open per worker (least recently used closed first; their files
stay, so reopening one only catches up).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from engine.adapters.embedder import Embedder
from engine.paths import CharacterPaths
from engine.search.base import SearchHit, SearchRequest, TurnDoc
from engine.search.claim import FolderClaim
from engine.search.expand import BackgroundTerms
from engine.search.files import FileTurnIndex
from engine.backends.postgres.search import PgTurnSearch
from engine.backends.postgres.terms import PgTermVectors

log = logging.getLogger(__name__)

FETCH = 5_000
"""Rows per round trip while catching up (bounds memory on a first build of a large user)."""



def turn_vectors(embed: Callable[[list[str]], np.ndarray], pairs: Sequence[tuple[str, str]], *, dim: int) -> np.ndarray:
    """(n, 3, dim) passage vectors of (user, assistant) pairs: user line, assistant line, whole
    turn; zeros for an empty line. The same texts `FileTurnIndex.embed` embeds, in one call of
    `embed` (texts -> L2-normalised passage vectors)."""
    texts: list[str] = []
    where: list[tuple[int, int]] = []
    for i, (user, assistant) in enumerate(pairs):
        if user.strip() and assistant.strip():
            whole = f"{user}\n{assistant}"
        else:
            whole = user if user.strip() else assistant
        for kind, text in enumerate((user, assistant, whole)):
            if text.strip():
                texts.append(text)
                where.append((i, kind))
    out = np.zeros((len(pairs), 3, int(dim)), dtype=np.float32)
    if texts:
        for (i, kind), vec in zip(where, embed(texts)):
            out[i, kind] = vec
    return out


class _Copy:
    """One user's index in this worker."""

    def __init__(self, folder: Path, embedder: Embedder, words: PgTermVectors) -> None:
        self.lock = threading.Lock()
        # Another worker process on this host with the same data folder keeps its own copy.
        self.claim = FolderClaim(folder, owner_lock=folder.parent / f".lock-{folder.name}")
        self.index = FileTurnIndex(self.claim.path, embedder)
        self.terms = BackgroundTerms(self.index, self.lock, folder.parent.name, vectors=words.vectors)
        """Words the database has no vector for yet are embedded (and stored) here, off the search."""

    def close(self) -> None:
        self.terms.stop()
        with self.lock:
            self.index.save(force=True)
            self.index.close()
            self.claim.release()


class PgSearchMirror:
    """The worker's copies of its users' search indexes, for one character."""

    def __init__(self, search: PgTurnSearch, embedder: Embedder, paths: CharacterPaths, *, max_users: int = 32) -> None:
        self.pg = search
        self.embedder = embedder
        self.words = PgTermVectors(search.db, embedder)
        self.paths = paths
        self.max_users = max_users
        self._open: OrderedDict[str, _Copy] = OrderedDict()
        self._lock = threading.Lock()
        self._instance: str | None = None

    def search(self, user_id: str, request: SearchRequest) -> list[SearchHit]:
        """The files backend's ranking over the user's turns as the database holds them now."""
        copy = self._copy(user_id)
        with copy.lock:
            self._catch_up(copy.index, user_id)
            if self.words.fill(copy.index.terms_behind, copy.index.add_term_vectors):
                copy.index.contexts.refresh(copy.index)  # no embedding: derived from the vectors
            copy.terms.start()
            return copy.index.search(request)

    def catch_up(self, user_id: str) -> int:
        """Bring this worker's copy of the user up to date now, term vectors included (`reindex`,
        or a caller that wants every search to see the same index); returns the terms embedded."""
        copy = self._copy(user_id)
        copy.terms.wait()  # else both would embed the same terms
        with copy.lock:
            self._catch_up(copy.index, user_id)
            done = copy.index.catch_up_terms(vectors=self.words.vectors)
            copy.index.save(force=True)
            return done

    def _instance_of(self, conn) -> str:
        if self._instance is None:
            self._instance = conn.execute("SELECT value FROM kioku_meta WHERE key = 'instance'").fetchone()[0]
        return self._instance

    def close(self) -> None:
        with self._lock:
            copies = list(self._open.values())
            self._open.clear()
        for copy in copies:
            copy.close()

    # -- helpers --------------------------------------------------------------------------------

    def _copy(self, user_id: str) -> _Copy:
        evicted = []
        with self._lock:
            copy = self._open.pop(user_id, None)
            if copy is None:
                copy = _Copy(self.paths.user(user_id).cache / "pg-search", self.embedder, self.words)
            self._open[user_id] = copy
            while len(self._open) > self.max_users:
                evicted.append(self._open.popitem(last=False)[1])
        for old in evicted:
            old.close()
        return copy

    def _catch_up(self, index: FileTurnIndex, user_id: str) -> None:
        pg = self.pg
        column = "s.embedding" if pg.pgvector else "s.vec"
        with pg.db.tx() as conn:
            owner = pg.owners.get(conn, user_id, create=False)
            prefix = f"{self._instance_of(conn)}:{owner}:"
            if not index.sync_token.startswith(prefix):
                if index.rows:  # made from another database (or user): start again
                    index.clear()
                index.sync_token = prefix + "0"
            if owner is None:
                return
            pg._register(conn)
            last = int(index.sync_token[len(prefix):])
            start = last
            while True:
                rows = conn.execute(
                    f"SELECT s.turn_id, s.seq, s.live, d.at, d.user_text, d.assistant_text, d.resolved_dates, "
                    f"s.halves, {column} FROM turn_search s JOIN diary_turns d USING (owner_id, turn_id) "
                    f"WHERE s.owner_id = %s AND s.seq > %s ORDER BY s.seq LIMIT %s", (owner, last, FETCH)).fetchall()
                if not rows:
                    break
                self._apply(index, rows)
                last = rows[-1][1]
                index.sync_token = f"{prefix}{last}"
                if len(rows) < FETCH:
                    break
        if last != start:
            index.save()

    def _apply(self, index: FileTurnIndex, rows: list) -> None:
        """Rows in `seq` order: live ones (re-)added, others removed, keeping the order of changes."""
        pending: list[tuple[TurnDoc, np.ndarray | None]] = []
        ids: set[str] = set()

        def flush() -> None:
            stored = [(d, v) for d, v in pending if v is not None]
            if stored:
                index.add([d for d, _ in stored], vectors=np.stack([v for _, v in stored]))
            embed = [d for d, v in pending if v is None]
            if embed:  # written without per-half vectors: embedded here, as the files index does
                index.add(embed)
            pending.clear()
            ids.clear()

        for turn_id, _seq, live, at, user, assistant, resolved, halves, whole in rows:
            if not live:
                flush()
                index.remove([turn_id])
                continue
            if isinstance(resolved, str):
                resolved = json.loads(resolved)
            dates = tuple((str(d.get("text", "")), str(d.get("date", ""))) for d in resolved or ())
            doc = TurnDoc(turn_id, int(at.timestamp()), user, assistant, dates)
            if turn_id in ids:
                flush()
            ids.add(turn_id)
            pending.append((doc, _vectors(halves, whole, index.dim)))
        flush()


def _vectors(halves: bytes | None, whole, dim: int) -> np.ndarray | None:
    if halves is None or whole is None:
        return None
    out = np.empty((3, dim), dtype=np.float32)
    out[:2] = np.frombuffer(halves, dtype="<f2").reshape(2, dim)
    out[2] = np.frombuffer(whole, dtype="<f4") if isinstance(whole, (bytes, bytearray, memoryview)) else np.asarray(
        whole.to_numpy() if hasattr(whole, "to_numpy") else whole, dtype=np.float32)
    return out
