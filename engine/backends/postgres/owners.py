"""Owners: a (character, user) pair as one bigint, and the time helpers every table shares."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg

from engine.backends.postgres.connect import Database
from engine.errors import EngineError
from engine.paths import validate_id


class NaiveTimeError(EngineError, ValueError):
    """A time without a zone was given where the stored offset must be known."""


class Owners:
    """Maps user ids of one character to owner ids (created on first write), cached per process.

    Ids are validated with the files backend's rules, so every owner can be exported to folders."""

    def __init__(self, character_id: str) -> None:
        self.character_id = validate_id(character_id, kind="character id")
        self._ids: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, conn: psycopg.Connection, user_id: str, *, create: bool = True) -> int | None:
        """The owner id of `user_id`; None if it has none and `create` is False."""
        validate_id(user_id, kind="user id")
        with self._lock:
            cached = self._ids.get(user_id)
        if cached is not None:
            return cached
        row = conn.execute(_SELECT, (self.character_id, user_id)).fetchone()
        if row is None and create:
            # ON CONFLICT: another worker may create the same owner at the same moment (this
            # statement then waits for its commit and does nothing).
            conn.execute(
                "INSERT INTO owners (character_id, user_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (self.character_id, user_id),
            )
            row = conn.execute(_SELECT, (self.character_id, user_id)).fetchone()
        if row is None:
            return None
        owner, ours = row
        if not ours:
            # Cached only once committed: a row this transaction inserted may still roll back, and
            # another thread using its id before the commit would break the foreign keys.
            with self._lock:
                self._ids[user_id] = owner
        return owner

    def rows(self, db: Database, user_id: str, sql: str, *params: Any) -> list[Any]:
        """The rows of one read whose first parameter is the user's owner id; none for a user the
        database has never seen (a read makes no owner)."""
        with db.tx() as conn:
            owner = self.get(conn, user_id, create=False)
            return [] if owner is None else conn.execute(sql, (owner, *params)).fetchall()

    def users(self, conn: psycopg.Connection) -> list[str]:
        rows = conn.execute(
            "SELECT user_id FROM owners WHERE character_id = %s ORDER BY user_id", (self.character_id,)
        ).fetchall()
        return [r[0] for r in rows]


_SELECT = ("SELECT id, coalesce(xmin = pg_current_xact_id_if_assigned()::xid, false) FROM owners "
           "WHERE character_id = %s AND user_id = %s")
"""The owner id, and whether this very transaction inserted the row (not committed yet)."""


def split_time(at: datetime, *, what: str = "time") -> tuple[datetime, int]:
    """(the instant, its UTC offset in seconds): stored apart so the written offset comes back."""
    offset = at.utcoffset()
    if offset is None:
        raise NaiveTimeError(f"{what} must be timezone-aware (got naive {at.isoformat()})")
    return at, int(offset.total_seconds())


def join_time(instant: datetime, offset_s: int) -> datetime:
    """The stored instant shown in the offset it was written with."""
    return instant.astimezone(timezone(timedelta(seconds=offset_s)))
