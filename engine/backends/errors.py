"""The storage backend's errors, importable without the database driver (the service maps them)."""

from __future__ import annotations

from engine.errors import EngineError


class StorageUnavailableError(EngineError, ConnectionError):
    """The database cannot be reached (down, network, pool exhausted past the timeout): the
    service answers 503 at once, and nothing unacknowledged was committed."""


class SchemaError(EngineError, RuntimeError):
    """The database schema is missing, older or newer than this kioku; the message says what to do."""
