"""Two `kioku serve` processes on one real PostgreSQL, as on two hosts (each its own empty data folder).

Through the real surface only: the schema is made with `kioku db upgrade`, requests are real HTTP
to 127.0.0.1, the chat LLM is the scripted OpenAI server, the embedder the real default one. In
file order: a turn recorded through worker A is recalled through worker B; concurrent clients on
both workers lose, duplicate and reorder nothing, and no fact is written twice; worker A is
SIGKILLed under load and B finishes its background work; with the database down a request fails
fast with a 503 naming the problem; either worker's inspector reads the
database. (`bench/bench_pg_serve.py` is the full-size run.)
"""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")

import asyncio
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_pg_serve import _load, check, start_database, start_workers, wait_drained  # noqa: E402
from pg_server import find_install  # noqa: E402

pytestmark = [
    pytest.mark.skipif(find_install("pgserver") is None, reason="pgserver is not installed (scripts/setup.sh --dev)"),
    pytest.mark.timeout(600),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(database conninfo, [worker A, worker B], the scripted upstream, the database server)."""
    from engine.testing.fake_openai import FakeOpenAIServer

    tmp = tmp_path_factory.mktemp("pg-serve")
    server, conninfo = start_database(tmp)
    try:
        with FakeOpenAIServer() as upstream:
            workers = start_workers(tmp, conninfo, upstream.base_url)
            try:
                yield conninfo, workers, upstream, server
            finally:
                for w in workers:
                    w.stop()
    finally:
        server.stop()


def chat(url: str, text: str, *, user: str, chat_id: str, timeout: float = 60) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", timeout=timeout, headers={"X-Kioku-Chat": chat_id},
                      json={"model": "xiaoyue", "user": user, "messages": [{"role": "user", "content": text}]})


def sent_upstream(upstream) -> str:
    """Everything the last request to the LLM carried (system messages and conversation)."""
    return "\n".join(m.get("content") or "" for m in upstream.requests[-1]["messages"])


def test_a_turn_recorded_through_a_is_recalled_through_b(cluster):
    conninfo, (a, b), upstream, _ = cluster
    assert chat(a.url, "我养了一只叫豆豆的柯基，它三岁了", user="ren", chat_id="c1").status_code == 200
    # The next message, through the other worker, same chat: the shared window has the turn.
    assert chat(b.url, "它今天有点没精神", user="ren", chat_id="c1").status_code == 200
    assert "豆豆" in sent_upstream(upstream)
    # Once the background work (diary entry, search index, facts) is done, a new chat on B finds it.
    wait_drained(conninfo, timeout=60)
    assert chat(b.url, "我的柯基叫什么名字？", user="ren", chat_id="c2").status_code == 200
    prompt = upstream.requests[-1]["messages"]
    memory = "\n".join(m["content"] for m in prompt if m["role"] == "system")
    assert "豆豆" in memory, memory
    assert not any("豆豆" in (m.get("content") or "") for m in prompt if m["role"] != "system")


def test_the_inspector_of_either_worker_reads_the_database(cluster):
    """A user who only ever talked through worker A is listed, calendared and searchable through
    B's inspector API (B's data folder has nothing of them: the memory lives in the database)."""
    conninfo, (a, b), _, _ = cluster
    assert chat(a.url, "我上周去海边捡了很多贝壳", user="mei", chat_id="m1").status_code == 200
    wait_drained(conninfo, timeout=60)
    base = f"{b.url}/v1/characters/xiaoyue"
    users = httpx.get(f"{base}/users", timeout=30)
    assert users.status_code == 200, users.text
    mei = [u for u in users.json() if u["id"] == "mei"]
    assert mei and mei[0]["turns"] == 1, users.json()
    days = httpx.get(f"{base}/users/mei/diary/days", timeout=30)
    assert days.status_code == 200 and sum(d["turns"] for d in days.json()) == 1, days.text
    found = httpx.get(f"{base}/users/mei/diary/search", params={"q": "贝壳"}, timeout=30)
    assert found.status_code == 200, found.text
    assert any("贝壳" in h["user"] for h in found.json()), found.json()
    day = days.json()[0]["day"]
    page = httpx.get(f"{base}/users/mei/diary", params={"start": day}, timeout=30)
    assert page.status_code == 200 and "贝壳" in page.json()["entries"][0]["user"], page.text
    for path in ("", "/users/mei/facts", "/users/mei/short-term", "/world-book", "/world-book/entries"):
        r = httpx.get(f"{base}{path}", timeout=30)
        assert r.status_code == 200, (path, r.text)


def test_concurrent_clients_on_both_workers_lose_nothing(cluster):
    conninfo, workers, _, _ = cluster
    out = asyncio.run(_load(workers, clients=10, users=4, turns=4, kill=False))
    assert out.refused == []
    assert sum(map(len, out.acked.values())) == 40
    wait_drained(conninfo, timeout=120)
    assert check(conninfo, out) == []


def test_sigkill_of_a_worker_mid_load_loses_no_acknowledged_turn(cluster):
    """A is killed a third into the load; its clients go on through B; the jobs A had claimed are
    taken over by B after their lease (3 s), and every acknowledged turn is fully processed."""
    conninfo, workers, _, _ = cluster
    out = asyncio.run(_load(workers, clients=8, users=4, turns=6, kill=True, prefix="k"))
    assert out.killed_at is not None and workers[0].proc.poll() is not None
    acked = sum(map(len, out.acked.values()))
    assert acked >= 48 - len(out.refused) and acked > 16
    wait_drained(conninfo, timeout=180)
    assert check(conninfo, out) == []


def test_database_down_fails_fast_with_503(cluster):
    conninfo, (_, b), _, server = cluster
    server.halt()
    # storage.connect_timeout_s is 2 s: a hang would end in httpx's timeout, not an answer.
    r = chat(b.url, "你还记得我吗？", user="ren", chat_id="c1", timeout=20)
    assert r.status_code == 503
    error = r.json()["error"]
    assert error["code"] == "storage_unavailable"
    assert "database is unavailable" in error["message"]
