"""`/health` with the Postgres backend: up (with the schema line), down, or a refused schema, each
naming where the database is and never the password."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")

import psycopg
from fastapi.testclient import TestClient

from engine.config import load_config
from engine.service.app import create_app
from engine.backends.postgres import upgrade
from engine.backends.postgres.backend import close_backends
from pg_server import fresh_database, free_port, pg_vector_server  # noqa: F401 - fixtures

SECRET = "hunter2-not-in-any-answer"


def _health(tmp_path, monkeypatch, url: str) -> tuple[int, dict, str]:
    monkeypatch.setenv("KIOKU_PG_PASSWORD", SECRET)  # trust auth on the test server: sent, unused
    config = load_config(overrides={"data_dir": str(tmp_path), "llm": {"backend": "none"},
                                    "storage": {"backend": "postgres", "url": url, "connect_timeout_s": 1}}, env={})
    try:
        with TestClient(create_app(config=config), base_url="http://127.0.0.1") as client:
            r = client.get("/health")
    finally:
        close_backends()
    return r.status_code, r.json(), r.text


def test_up_reports_the_schema(tmp_path, monkeypatch, pg_vector_server):
    conninfo = fresh_database(pg_vector_server, vector=True)
    with psycopg.connect(conninfo) as conn:
        upgrade(conn)
    code, body, text = _health(tmp_path, monkeypatch, conninfo)
    assert code == 200 and body["status"] == "ok" and body["storage_backend"] == "postgres"
    assert body["database"]["state"] == "up" and "schema v" in body["database"]["detail"]
    assert body["database"]["where"] == f"postgres@{pg_vector_server.socket_dir}:{pg_vector_server.port}/{conninfo.split('dbname=')[1]}"
    assert SECRET not in text


def test_an_unupgraded_database_is_a_schema_problem(tmp_path, monkeypatch, pg_vector_server):
    code, body, text = _health(tmp_path, monkeypatch, fresh_database(pg_vector_server, vector=False))
    assert code == 503 and body["status"] == "degraded"
    assert body["database"]["state"] == "schema" and "kioku db upgrade" in body["database"]["detail"]
    assert SECRET not in text


def test_down_is_503_without_the_password(tmp_path, monkeypatch):
    port = free_port()  # nobody listens there
    code, body, text = _health(tmp_path, monkeypatch, f"host=127.0.0.1 port={port} user=kioku dbname=kioku")
    assert code == 503 and body["database"]["state"] == "down"
    assert body["database"]["where"] == f"kioku@127.0.0.1:{port}/kioku"
    assert SECRET not in text
