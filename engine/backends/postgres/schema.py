"""Applying the migrations (`kioku db upgrade`) and checking the schema at start.

`upgrade(conn)` brings a database to `SCHEMA_VERSION` under an advisory lock, so two hosts that
upgrade at once apply each migration once. `check_schema(conn)` is what a worker runs at start:
it refuses a database that is older (run `kioku db upgrade`) or newer (this host runs an older
kioku) than the code, with a message that says which and what to do.

Whether pgvector is used is decided at the first upgrade and recorded in `kioku_meta`:
`vector="auto"` creates the extension when the server has it and the role may create it, else
vectors are stored as float32 bytes and searched in the worker. `SchemaState.describe()` is the
line `kioku serve` prints at start-up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import psycopg

from engine.backends.errors import SchemaError
from engine.backends.postgres.migrations import MIGRATIONS, Context

log = logging.getLogger(__name__)

SCHEMA_VERSION = len(MIGRATIONS)
_LOCK_KEY = 0x6B696F6B75  # "kioku": the advisory lock that serialises upgrades
VectorChoice = Literal["auto", "require", "off"]


@dataclass(frozen=True)
class SchemaState:
    """What a database holds, as read from `kioku_meta`."""

    version: int
    vector_mode: Literal["pgvector", "worker"]
    """`pgvector`: vectors in a `vector(dim)` column, HNSW per large user, exact scan below that.
    `worker`: float32 bytes in the table, searched in the worker's memory."""
    dim: int
    lexical_config: str
    pgvector_version: str | None = None

    def describe(self) -> str:
        if self.vector_mode == "pgvector":
            vectors = f"pgvector {self.pgvector_version} ({self.dim}-dim, exact per user, HNSW for large users)"
        else:
            vectors = f"in the worker (no pgvector; {self.dim}-dim float32 in the table)"
        return f"postgres schema v{self.version}; vectors: {vectors}; lexical: tsvector/{self.lexical_config} + jieba"


def _meta_exists(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT to_regclass('kioku_meta') IS NOT NULL").fetchone()[0]


def _read_meta(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM kioku_meta").fetchall())


def _pgvector_version(conn: psycopg.Connection) -> str | None:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return row[0] if row else None


def _try_create_vector(conn: psycopg.Connection) -> str | None:
    """Create the extension if the server has it and we may; None (and a log line) otherwise."""
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if not available:
        log.info("postgres: pgvector is not installed on the server; vectors are searched in the worker")
        return None
    try:
        with conn.transaction():  # a savepoint: a refused CREATE leaves the upgrade usable
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege as exc:
        log.warning("postgres: pgvector is installed but this role may not create it (%s); "
                    "vectors are searched in the worker. A superuser can run: CREATE EXTENSION vector;", exc)
        return None
    return _pgvector_version(conn)


def upgrade(
    conn: psycopg.Connection,
    *,
    vector: VectorChoice = "auto",
    dim: int = 384,
    lexical_config: str = "english",
) -> SchemaState:
    """Apply every missing migration; returns the state afterwards. `vector`, `dim` and
    `lexical_config` matter only for a new database (an existing one keeps what it has).

    `lexical_config` "english" (default) stems English words and drops English stopwords; the
    jieba-segmented Chinese words pass through it unchanged. Measured (bench/bench_pg_lexical.py):
    LoCoMo recall@10 0.70 vs 0.65 for "simple", same Chinese results, and faster (fewer common
    words to count). "simple" suits languages the English stemmer would mangle."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        if not _meta_exists(conn):
            conn.execute("CREATE TABLE kioku_meta (key text PRIMARY KEY, value text NOT NULL)")
            pgv = None if vector == "off" else _try_create_vector(conn)
            if vector == "require" and pgv is None:
                raise SchemaError("pgvector was required (--vector require) but cannot be created on this server")
            _set_meta(conn, schema_version="0", vector_mode="pgvector" if pgv else "worker",
                      dim=str(int(dim)), lexical_config=lexical_config)
        meta = _read_meta(conn)
        current = int(meta["schema_version"])
        if current > SCHEMA_VERSION:
            raise SchemaError(_newer_message(current))
        ctx = Context(vector=meta["vector_mode"] == "pgvector", dim=int(meta["dim"]),
                      lexical_config=meta["lexical_config"])
        for migration in MIGRATIONS[current:]:
            with conn.transaction():
                log.info("postgres: applying migration %d: %s", migration.version, migration.description)
                migration.apply(conn, ctx)
                _set_meta(conn, schema_version=str(migration.version))
    return check_schema(conn)


def _set_meta(conn: psycopg.Connection, **values: str) -> None:
    for key, value in values.items():
        conn.execute(
            "INSERT INTO kioku_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (key, value),
        )


def _newer_message(found: int) -> str:
    return (f"the database schema is version {found}, newer than this kioku's {SCHEMA_VERSION}: "
            "another host ran a newer `kioku db upgrade`; upgrade kioku on this host before starting it")


def check_schema(conn: psycopg.Connection, *, dim: int | None = None) -> SchemaState:
    """The database's state, or SchemaError when a worker must not start on it.

    `dim`: the configured embedder's dimension; a database built for another dimension is refused
    (its stored vectors could not be compared with the new ones)."""
    if not _meta_exists(conn):
        raise SchemaError("the database has no kioku schema (version 0); run `kioku db upgrade` first")
    meta = _read_meta(conn)
    version = int(meta.get("schema_version", "0"))
    if version < SCHEMA_VERSION:
        raise SchemaError(f"the database schema is version {version}, older than this kioku's "
                          f"{SCHEMA_VERSION}: run `kioku db upgrade`")
    if version > SCHEMA_VERSION:
        raise SchemaError(_newer_message(version))
    state = SchemaState(
        version=version,
        vector_mode="pgvector" if meta["vector_mode"] == "pgvector" else "worker",
        dim=int(meta["dim"]),
        lexical_config=meta["lexical_config"],
        pgvector_version=_pgvector_version(conn) if meta["vector_mode"] == "pgvector" else None,
    )
    if dim is not None and dim != state.dim:
        raise SchemaError(f"the database holds {state.dim}-dim turn vectors but the configured embedder "
                          f"gives {dim}-dim ones: use the embedder the database was built with, or a new database")
    return state
