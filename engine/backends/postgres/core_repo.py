"""The core store's fact repository over PostgreSQL: `reading` / `writing` as `FactRepository` has them.

The core store keeps its logic (extraction, reconciliation, relevance, administration); only where
facts live changes. Each worker keeps a user's facts and their vectors in memory and reloads them
when the user's version in `core_state` moved (any worker's write bumps it). A write is one
database transaction under the user's advisory lock (the lock `PgFacts` takes too): the facts are
re-read if another worker changed them, the core store's `Transaction` applies its changes in
memory, and what differs is written back with the version bump. Two workers extracting facts for
one user are serialised, so the "same text already known" check cannot race: no fact is written
twice. On any error the transaction rolls back and the in-memory copy is dropped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
from psycopg.types.json import Jsonb

from engine.adapters.embedder import Embedder
from engine.stores.core.facts import Fact
from engine.stores.core.index import GUARD_EXACT_MAX, FactIndex, sync_index
from engine.stores.core.pending import PendingTurn, _from_dict, _to_dict
from engine.stores.core.port import View
from engine.stores.core.repo import RepositoryBase
from engine.stores.core.table import FactTable
from engine.stores.core.tx import Transaction
from engine.backends.postgres.connect import Database
from engine.backends.postgres.facts import PgFacts, _lock
from engine.backends.postgres.owners import Owners, split_time


@dataclass(eq=False)
class PgUserFacts:
    """One user's facts as this worker holds them (the fields `Transaction` and `problems` use)."""

    facts: FactTable = field(default_factory=FactTable)
    index: FactIndex | None = None
    pending: list[PendingTurn] = field(default_factory=list)
    version: int = -1
    """The `core_state` version these facts are; -1: not loaded."""
    checked_at: float = float("-inf")
    by_text: dict[str, str] | None = None
    turns: set[str] | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    broken: Any = None
    pending_problem: str | None = None


