"""Schema migrations and the start-up check, against a real PostgreSQL (with and without pgvector)."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")  # before the imports below

import psycopg

from engine.errors import ConfigError
from engine.backends.postgres import (
    SCHEMA_VERSION,
    Database,
    PgSettings,
    SchemaError,
    StorageUnavailableError,
    build_conninfo,
    check_schema,
    upgrade,
)
from pg_server import fresh_database, pg_db, pg_plain_server, pg_vector_server  # noqa: E402, F401 - fixtures


def test_upgrade_creates_the_schema_and_reports_the_vector_mode(pg_db):
    with psycopg.connect(pg_db.conninfo) as conn:
        state = upgrade(conn)
        assert state.version == SCHEMA_VERSION
        assert state.vector_mode == ("pgvector" if pg_db.vector else "worker")
        line = state.describe()
        assert ("pgvector 0." in line) == pg_db.vector
        assert "in the worker" in line or pg_db.vector
        # Running it again changes nothing.
        assert upgrade(conn) == state
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"diary_turns", "turn_search", "facts", "fact_history", "jobs", "journal_turns",
                "window_messages", "window_state", "owners", "kioku_meta"} <= tables


def test_upgrade_with_vector_off_uses_the_worker_even_when_pgvector_exists(pg_vector_server):
    conninfo = fresh_database(pg_vector_server, vector=False)
    with psycopg.connect(conninfo) as conn:
        assert upgrade(conn, vector="off").vector_mode == "worker"


def test_requiring_pgvector_where_it_is_missing_fails_clearly(pg_plain_server):
    conninfo = fresh_database(pg_plain_server, vector=False)
    with psycopg.connect(conninfo) as conn, pytest.raises(SchemaError, match="pgvector was required"):
        upgrade(conn, vector="require")


@pytest.mark.parametrize(
    ("stored", "message"),
    [(None, "no kioku schema"), (SCHEMA_VERSION - 1, "older than this kioku"), (SCHEMA_VERSION + 1, "newer than this kioku")],
    ids=["missing", "older", "newer"],
)
def test_check_schema_refuses_a_missing_older_or_newer_schema(pg_plain_server, stored, message):
    conninfo = fresh_database(pg_plain_server, vector=False)
    with psycopg.connect(conninfo) as conn:
        if stored is not None:
            upgrade(conn)
            conn.execute("UPDATE kioku_meta SET value = %s WHERE key = 'schema_version'", (str(stored),))
            conn.commit()
        with pytest.raises(SchemaError, match=message):
            check_schema(conn)
        if stored is not None and stored > SCHEMA_VERSION:
            with pytest.raises(SchemaError, match="newer"):
                upgrade(conn)  # never "downgrade" a database a newer host upgraded


def test_check_schema_refuses_another_embedding_dimension(pg_plain_server):
    conninfo = fresh_database(pg_plain_server, vector=False)
    with psycopg.connect(conninfo) as conn:
        upgrade(conn, dim=384)
        assert check_schema(conn, dim=384).dim == 384
        with pytest.raises(SchemaError, match="384-dim .* 768-dim"):
            check_schema(conn, dim=768)


def test_the_password_comes_only_from_the_environment():
    with pytest.raises(ConfigError, match="must not contain a password"):
        build_conninfo(PgSettings(url="postgresql://kioku:secret@db.internal/kioku"), environ={})
    info = build_conninfo(PgSettings(url="postgresql://kioku@db.internal/kioku"), environ={"KIOKU_PG_PASSWORD": "s3"})
    assert "password=s3" in info and "db.internal" in info
    assert "password" not in build_conninfo(PgSettings(url="postgresql://kioku@db.internal/kioku"), environ={})


def test_a_server_that_is_down_fails_fast_with_storage_unavailable(tmp_path):
    """Nothing listens on this socket: opening the pool fails within the timeout, clearly."""
    settings = PgSettings(url=f"host={tmp_path} port=1 user=postgres dbname=postgres", connect_timeout=1.0)
    with pytest.raises(StorageUnavailableError, match="not reachable"):
        Database(settings, environ={}).open()


def test_a_server_that_goes_down_mid_use_fails_writes_with_storage_unavailable():
    """A real server stopped under an open pool: the next write raises, it does not hang or pass."""
    from datetime import datetime, timezone

    from engine.backends.postgres.journal import JournalTurn, PgJournal
    from pg_server import PgServer, find_install

    install = find_install("debian") or find_install("pgserver")
    server = PgServer(install).start()
    try:
        with psycopg.connect(server.conninfo) as conn:
            upgrade(conn, vector="off")
        db = Database(PgSettings(url=server.conninfo, connect_timeout=1.0), environ={}).open()
        journal = PgJournal(db, "c")
        turn = JournalTurn("t1", "u1", datetime(2026, 1, 1, tzinfo=timezone.utc), "hi", "hello")
        assert journal.record(turn, jobs=["diary"])
        server.halt()
        with pytest.raises(StorageUnavailableError):
            journal.record(JournalTurn("t2", "u1", turn.at, "hi", "hello"), jobs=["diary"])
        db.close()
    finally:
        server.stop()
