"""Core facts with their history in PostgreSQL; every change is one transaction.

In and out are the files backend's own types (`engine.stores.core.facts.Fact` / `Revision`), so
the core store can keep its logic and swap where facts live. A user's fact writes take a
per-user advisory lock until commit: two workers (or two processes) adding, updating or deleting
facts of one user are serialised, nothing is lost, and the "same text already known" check
cannot race (no fact is written twice).

History rows remember the turn that caused a change (`by_turn`), so `forget_turn` (regenerate)
can revert exactly what that turn did.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import psycopg

from engine.errors import EngineError
from engine.backends.postgres.connect import Database
from engine.backends.postgres.owners import Owners, join_time, split_time
from engine.stores.core.facts import Fact, Revision, new_fact_id, normalise_text

_FACTS_LOCK = 2


class FactMissingError(EngineError, KeyError):
    """No live fact with this id for this user."""

    def __str__(self) -> str:
        return str(self.args[0])


def _lock(conn: psycopg.Connection, owner: int) -> None:
    """The user's fact-write lock until commit; the write bumps the user's version, so workers
    that keep the facts in memory reload them."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (int(owner) * 8 + _FACTS_LOCK,))
    conn.execute("INSERT INTO core_state (owner_id, version) VALUES (%s, 1) "
                 "ON CONFLICT (owner_id) DO UPDATE SET version = core_state.version + 1", (owner,))


_FACT_COLUMNS = ("fact_id, text, learned_at, learned_off, updated_at, updated_off, source_turns, deleted_at, "
                 "deleted_off")


