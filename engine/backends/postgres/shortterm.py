"""The short-term window and rolling summary in PostgreSQL, behind the `ShortTermBackend` seam.

Appends are idempotent by message id (the journal writes a turn's messages in the same
transaction as the turn itself, so `append` here only serves imports and tools). A fold is applied
with check-and-set under the chat's row lock: only if the stored summary is still the one the fold
was computed from and the window still starts with the messages it folded; appends made meanwhile
are kept. Every worker on every host sees the same window.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator

from engine.shortterm.chats import DEFAULT_CHAT
from engine.shortterm.state import Brain, Fold, State, WindowMessage, reconcile
from engine.backends.postgres.connect import Database
from engine.backends.postgres.owners import Owners
from engine.backends.postgres.window import PgWindow

_WINDOW_LOCK = 3
"""Advisory-lock kind of a user's windows (see search.py's `_SEARCH_LOCK`)."""


class PgShortTermBackend:
    """`ShortTermBackend` over the `window_messages` / `window_state` tables."""

    def __init__(self, db: Database, character_id: str, *, owners: Owners | None = None) -> None:
        self.db = db
        self.owners = owners or Owners(character_id)
        self.window = PgWindow(db, character_id, owners=self.owners)

    def load(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> State:
        stored = self.window.load(user_id, chat_id=chat_id)
        brain = Brain(stored.summary, None, stored.summarized_through, stored.updated_at)
        return reconcile(list(stored.messages), brain)

    @contextlib.contextmanager
    def lock(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> Iterator[None]:
        """A session advisory lock on the user's windows, across workers and hosts."""
        with self.db.connection() as conn:
            with conn.transaction():
                owner = self.owners.get(conn, user_id)
            key = int(owner) * 8 + _WINDOW_LOCK
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            conn.commit()
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                conn.commit()

    def append(self, user_id: str, messages: list[WindowMessage], brain: Brain, *, chat_id: str = DEFAULT_CHAT,
               durable: bool = True) -> None:
        """Add messages (ids already present are skipped); every commit is durable."""
        self.window.append(user_id, messages, chat_id=chat_id)

    def apply_fold(self, user_id: str, fold: Fold, *, chat_id: str = DEFAULT_CHAT) -> bool:
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            conn.execute("INSERT INTO window_state (owner_id, chat_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (owner, chat_id))
            # Row lock: a concurrent fold of the same chat waits here, then sees the new base.
            summary, through = conn.execute(
                "SELECT summary, summarized_through FROM window_state WHERE owner_id = %s AND chat_id = %s FOR UPDATE",
                (owner, chat_id)).fetchone()
            if (summary, through) != (fold.base_summary, fold.base_through):
                return False
            n = len(fold.evicted_ids)
            head = conn.execute(
                "SELECT msg_id FROM window_messages WHERE owner_id = %s AND chat_id = %s ORDER BY seq LIMIT %s",
                (owner, chat_id, n)).fetchall()
            if tuple(r[0] for r in head) != fold.evicted_ids:
                return False
            conn.execute("DELETE FROM window_messages WHERE owner_id = %s AND chat_id = %s AND msg_id = ANY(%s)",
                         (owner, chat_id, list(fold.evicted_ids)))
            conn.execute(
                "UPDATE window_state SET summary = %s, summarized_through = %s, updated_at = %s, version = version + 1 "
                "WHERE owner_id = %s AND chat_id = %s",
                (fold.brain.historical_summary, fold.brain.summarized_through, fold.brain.updated_at, owner, chat_id))
            return True

    def remove(self, user_id: str, ids: Collection[str], *, chat_id: str = DEFAULT_CHAT) -> int:
        return self.window.forget(user_id, list(ids), chat_id=chat_id)

    def sync(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> None:
        """Nothing to do: every append is a committed transaction."""