class PgFactRepository(RepositoryBase):
    """Every user's facts of one character, in the database."""

    def __init__(self, db: Database, character_id: str, embedder: Embedder, tz: ZoneInfo, *,
                 owners: Owners | None = None, check_interval_s: float = 1.0,
                 clock=time.monotonic, guard_exact_max: int = GUARD_EXACT_MAX) -> None:
        super().__init__(embedder, tz, check_interval_s=check_interval_s, clock=clock, guard_exact_max=guard_exact_max)
        self.db = db
        self.owners = owners or Owners(character_id)
        self.facts = PgFacts(db, character_id, owners=self.owners)

    def user(self, user_id: str) -> PgUserFacts:
        return self._users.get(user_id)

    def _new_user(self, user_id: str) -> PgUserFacts:
        return PgUserFacts(index=self._new_index())

    @contextmanager
    def reading(self, user_id: str, *, fresh: bool = False) -> Iterator[View]:
        """The user's facts, checked against the database at most once per interval (`fresh`: now)."""
        user = self.user(user_id)
        with user.lock:
            if fresh or self.clock() - user.checked_at >= self.check_interval_s or user.version < 0:
                with self.db.tx() as conn:
                    owner = self.owners.get(conn, user_id, create=False)
                    self._refresh(conn, owner, user)
            assert user.index is not None
            yield View(user.facts, user.index, user.version)

    @contextmanager
    def writing(self, user_id: str, *, now: datetime) -> Iterator[Transaction]:
        """A transaction over the user's facts and pending turns under the user's database lock."""
        user = self.user(user_id)
        with user.lock:
            with self.reading(user_id, fresh=True):
                pass  # embed what other workers added before the lock is taken
            try:
                with self.db.tx() as conn:
                    owner = self.owners.get(conn, user_id)
                    _lock(conn, owner)  # also bumps the version; ours is the one after it
                    version = self._version(conn, owner)
                    if version != user.version + 1:
                        self._load(conn, owner, user, version - 1)
                    before = {f.id: f for f in user.facts.values()}
                    pending_before = list(user.pending)
                    tx = Transaction(user, now=now, embed=self.embed_passages)
                    yield tx
                    self._write(conn, owner, user, before, tx, pending_before)
                    user.version = version
            except BaseException:
                user.version = -1  # half-applied in memory: read it all again next time
                raise

    def pending(self, user_id: str, *, now: datetime) -> list[PendingTurn]:
        with self.reading(user_id, fresh=True):
            return list(self.user(user_id).pending)

    def rebuild(self, user_id: str) -> int:
        user = self.user(user_id)
        with user.lock:
            user.version = -1
            user.index = self._new_index()
            with self.reading(user_id, fresh=True) as view:
                return sum(1 for f in view.facts.values() if f.live)

    def save_caches(self) -> None:
        """Nothing to save: the database holds the facts, vectors are rebuilt per worker."""

    # ------------------------------------------------------------------ database <-> memory

    def _refresh(self, conn: psycopg.Connection, owner: int | None, user: PgUserFacts) -> None:
        user.checked_at = self.clock()
        version = 0 if owner is None else self._version(conn, owner)
        if version != user.version:
            self._load(conn, owner, user, version)

    @staticmethod
    def _version(conn: psycopg.Connection, owner: int) -> int:
        row = conn.execute("SELECT version FROM core_state WHERE owner_id = %s", (owner,)).fetchone()
        return 0 if row is None else int(row[0])

    def _load(self, conn: psycopg.Connection, owner: int | None, user: PgUserFacts, version: int) -> None:
        facts = [] if owner is None else self.facts._load(conn, owner, include_deleted=True)
        row = None if owner is None else conn.execute(
            "SELECT pending FROM core_state WHERE owner_id = %s", (owner,)).fetchone()
        user.pending = [_from_dict(item) for item in (row[0] if row else [])]
        assert user.index is not None
        self.embedded += sync_index(user.index, facts, self.embedder)
        user.facts = FactTable(facts)
        user.by_text = user.turns = None
        user.version = version

    def _write(self, conn: psycopg.Connection, owner: int, user: PgUserFacts, before: dict[str, Fact],
               tx: Transaction, pending_before: list[PendingTurn]) -> None:
        after = {f.id: f for f in tx.facts.values()}
        with conn.cursor() as cur:
            for fact in after.values():
                if before.get(fact.id) != fact:
                    _upsert(cur, owner, fact)
            gone = [fid for fid in before if fid not in after]
            if gone:
                cur.execute("DELETE FROM facts WHERE owner_id = %s AND fact_id = ANY(%s)", (owner, gone))
        pending = tx.pending
        if pending != pending_before:
            conn.execute("UPDATE core_state SET pending = %s WHERE owner_id = %s",
                         (Jsonb([_to_dict(p) for p in pending]), owner))
            user.pending = list(pending)

    def _new_index(self) -> FactIndex:
        return FactIndex(int(self.embedder.dim), guard_exact_max=self.guard_exact_max)


def _upsert(cur: psycopg.Cursor, owner: int, fact: Fact) -> None:
    learned, l_off = split_time(fact.learned_at, what=f"fact {fact.id!r} learned_at")
    updated, u_off = split_time(fact.updated_at, what=f"fact {fact.id!r} updated_at")
    deleted, d_off = split_time(fact.deleted_at) if fact.deleted_at else (None, None)
    cur.execute(
        "INSERT INTO facts (owner_id, fact_id, text, learned_at, learned_off, updated_at, updated_off, source_turns, "
        "deleted_at, deleted_off) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (owner_id, fact_id) DO "
        "UPDATE SET text = EXCLUDED.text, learned_at = EXCLUDED.learned_at, learned_off = EXCLUDED.learned_off, "
        "updated_at = EXCLUDED.updated_at, updated_off = EXCLUDED.updated_off, source_turns = EXCLUDED.source_turns, "
        "deleted_at = EXCLUDED.deleted_at, deleted_off = EXCLUDED.deleted_off",
        (owner, fact.id, fact.text, learned, l_off, updated, u_off, list(fact.source_turns), deleted, d_off))
    cur.execute("DELETE FROM fact_history WHERE owner_id = %s AND fact_id = %s", (owner, fact.id))
    for n, rev in enumerate(fact.history, start=1):
        until, t_off = split_time(rev.until, what=f"fact {fact.id!r} history")
        cur.execute(
            "INSERT INTO fact_history (owner_id, fact_id, n, text, until, until_off, change, by_turns) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (owner, fact.id, n, rev.text, until, t_off, rev.change, list(rev.by)))
