"""`kioku serve --workers 2` with every store on, on the file backend and on Redis for the window.

10 clients x 5 turns over 3 users through `/v1/chat/completions` (odd clients stream), and at the
same time, through the memory API, 20 concurrent fact posts to one user and 10 edits of facts
posted before (an edit rewrites the whole fact file). Once the service's own
workers have drained the journals, the stores are read through the library: every acknowledged
turn is in the short-term memory (the window of 4 messages, or the summary it was folded into: a
fold after every turn) and in the diary, exactly once and in each client's order, every fact
answered 201 is in the facts exactly once, every edit kept, no journal job is open or failed, nothing is
unreadable. The full-size run (50 x 20, 100 facts, 2 and 4 workers) is `bench/bench_serve_load.py`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

from redis_server import redis_server_binary

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

CLIENTS, USERS, TURNS, FACTS, EDITS = 10, 3, 5, 20, 10
WINDOW = 4
"""Messages in the window: a summary fold after every turn, racing the other worker's appends."""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", [
    "files",
    pytest.param("redis", marks=pytest.mark.skipif(redis_server_binary() is None,
                                                   reason="redis-server is not installed (scripts/setup.sh --dev)")),
])
def test_two_workers_lose_no_turn_and_no_fact(tmp_path, backend):
    from bench_serve_load import report, run_config

    run = run_config(tmp_path, backend=backend, workers=2, clients=CLIENTS, users=USERS, turns=TURNS, facts=FACTS,
                     edits=EDITS, window=WINDOW, drain_timeout=120)
    counts = run.counts
    assert counts.bad() == {}, "\n".join(report(run))
    assert counts.acked_turns == CLIENTS * TURNS and counts.acked_facts == FACTS + EDITS, "\n".join(report(run))


SLOW_START = """
import sys, time
if "--multiprocessing-fork" in sys.argv:  # only uvicorn's worker processes (spawned)
    time.sleep({seconds})
"""


@pytest.mark.timeout(120)
def test_a_worker_slow_to_start_is_not_killed(tmp_path):
    """A worker that takes longer than uvicorn's 5 s health ping to start (a busy machine: importing
    the engine took 4.5 s here under load) must not be SIGKILLed and restarted: with the default it
    never came up (killed, restarted, killed again), and a worker killed later drops the requests
    it was answering."""
    from bench_serve_load import TOKEN, KiokuServeWorkers, write_config

    from engine.testing.fake_openai import FakeOpenAIServer

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SLOW_START.format(seconds=7))
    with FakeOpenAIServer() as upstream:
        config = write_config(tmp_path, upstream=upstream.base_url, backend="files", redis_url=None, window=20)
        root = Path(__file__).resolve().parent.parent
        env = {"KIOKU_API_TOKEN": TOKEN, "KIOKU_CONFIG": None,
               "PYTHONPATH": os.pathsep.join([str(hook), str(root), os.environ.get("PYTHONPATH", "")])}
        service = KiokuServeWorkers(config, workers=2, env=env, log_file=tmp_path / "serve.log")
        try:
            service.start(timeout=45)  # before the fix: killed every 5 s, never up
            r = httpx.post(f"{service.url}/v1/chat/completions", headers={"Authorization": f"Bearer {TOKEN}"},
                           json={"model": "xiaoyue", "user": "u", "messages": [{"role": "user", "content": "你好"}]},
                           timeout=60)
            assert r.status_code == 200, r.text
        finally:
            service.stop()
        log = (tmp_path / "serve.log").read_text()
        assert "died" not in log, log
