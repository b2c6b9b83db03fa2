"""Diary turns in PostgreSQL: append idempotently by turn id, range by time, forget, edit.

The time-range lookup is an index range scan on `(owner_id, at)` over live turns
(`diary_turns_by_time`); `explain_range` shows the plan. Forgetting a turn marks it deleted (the
row stays, so a replayed record of the same turn id does not bring it back) and drops it from the
search index in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

from psycopg.types.json import Jsonb

from engine.backends.postgres.connect import Database
from engine.backends.postgres.owners import Owners, join_time, split_time
from engine.backends.postgres.search import tombstone
from engine.stores.diary.entry import DiaryEntry


@dataclass(frozen=True)
class StoredTurn:
    """One diary turn as the Postgres backend keeps it."""

    id: str
    """The turn id (unique per user)."""
    at: datetime
    """Aware; read back in the UTC offset it was written with."""
    user: str
    assistant: str
    tag: str = ""
    chat_id: str = "default"
    resolved_dates: tuple[Mapping[str, Any], ...] = field(default=())
    """The absolute dates of the relative time expressions in the turn (JSON objects, as the
    diary's date resolver writes them; this backend stores them as given)."""
    deleted: bool = False

    @property
    def local_day(self) -> date:
        """The day in the turn's own zone (the files backend's day file)."""
        return self.at.date()

    @property
    def dates(self) -> tuple[tuple[str, str], ...]:
        """The resolved dates as the diary entry holds them: (expression, date) pairs."""
        return tuple((str(d.get("text", "")), str(d.get("date", ""))) for d in self.resolved_dates)

    def to_entry(self) -> DiaryEntry:
        return DiaryEntry(id=self.id, at=self.at, tag=self.tag, user=self.user, assistant=self.assistant,
                          dates=self.dates)

    @classmethod
    def from_entry(cls, entry: DiaryEntry, *, chat_id: str = "default") -> "StoredTurn":
        return cls(id=entry.id, at=entry.at, user=entry.user, assistant=entry.assistant, tag=entry.tag,
                   chat_id=chat_id, resolved_dates=dates_json(entry.dates))


def dates_json(dates: Iterable[tuple[str, str]]) -> tuple[dict[str, str], ...]:
    """(expression, date) pairs as the JSON objects `resolved_dates` holds (`StoredTurn.dates` reads them back)."""
    return tuple({"text": t, "date": d} for t, d in dates)


_COLUMNS = "turn_id, at, at_off, user_text, assistant_text, tag, chat_id, resolved_dates, deleted_at"


def _row_to_turn(row: Sequence[Any]) -> StoredTurn:
    turn_id, at, off, user, assistant, tag, chat_id, resolved, deleted_at = row
    if isinstance(resolved, str):
        resolved = json.loads(resolved)
    return StoredTurn(id=turn_id, at=join_time(at, off), user=user, assistant=assistant, tag=tag,
                      chat_id=chat_id, resolved_dates=tuple(resolved or ()), deleted=deleted_at is not None)


def _params(owner: int, turn: StoredTurn) -> tuple:
    at, off = split_time(turn.at, what=f"turn {turn.id!r} time")
    return (owner, turn.id, turn.chat_id, at, off, turn.local_day, turn.tag, turn.user, turn.assistant,
            Jsonb(list(turn.resolved_dates)))


_INSERT = (
    "INSERT INTO diary_turns (owner_id, turn_id, chat_id, at, at_off, local_day, tag, user_text, "
    "assistant_text, resolved_dates) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (owner_id, turn_id) DO NOTHING"
)


class PgDiaryTurns:
    """The diary turns of one character's users."""

    def __init__(self, db: Database, character_id: str, *, owners: Owners | None = None) -> None:
        self.db = db
        self.owners = owners or Owners(character_id)

    def append(self, user_id: str, turn: StoredTurn) -> bool:
        """Add a turn; False when a turn with this id exists already (also a forgotten one)."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            return conn.execute(_INSERT, _params(owner, turn)).rowcount == 1

    def append_many(self, user_id: str, turns: Iterable[StoredTurn]) -> int:
        """Bulk add in one transaction (imports); returns how many were new."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            added = 0
            with conn.cursor() as cur:
                for turn in turns:
                    cur.execute(_INSERT, _params(owner, turn))
                    added += cur.rowcount
            return added

    def _read(self, user_id: str, sql: str, *params: Any) -> list[Any]:
        return self.owners.rows(self.db, user_id, sql, *params)

    def get(self, user_id: str, turn_id: str) -> StoredTurn | None:
        rows = self._read(user_id, f"SELECT {_COLUMNS} FROM diary_turns WHERE owner_id = %s AND turn_id = %s", turn_id)
        return _row_to_turn(rows[0]) if rows else None

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, StoredTurn]:
        """The live turns among `turn_ids`, by id (search results -> texts)."""
        if not turn_ids:
            return {}
        rows = self._read(user_id, f"SELECT {_COLUMNS} FROM diary_turns WHERE owner_id = %s AND turn_id = ANY(%s) "
                          "AND deleted_at IS NULL", list(turn_ids))
        return {t.id: t for t in map(_row_to_turn, rows)}

    def users(self) -> list[str]:
        """The character's users in the database (recorded through any worker)."""
        with self.db.tx() as conn:
            return self.owners.users(conn)

    def day_counts(self, user_id: str) -> list[tuple[date, int]]:
        return [tuple(r) for r in self._read(
            user_id, "SELECT local_day, count(*) FROM diary_turns WHERE owner_id = %s AND deleted_at IS NULL "
            "GROUP BY local_day ORDER BY local_day")]

    def range(self, user_id: str, start: datetime, end: datetime, *, limit: int | None = None) -> list[StoredTurn]:
        """Live turns with start <= time < end, chronological (an index range scan)."""
        split_time(start, what="range start")
        split_time(end, what="range end")
        rows = self._read(user_id, f"SELECT {_COLUMNS} FROM diary_turns WHERE owner_id = %s AND deleted_at IS NULL "
                          "AND at >= %s AND at < %s ORDER BY at, turn_id LIMIT %s", start, end, limit)
        return [_row_to_turn(r) for r in rows]

    def explain_range(self, user_id: str, start: datetime, end: datetime) -> str:
        """The query plan of `range` (to show that it is an index range scan)."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False) or 0
            rows = conn.execute(
                f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT {_COLUMNS} FROM diary_turns "
                "WHERE owner_id = %s AND deleted_at IS NULL AND at >= %s AND at < %s ORDER BY at, turn_id",
                (owner, start, end),
            ).fetchall()
            return "\n".join(r[0] for r in rows)

    def all(self, user_id: str, *, include_deleted: bool = False) -> list[StoredTurn]:
        """Every turn of the user, chronological (export)."""
        live = "" if include_deleted else " AND deleted_at IS NULL"
        rows = self._read(user_id, f"SELECT {_COLUMNS} FROM diary_turns WHERE owner_id = %s{live} ORDER BY at, turn_id")
        return [_row_to_turn(r) for r in rows]

    def last_time(self, user_id: str) -> datetime | None:
        """When the user's last live turn was said (one index lookup)."""
        rows = self._read(user_id, "SELECT at, at_off FROM diary_turns WHERE owner_id = %s AND deleted_at IS NULL "
                          "ORDER BY at DESC LIMIT 1")
        return join_time(rows[0][0], rows[0][1]) if rows else None

    def count(self, user_id: str) -> int:
        rows = self._read(user_id, "SELECT count(*) FROM diary_turns WHERE owner_id = %s AND deleted_at IS NULL")
        return rows[0][0] if rows else 0

    def forget(self, user_id: str, turn_id: str) -> int:
        """Delete a turn from the diary and its search index; returns 1, or 0 if there was none."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return 0
            n = conn.execute(
                "UPDATE diary_turns SET deleted_at = now() WHERE owner_id = %s AND turn_id = %s AND deleted_at IS NULL",
                (owner, turn_id),
            ).rowcount
            if n:
                tombstone(conn, owner, turn_id)
            return n

    def edit(self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None,
             tag: str | None = None,
             redate: Callable[[str, str, datetime], Iterable[tuple[str, str]]] | None = None) -> StoredTurn | None:
        """Change a live turn's texts or tag and, given `redate`, store the dates `redate(user, assistant,
        at)` resolves from its texts, in one transaction; None if there is no such turn. A text change marks the
        turn's search row stale (the caller re-adds it with `PgTurnSearch.add`); an edit that changes
        nothing only dates the turn again (`kioku reindex --dates`)."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return None
            row = conn.execute(
                "UPDATE diary_turns SET user_text = coalesce(%s, user_text), assistant_text = coalesce(%s, assistant_text), "
                f"tag = coalesce(%s, tag) WHERE owner_id = %s AND turn_id = %s AND deleted_at IS NULL RETURNING {_COLUMNS}",
                (user, assistant, tag, owner, turn_id),
            ).fetchone()
            if row is None:
                return None
            turn = _row_to_turn(row)
            if user is not None or assistant is not None:
                tombstone(conn, owner, turn_id)
            if redate is not None:
                dates = dates_json(redate(turn.user, turn.assistant, turn.at))
                if dates != turn.resolved_dates:
                    conn.execute("UPDATE diary_turns SET resolved_dates = %s WHERE owner_id = %s AND turn_id = %s",
                                 (Jsonb(list(dates)), owner, turn_id))
                    turn = replace(turn, resolved_dates=dates)
            return turn

    # -- digests of closed days ------------------------------------------------------------------

    def set_digest(self, user_id: str, day: date, *, turns: int, text: str, by: str) -> None:
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            conn.execute(
                "INSERT INTO diary_digests (owner_id, local_day, turns, text, written_by) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (owner_id, local_day) DO UPDATE SET turns = EXCLUDED.turns, text = EXCLUDED.text, "
                "written_by = EXCLUDED.written_by",
                (owner, day, turns, text, by),
            )

    def digest(self, user_id: str, day: date) -> tuple[int, str] | None:
        """(turns, text) of the user's digest of `day`, or None."""
        rows = self._read(user_id, "SELECT turns, text FROM diary_digests WHERE owner_id = %s AND local_day = %s", day)
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def digests(self, user_id: str) -> list[tuple[date, int, str, str]]:
        """(day, turns, text, written_by) for every digest of the user, by day."""
        return [tuple(r) for r in self._read(
            user_id, "SELECT local_day, turns, text, written_by FROM diary_digests WHERE owner_id = %s ORDER BY local_day")]