class PgFacts:
    """The core facts of one character's users."""

    def __init__(self, db: Database, character_id: str, *, owners: Owners | None = None) -> None:
        self.db = db
        self.owners = owners or Owners(character_id)

    # -- reading ----------------------------------------------------------------------------

    def list(self, user_id: str, *, include_deleted: bool = False) -> list[Fact]:
        """The user's facts in the order they were first learned, with their history."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            return [] if owner is None else self._load(conn, owner, include_deleted=include_deleted)

    def get(self, user_id: str, fact_id: str) -> Fact | None:
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return None
            found = self._load(conn, owner, include_deleted=True, fact_id=fact_id)
            return found[0] if found else None

    def _load(self, conn: psycopg.Connection, owner: int, *, include_deleted: bool,
              fact_id: str | None = None) -> list[Fact]:
        where = "owner_id = %s" + ("" if include_deleted else " AND deleted_at IS NULL")
        params: tuple = (owner,)
        if fact_id is not None:
            where += " AND fact_id = %s"
            params += (fact_id,)
        rows = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE {where} ORDER BY pos", params).fetchall()
        history: dict[str, list[Revision]] = {}
        hist_where = "owner_id = %s" + (" AND fact_id = %s" if fact_id is not None else "")
        for fid, text, until, off, change, by in conn.execute(
            f"SELECT fact_id, text, until, until_off, change, by_turns FROM fact_history WHERE {hist_where} "
            "ORDER BY fact_id, n", params,
        ):
            history.setdefault(fid, []).append(Revision(text=text, until=join_time(until, off), change=change,
                                                        by=tuple(by)))
        return [_fact(row, history.get(row[0], ())) for row in rows]

    # -- writing ----------------------------------------------------------------------------

    def add(self, user_id: str, text: str, *, at: datetime, source_turns: Sequence[str] = (),
            dedupe: bool = True) -> tuple[Fact, bool]:
        """Add a fact; (fact, True) when new. With `dedupe`, a live fact with the same normalised
        text gets the sources merged instead and comes back with False (a replayed turn)."""
        at_, off = split_time(at, what="fact time")
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            _lock(conn, owner)
            if dedupe:
                same = self._same_text(conn, owner, text)
                if same is not None:
                    merged = list(dict.fromkeys([*same[1], *source_turns]))
                    conn.execute("UPDATE facts SET source_turns = %s WHERE owner_id = %s AND fact_id = %s",
                                 (merged, owner, same[0]))
                    return self._load(conn, owner, include_deleted=True, fact_id=same[0])[0], False
            taken = _TakenIds(conn, owner)
            fact_id = new_fact_id(taken)
            conn.execute(
                "INSERT INTO facts (owner_id, fact_id, text, learned_at, learned_off, updated_at, updated_off, source_turns) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (owner, fact_id, text, at_, off, at_, off, list(source_turns)),
            )
            return Fact(id=fact_id, text=text, learned_at=at, updated_at=at, source_turns=tuple(source_turns)), True

    def update(self, user_id: str, fact_id: str, text: str, *, at: datetime, by_turn: str | None = None) -> Fact:
        """Replace a live fact's text; the old text goes to its history."""
        at_, off = split_time(at, what="update time")
        with self.db.tx() as conn:
            owner = self._owner_locked(conn, user_id)
            old = self._live_row(conn, owner, fact_id)
            self._push_history(conn, owner, fact_id, old[0], at_, off, "update", by_turn)
            sources = list(old[1]) + ([by_turn] if by_turn and by_turn not in old[1] else [])
            conn.execute("UPDATE facts SET text = %s, updated_at = %s, updated_off = %s, source_turns = %s "
                         "WHERE owner_id = %s AND fact_id = %s", (text, at_, off, sources, owner, fact_id))
            return self._load(conn, owner, include_deleted=True, fact_id=fact_id)[0]

    def delete(self, user_id: str, fact_id: str, *, at: datetime, by_turn: str | None = None) -> Fact:
        """Soft-delete a live fact (kept with its history)."""
        at_, off = split_time(at, what="delete time")
        with self.db.tx() as conn:
            owner = self._owner_locked(conn, user_id)
            old = self._live_row(conn, owner, fact_id)
            self._push_history(conn, owner, fact_id, old[0], at_, off, "delete", by_turn)
            conn.execute("UPDATE facts SET deleted_at = %s, deleted_off = %s WHERE owner_id = %s AND fact_id = %s",
                         (at_, off, owner, fact_id))
            return self._load(conn, owner, include_deleted=True, fact_id=fact_id)[0]

    def forget_turn(self, user_id: str, turn_id: str, *, at: datetime) -> int:
        """Undo what one turn did (regenerate): facts whose only source is the turn are deleted,
        updates and deletes it made are reverted to the text before it. Returns how many facts
        changed; the history keeps every step."""
        at_, off = split_time(at, what="forget time")
        changed = 0
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return 0
            _lock(conn, owner)
            # Facts only this turn taught are deleted (whatever else it did to them).
            gone: set[str] = set()
            for fid, text in conn.execute(
                "SELECT fact_id, text FROM facts WHERE owner_id = %s AND deleted_at IS NULL "
                "AND source_turns = ARRAY[%s]::text[]", (owner, turn_id)).fetchall():
                self._push_history(conn, owner, fid, text, at_, off, "delete", None)
                conn.execute("UPDATE facts SET deleted_at = %s, deleted_off = %s WHERE owner_id = %s AND fact_id = %s",
                             (at_, off, owner, fid))
                gone.add(fid)
            # Updates and deletes it made to other facts: back to the text before its first change.
            for fid, text in conn.execute(
                "SELECT DISTINCT ON (fact_id) fact_id, text FROM fact_history WHERE owner_id = %s AND by_turn = %s "
                "ORDER BY fact_id, n", (owner, turn_id)).fetchall():
                if fid in gone:
                    continue
                current, deleted = conn.execute("SELECT text, deleted_at FROM facts WHERE owner_id = %s AND fact_id = %s",
                                                (owner, fid)).fetchone()
                if current == text and deleted is None:
                    continue  # already reverted (forget_turn is idempotent)
                self._push_history(conn, owner, fid, current, at_, off, "update", None)
                conn.execute("UPDATE facts SET text = %s, deleted_at = NULL, deleted_off = NULL, updated_at = %s, "
                             "updated_off = %s, source_turns = array_remove(source_turns, %s) "
                             "WHERE owner_id = %s AND fact_id = %s", (text, at_, off, turn_id, owner, fid))
                changed += 1
            changed += len(gone)
            conn.execute("UPDATE facts SET source_turns = array_remove(source_turns, %s) "
                         "WHERE owner_id = %s AND %s = ANY(source_turns) AND cardinality(source_turns) > 1",
                         (turn_id, owner, turn_id))
        return changed

    def put(self, user_id: str, facts: Iterable[Fact]) -> int:
        """Write facts exactly as given (id, times, sources, history, deletion): imports.
        A fact id already present is left alone (idempotent). Returns how many were new."""
        added = 0
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            _lock(conn, owner)
            with conn.cursor() as cur:
                for fact in facts:
                    learned, l_off = split_time(fact.learned_at, what=f"fact {fact.id!r} learned_at")
                    updated, u_off = split_time(fact.updated_at, what=f"fact {fact.id!r} updated_at")
                    deleted, d_off = (split_time(fact.deleted_at) if fact.deleted_at else (None, None))
                    cur.execute(
                        "INSERT INTO facts (owner_id, fact_id, text, learned_at, learned_off, updated_at, updated_off, "
                        "source_turns, deleted_at, deleted_off) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                        "ON CONFLICT (owner_id, fact_id) DO NOTHING",
                        (owner, fact.id, fact.text, learned, l_off, updated, u_off, list(fact.source_turns), deleted, d_off))
                    if cur.rowcount == 0:
                        continue
                    added += 1
                    for n, rev in enumerate(fact.history, start=1):
                        until, t_off = split_time(rev.until, what=f"fact {fact.id!r} history")
                        cur.execute("INSERT INTO fact_history (owner_id, fact_id, n, text, until, until_off, change, "
                                    "by_turns) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                                    (owner, fact.id, n, rev.text, until, t_off, rev.change, list(rev.by)))
        return added

    # -- helpers ------------------------------------------------------------------------------

    def _owner_locked(self, conn: psycopg.Connection, user_id: str) -> int:
        owner = self.owners.get(conn, user_id, create=False)
        if owner is None:
            raise FactMissingError(f"user {user_id!r} has no facts")
        _lock(conn, owner)
        return owner

    @staticmethod
    def _live_row(conn: psycopg.Connection, owner: int, fact_id: str) -> tuple[str, list[str]]:
        row = conn.execute("SELECT text, source_turns FROM facts WHERE owner_id = %s AND fact_id = %s "
                           "AND deleted_at IS NULL", (owner, fact_id)).fetchone()
        if row is None:
            raise FactMissingError(f"no live fact {fact_id!r}")
        return row[0], row[1]

    @staticmethod
    def _same_text(conn: psycopg.Connection, owner: int, text: str) -> tuple[str, list[str]] | None:
        want = normalise_text(text)
        # Exact text first (cheap, indexed by owner); the normalised comparison covers punctuation.
        for fid, existing, sources in conn.execute(
            "SELECT fact_id, text, source_turns FROM facts WHERE owner_id = %s AND deleted_at IS NULL", (owner,)):
            if normalise_text(existing) == want:
                return fid, sources
        return None

    @staticmethod
    def _push_history(conn: psycopg.Connection, owner: int, fact_id: str, text: str, until: datetime, off: int,
                      change: str, by_turn: str | None) -> None:
        conn.execute(
            "INSERT INTO fact_history (owner_id, fact_id, n, text, until, until_off, change, by_turn, by_turns) "
            "SELECT %s, %s, coalesce(max(n), 0) + 1, %s, %s, %s, %s, %s, %s FROM fact_history "
            "WHERE owner_id = %s AND fact_id = %s",
            (owner, fact_id, text, until, off, change, by_turn, [by_turn] if by_turn else [], owner, fact_id))


class _TakenIds:
    """`in` for new_fact_id: asks the table (ids are random; a clash is rare)."""

    def __init__(self, conn: psycopg.Connection, owner: int) -> None:
        self.conn, self.owner = conn, owner

    def __contains__(self, fact_id: object) -> bool:
        return self.conn.execute("SELECT 1 FROM facts WHERE owner_id = %s AND fact_id = %s",
                                 (self.owner, fact_id)).fetchone() is not None


def _fact(row: Sequence, history: Sequence[Revision]) -> Fact:
    fid, text, learned, l_off, updated, u_off, sources, deleted, d_off = row
    return Fact(id=fid, text=text, learned_at=join_time(learned, l_off), updated_at=join_time(updated, u_off),
                source_turns=tuple(sources), history=tuple(history),
                deleted_at=join_time(deleted, d_off) if deleted is not None else None)
