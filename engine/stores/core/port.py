"""Where core memory keeps its facts: the port between the core store's one logic (extraction,
reconciliation, relevance, administration) and a backend. `engine.factory` picks the backend:
`engine.stores.core.repo.FilesFactRepository` (`users/<id>/core_mem.yml`, the default) or
`engine.backends.postgres.core_repo.PgFactRepository` (tables shared by several hosts)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np

from engine.stores.core.index import FactIndex
from engine.stores.core.pending import PendingTurn
from engine.stores.core.table import FactTable
from engine.stores.core.tx import Transaction, UserState


@dataclass(frozen=True)
class View:
    """What a reader sees, under the user's thread lock."""

    facts: FactTable
    index: FactIndex
    version: int


class LoadedUser(UserState, Protocol):
    """A user's facts as this process holds them (what `CoreMemoryStore.problems` reports on)."""

    lock: AbstractContextManager
    broken: object | None
    """Why the user's facts could not be read (the file and line), else None."""
    pending_problem: str | None


class FactRepository(Protocol):
    """Every user's facts of one character."""

    embedded: int
    """How many fact texts this repository has embedded (a hand edit should add only the changed ones)."""

    def reading(self, user_id: str, *, fresh: bool = False) -> AbstractContextManager[View]:
        """The user's facts, checked against the stored ones at most once per interval (`fresh`: now)."""

    def writing(self, user_id: str, *, now: datetime) -> AbstractContextManager[Transaction]:
        """A transaction on the user's facts: committed when the block ends without an error."""

    def pending(self, user_id: str, *, now: datetime) -> list[PendingTurn]:
        """The user's turns waiting for extraction (a memory-LLM retry)."""

    def rebuild(self, user_id: str) -> int:
        """Rebuild what is derived of the user's facts (their vector index); how many facts."""

    def save_caches(self) -> None: ...

    def loaded_users(self) -> list[tuple[str, LoadedUser]]: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...
