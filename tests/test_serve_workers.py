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

import sys
from pathlib import Path

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
