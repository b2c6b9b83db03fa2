"""Connecting to PostgreSQL: settings, the password from the environment, a pool that fails fast.

The password never comes from a file: `storage.url` (config.yaml, or a character folder, which
may not set storage at all) must not carry one, and it is read from the environment variable
named by `password_env` when the pool opens (not at import time).

Every repository runs its statements through `Database.tx()`, which maps "the server is down or
unreachable" (a connection that cannot be made or is lost, a pool that has no connection within
`connect_timeout`) to `StorageUnavailableError`: the service answers 503 and nothing is
acknowledged that was not committed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from engine.errors import ConfigError
from engine.backends.errors import StorageUnavailableError


@dataclass(frozen=True)
class PgSettings:
    """How to reach the database (the lead maps `storage.*` of config.yaml onto this)."""

    url: str
    """`postgresql://user@host:5432/kioku` or a libpq `key=value` string, without a password."""
    password_env: str = "KIOKU_PG_PASSWORD"
    """Environment variable holding the password (unset: no password, e.g. peer or trust auth)."""
    min_connections: int = 1
    max_connections: int = 10
    connect_timeout: float = 5.0
    """Seconds to wait for a connection (new or from the pool) before failing with 503."""
    statement_timeout_ms: int = 30_000
    """Server-side cap on one statement; a runaway query fails instead of holding a worker."""
    application_name: str = "kioku"


def build_conninfo(settings: PgSettings, *, environ: Mapping[str, str] | None = None) -> str:
    """The libpq connection string: the URL plus the password from the environment."""
    environ = os.environ if environ is None else environ
    try:
        parts = conninfo_to_dict(settings.url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"storage.url is not a PostgreSQL URL or conninfo ({exc})") from None
    if parts.get("password"):
        raise ConfigError(
            f"storage.url must not contain a password; put it in the environment variable "
            f"{settings.password_env} instead (the URL is stored in config files)"
        )
    extra: dict[str, str] = {"application_name": settings.application_name}
    if "connect_timeout" not in parts:
        extra["connect_timeout"] = str(max(1, round(settings.connect_timeout)))
    password = environ.get(settings.password_env)
    if password:
        extra["password"] = password
    return make_conninfo(settings.url, **extra)


def describe_url(settings: PgSettings) -> str:
    """Where the database is, for logs and start-up lines (no password by construction)."""
    parts = conninfo_to_dict(settings.url)
    host = parts.get("host") or "localhost"
    return f"{parts.get('user') or ''}@{host}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


def _describe_error(settings: PgSettings, exc: psycopg.OperationalError) -> str:
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return (f"PostgreSQL ({describe_url(settings)}) cancelled a statement after "
                f"{settings.statement_timeout_ms} ms (storage.statement_timeout_ms): {exc}")
    return f"PostgreSQL error ({describe_url(settings)}): {exc}"


class Database:
    """A connection pool plus the error mapping every repository shares."""

    def __init__(self, settings: PgSettings, *, environ: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        conninfo = build_conninfo(settings, environ=environ)
        self.pool = ConnectionPool(
            conninfo,
            min_size=settings.min_connections,
            max_size=settings.max_connections,
            timeout=settings.connect_timeout,
            kwargs={"options": f"-c statement_timeout={settings.statement_timeout_ms}"},
            check=ConnectionPool.check_connection,
            open=False,
            name="kioku",
        )

    def open(self, *, wait: bool = True) -> "Database":
        """Open the pool; with `wait`, fail now (StorageUnavailableError) if the server is down."""
        self.pool.open(wait=False)
        if wait:
            try:
                self.pool.wait(timeout=self.settings.connect_timeout)
            except PoolTimeout as exc:
                self.pool.close()
                raise StorageUnavailableError(
                    f"PostgreSQL at {describe_url(self.settings)} is not reachable within "
                    f"{self.settings.connect_timeout:g} s ({exc})"
                ) from None
        return self

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def tx(self) -> Iterator[psycopg.Connection]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        try:
            with self.pool.connection() as conn:
                with conn.transaction():
                    yield conn
        except PoolTimeout as exc:
            raise StorageUnavailableError(
                f"no PostgreSQL connection within {self.settings.connect_timeout:g} s "
                f"({describe_url(self.settings)}): {exc}"
            ) from None
        except psycopg.OperationalError as exc:
            # Connection lost or refused, or a statement over statement_timeout_ms: nothing of
            # this transaction was committed.
            raise StorageUnavailableError(_describe_error(self.settings, exc)) from exc

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection in autocommit-free mode without an enclosing transaction block
        (for statements that must run outside one, e.g. CREATE INDEX CONCURRENTLY)."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StorageUnavailableError(f"no PostgreSQL connection: {exc}") from None
        except psycopg.OperationalError as exc:
            raise StorageUnavailableError(_describe_error(self.settings, exc)) from exc

    def __enter__(self) -> "Database":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
