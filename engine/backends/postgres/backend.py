"""One open Postgres backend per process: the pool, the checked schema, the owners of each character.

`open_backend(config.storage)` is what the factory calls for every character a worker opens; the
first call opens the pool (failing fast with `StorageUnavailableError` when the server cannot be
reached) and checks the schema (`SchemaError` for an older or newer one, with what to do); later
calls return the same backend, so every character of a worker shares one pool.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from engine.config import StorageConfig
from engine.errors import ConfigError
from engine.backends.postgres.connect import Database, PgSettings, describe_url
from engine.backends.postgres.owners import Owners
from engine.backends.postgres.schema import SchemaError, SchemaState, check_schema
from engine.keyed import Keyed

log = logging.getLogger(__name__)


def settings_of(config: StorageConfig) -> PgSettings:
    if not config.url.strip():
        raise ConfigError("storage.backend is postgres but storage.url is empty (e.g. postgresql://kioku@db-host:5432/kioku)")
    return PgSettings(url=config.url, password_env=config.password_env, min_connections=1,
                      max_connections=config.pool_size, connect_timeout=config.connect_timeout_s,
                      statement_timeout_ms=config.statement_timeout_ms)


@dataclass
class PgBackend:
    """The database of this process, as checked at open."""

    db: Database
    state: SchemaState
    _owners: Keyed[str, Owners] = field(default_factory=lambda: Keyed(Owners))

    def owners(self, character_id: str) -> Owners:
        """One owner-id cache per character, shared by its repositories."""
        return self._owners.get(character_id)

    def check_dim(self, dim: int) -> None:
        if int(dim) != self.state.dim:
            raise SchemaError(f"the database holds {self.state.dim}-dim turn vectors but the configured embedder "
                              f"gives {int(dim)}-dim ones: use the embedder the database was built with, or a new database")

    def describe(self) -> str:
        return f"{self.state.describe()} at {describe_url(self.db.settings)}"


_OPEN: dict[PgSettings, PgBackend] = {}
_OPEN_LOCK = threading.Lock()


def open_backend(config: StorageConfig) -> PgBackend:
    """The backend for these settings, opened and checked once per process."""
    settings = settings_of(config)
    with _OPEN_LOCK:
        backend = _OPEN.get(settings)
        if backend is not None:
            return backend
        db = Database(settings).open()
        try:
            with db.tx() as conn:
                state = check_schema(conn)
        except BaseException:
            db.close()
            raise
        backend = _OPEN[settings] = PgBackend(db, state)
        log.info("storage: %s", backend.describe())
        return backend


def close_backends() -> None:
    """Close every pool this process opened (tests; a process exit closes them anyway)."""
    with _OPEN_LOCK:
        opened = list(_OPEN.values())
        _OPEN.clear()
    for backend in opened:
        backend.db.close()
