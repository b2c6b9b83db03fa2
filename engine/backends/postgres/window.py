"""The short-term window and rolling summary per (user, chat) in PostgreSQL.

Appends are idempotent by message id. A summary fold is applied with check-and-set: the caller
computes the summary outside any lock from a `WindowState` (version N), then `fold` applies it only
if no other fold happened since (version still N) and the messages it folded are still there; it
returns False otherwise and the caller recomputes. Appends made meanwhile are kept: the fold
removes only the messages up to the one it summarised through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from engine.backends.postgres.connect import Database
from engine.backends.postgres.owners import Owners
from engine.shortterm.backend import WindowMessage


@dataclass(frozen=True)
class WindowState:
    """One chat's window as stored."""

    messages: tuple[WindowMessage, ...]
    """Oldest first; messages already folded into the summary are gone."""
    summary: str
    summarized_through: str | None
    """Id of the last message folded into the summary."""
    version: int
    """Bumped by every fold: the check-and-set token for `fold`."""
    updated_at: str | None = None


class PgWindow:
    """Windows and summaries of one character's users."""

    def __init__(self, db: Database, character_id: str, *, owners: Owners | None = None) -> None:
        self.db = db
        self.owners = owners or Owners(character_id)

    def append(self, user_id: str, messages: Sequence[WindowMessage], *, chat_id: str = "default") -> int:
        """Add messages at the end of the chat's window; ids already present are skipped."""
        with self.db.tx() as conn:
            return append_in(conn, self.owners.get(conn, user_id), messages, chat_id=chat_id)

    def load(self, user_id: str, *, chat_id: str = "default") -> WindowState:
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return WindowState((), "", None, 0)
            state = conn.execute(
                "SELECT summary, summarized_through, version, updated_at FROM window_state "
                "WHERE owner_id = %s AND chat_id = %s", (owner, chat_id)).fetchone()
            rows = conn.execute(
                "SELECT msg_id, role, content, at, tokens FROM window_messages WHERE owner_id = %s AND chat_id = %s "
                "ORDER BY seq", (owner, chat_id)).fetchall()
            messages = tuple(WindowMessage(id=r[0], role=r[1], content=r[2], at=r[3], tokens=r[4]) for r in rows)
            if state is None:
                return WindowState(messages, "", None, 0)
            return WindowState(messages, state[0], state[1], state[2], state[3])

    def fold(self, user_id: str, *, chat_id: str = "default", expected_version: int, summary: str,
             through: str, updated_at: str | None = None) -> bool:
        """Store `summary` as covering every message up to `through` and drop those messages,
        only if the chat is still at `expected_version`. False: someone folded first; reload."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            conn.execute("INSERT INTO window_state (owner_id, chat_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (owner, chat_id))
            # Row lock: a concurrent fold of the same chat waits here, then sees the new version.
            version = conn.execute("SELECT version FROM window_state WHERE owner_id = %s AND chat_id = %s FOR UPDATE",
                                   (owner, chat_id)).fetchone()[0]
            if version != expected_version:
                return False
            seq = conn.execute("SELECT seq FROM window_messages WHERE owner_id = %s AND chat_id = %s AND msg_id = %s",
                               (owner, chat_id, through)).fetchone()
            if seq is None:
                return False
            conn.execute("DELETE FROM window_messages WHERE owner_id = %s AND chat_id = %s AND seq <= %s",
                         (owner, chat_id, seq[0]))
            conn.execute("UPDATE window_state SET summary = %s, summarized_through = %s, version = version + 1, "
                         "updated_at = %s WHERE owner_id = %s AND chat_id = %s",
                         (summary, through, updated_at, owner, chat_id))
            return True

    def forget(self, user_id: str, message_ids: Sequence[str], *, chat_id: str = "default") -> int:
        """Remove messages still in the window (regenerate); returns how many were there."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return 0
            return conn.execute("DELETE FROM window_messages WHERE owner_id = %s AND chat_id = %s AND msg_id = ANY(%s)",
                                (owner, chat_id, list(message_ids))).rowcount

    def chats(self, user_id: str) -> list[str]:
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return []
            rows = conn.execute("SELECT chat_id FROM window_messages WHERE owner_id = %s UNION "
                                "SELECT chat_id FROM window_state WHERE owner_id = %s ORDER BY 1", (owner, owner))
            return [r[0] for r in rows]


def append_in(conn: psycopg.Connection, owner: int, messages: Sequence[WindowMessage], *, chat_id: str) -> int:
    """The append, inside the caller's transaction (the journal records turn + window together)."""
    added = 0
    with conn.cursor() as cur:
        for m in messages:
            cur.execute(
                "INSERT INTO window_messages (owner_id, chat_id, msg_id, role, content, at, tokens) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (owner, chat_id, m.id, m.role, m.content, m.at, m.tokens))
            added += cur.rowcount
    return added
