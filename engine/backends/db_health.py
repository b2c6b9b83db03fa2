"""What `/health` says about the database: up (with its schema), down, or a schema this worker
refuses. The answer names where the database is (`user@host:port/db`, from `storage.url`, which
never holds the password) and never carries a password or a raw driver message (a libpq error can
echo the connection string)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class DatabaseHealth:
    state: Literal["up", "down", "schema"]
    """up: answers and has this kioku's schema; down: cannot be reached; schema: older, newer or
    missing (run `kioku db upgrade`, or upgrade this host)."""
    where: str
    """`user@host:port/dbname`."""
    detail: str
    """The schema line when up; what to do otherwise."""


def database_health(storage: Any) -> DatabaseHealth | None:
    """None for the files backend; else one round trip to the database (its own connect timeout)."""
    if storage.backend != "postgres":
        return None
    from engine.backends.errors import SchemaError, StorageUnavailableError
    from engine.backends.postgres.backend import open_backend, settings_of
    from engine.backends.postgres.connect import describe_url
    from engine.backends.postgres.schema import check_schema

    settings = settings_of(storage)
    where = describe_url(settings)
    try:
        backend = open_backend(storage)
        with backend.db.tx() as conn:
            state = check_schema(conn)
    except StorageUnavailableError:
        return DatabaseHealth("down", where, f"PostgreSQL at {where} does not answer within "
                                            f"{settings.connect_timeout:g} s")
    except SchemaError as exc:
        return DatabaseHealth("schema", where, str(exc))
    return DatabaseHealth("up", where, state.describe())
