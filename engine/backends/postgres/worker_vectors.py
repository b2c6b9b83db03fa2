"""Search vectors kept in the worker when the database has no pgvector: per-user float32 matrices,
refreshed by the rows' `seq` (only rows changed since the last look are read), least recently
used users evicted past `max_rows` rows in all."""

from __future__ import annotations

import threading
from datetime import datetime
from collections import OrderedDict

import numpy as np
import psycopg


class WorkerVectors:
    """Per-user float32 matrices kept in this worker (no pgvector), refreshed by `seq`."""

    def __init__(self, *, max_rows: int, dim: int) -> None:
        self.max_rows = max_rows
        self.dim = dim
        self._users: OrderedDict[int, UserMatrix] = OrderedDict()
        self._lock = threading.Lock()

    def search(self, conn: psycopg.Connection, owner: int, q: np.ndarray, *, k: int,
               start: datetime | None, end: datetime | None) -> list[tuple[str, float]]:
        with self._lock:
            user = self._users.pop(owner, None) or UserMatrix(self.dim)
            self._users[owner] = user  # most recently used last
        with user.lock:
            user.refresh(conn, owner)
            result = user.top(q, k=k, start=start, end=end)
        self._evict()
        return result

    def _evict(self) -> None:
        with self._lock:
            total = sum(u.n for u in self._users.values())
            while total > self.max_rows and len(self._users) > 1:
                _, old = self._users.popitem(last=False)
                total -= old.n


class UserMatrix:
    """One user's vectors: rows grow by doubling; a forgotten row is masked, compacted later."""

    def __init__(self, dim: int) -> None:
        self.lock = threading.Lock()
        self.dim = dim
        self.n = 0
        self.mat = np.zeros((0, dim), np.float32)
        self.ts = np.zeros(0, np.float64)
        self.alive = np.zeros(0, bool)
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.last_seq = 0

    def refresh(self, conn: psycopg.Connection, owner: int) -> None:
        rows = conn.execute(
            "SELECT turn_id, seq, at, live, vec FROM turn_search WHERE owner_id = %s AND seq > %s ORDER BY seq",
            (owner, self.last_seq)).fetchall()
        for turn_id, seq, at, live, vec in rows:
            old = self.row_of.pop(turn_id, None)
            if old is not None:
                self.alive[old] = False
            if live and vec is not None:
                self._append(turn_id, at.timestamp(), np.frombuffer(vec, dtype="<f4"))
            self.last_seq = max(self.last_seq, seq)
        if self.n > 1024 and self.alive[: self.n].sum() < self.n // 2:
            self._compact()

    def _append(self, turn_id: str, ts: float, v: np.ndarray) -> None:
        if self.n == len(self.mat):
            cap = max(1024, 2 * len(self.mat))
            self.mat = np.resize(self.mat, (cap, self.dim))
            self.ts = np.resize(self.ts, cap)
            self.alive = np.concatenate([self.alive[: self.n], np.zeros(cap - self.n, bool)])
        self.mat[self.n] = v
        self.ts[self.n] = ts
        self.alive[self.n] = True
        self.ids.append(turn_id)
        self.row_of[turn_id] = self.n
        self.n += 1

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        self.mat, self.ts = self.mat[keep].copy(), self.ts[keep].copy()
        self.ids = [self.ids[i] for i in keep]
        self.alive = np.ones(len(keep), bool)
        self.n = len(keep)
        self.row_of = {t: i for i, t in enumerate(self.ids)}

    def top(self, q: np.ndarray, *, k: int, start: datetime | None, end: datetime | None) -> list[tuple[str, float]]:
        mask = self.alive[: self.n].copy()
        if start is not None:
            mask &= self.ts[: self.n] >= start.timestamp()
        if end is not None:
            mask &= self.ts[: self.n] < end.timestamp()
        rows = np.flatnonzero(mask)
        if len(rows) == 0:
            return []
        # One product over all rows (no copy of the matrix), then keep the rows in scope.
        scores = (self.mat[: self.n] @ q)[rows]
        take = min(k, len(rows))
        best = np.argpartition(-scores, take - 1)[:take]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.ids[rows[i]], float(scores[i])) for i in best]
