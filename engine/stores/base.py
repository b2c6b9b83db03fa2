"""The contract between the orchestrator and the memory stores.

The orchestrator knows only `Store`: it embeds the query once, asks every store in parallel with
`retrieve`, and each finished turn becomes a `record` job of the durable journal, run on the
background worker (again after a crash or a failure: `record` must be idempotent by turn id).
A store that can take a turn back also has `forget` (see `Forgetting`), found with getattr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

import numpy as np

Message = dict[str, str]
"""An OpenAI-format chat message: {"role": ..., "content": ...}."""


@dataclass(frozen=True)
class Turn:
    """One finished exchange, as handed to the stores' write hooks."""

    id: str
    """Unique per turn, also for two turns in the same second."""
    user_id: str
    at: datetime
    """Aware, in the user's zone."""
    user: str
    assistant: str
    chat_id: str = "default"
    """The conversation it belongs to: the short-term window and summary are per (user, chat);
    the diary and the facts are per user."""


@dataclass(frozen=True)
class Query:
    """Everything a store needs to answer one `build_prompt` call; built once, shared by all stores."""

    message: str
    """The user's new message."""
    user_id: str
    now: datetime
    """Aware, in the user's zone."""
    recent: tuple[Message, ...]
    """The short-term window before this message, oldest first."""
    text: str
    """The query text that was embedded: the message plus the last few turns."""
    vector: np.ndarray
    """(d,) float32, L2-normalised embedding of `text` (query role)."""
    pieces: Mapping[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)
    """Per store name: the extra texts it asked for in `query_texts`, and their (n, d) vectors."""
    since_last: timedelta | None = None
    """How long before this message the last one of `recent` was said; None when unknown (a
    client-sent history carries no times). A long pause means `recent` is an earlier sitting."""
    exclude: frozenset[str] = frozenset()
    """Turn ids nothing of which may come back in this prompt (the turn a regenerate, edit or
    continue replaces): the diary skips their lines, core memory the facts only they stated."""
    client_text: str = ""
    """What the client itself sends the model besides the conversation (a frontend's card and lore):
    the world book does not inject an entry it already holds."""


@dataclass(frozen=True)
class Hit:
    """One retrieved fragment and why it was retrieved."""

    store: str
    text: str
    """The line injected into the prompt (before the store's template wraps it)."""
    score: float
    """Relevance; when a budget is exceeded the lowest scores are dropped first."""
    reason: str
    """Why it fired: the keyword and message, the time expression and range, the similarity."""
    tokens: int = 0
    """Token count of `text`; filled in by the orchestrator when a store leaves it at 0."""
    pinned: bool = False
    """Never trimmed (constant world-book entries, the diary's 'N turns left out' note)."""
    meta: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Store(Protocol):
    name: str
    """Tier name; also the prompt template name and the budget cap key: world_book, core, diary."""

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        """Extra texts to embed (query role) in the orchestrator's single batch; usually []."""
        ...

    def retrieve(self, query: Query) -> list[Hit]:
        """Hits above the store's threshold, in the order they should be shown."""
        ...

    def record(self, turn: Turn) -> None:
        """Write hook, a journal job run on the background worker after each turn. Idempotent by
        `turn.id`: it runs again after a crash (replay) or a failure (retry), and a second run
        must not duplicate anything. May raise; the journal keeps the job, shows it as failed and
        retries it with backoff. Must keep no must-survive state of its own in `.cache/`."""
        ...

    def problems(self) -> list[str]:
        """Degradations that do not stop retrieval (a broken world-book file kept at its last
        good version, ...). Shown in every prompt result's diagnostics until fixed."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Forgetting(Protocol):
    """Optional: a store that can take back what one turn wrote (regenerate, edit, delete)."""

    def forget(self, user_id: str, turn_id: str) -> int:
        """Remove or revert what `turn_id` wrote; how many things changed (0 if nothing: idempotent)."""
        ...
