"""Two uvicorn workers on the Redis backend: 50 concurrent clients x 20 turns for 10 users.

Each client is bound to one user (5 clients per user; odd clients stream) and sends its turns one
after another. Afterwards, for every user: exactly 100 turns (200 messages) are stored, no message
twice; each turn is its user message directly followed by its own reply; and each client's
messages appear in the order it sent them. Diary, core and world book are off (this is about the
service and the short-term tier); the window limits are raised so the whole history stays in Redis.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from redis_server import redis_server_binary

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

CLIENTS, USERS, TURNS = 50, 10, 20


@pytest.mark.skipif(redis_server_binary() is None, reason="redis-server is not installed (scripts/setup.sh --dev installs it)")
@pytest.mark.timeout(240)
def test_two_workers_keep_every_turn_in_order(tmp_path):
    from bench_service import run_scenario

    out = run_scenario(tmp_path, clients=CLIENTS, users=USERS, turns=TURNS, workers=2)
    assert out.errors == []
    assert sorted(out.histories) == [f"u{u:02d}" for u in range(USERS)]
    for user, messages in out.histories.items():
        contents = [m["content"] for m in messages]
        assert len(messages) == 2 * TURNS * CLIENTS // USERS, user
        assert len({m["id"] for m in messages}) == len(messages), f"{user}: a message id is stored twice"
        assert not [t for t, n in Counter(contents[::2]).items() if n > 1], f"{user}: a turn is stored twice"
        for question, answer in zip(messages[::2], messages[1::2]):
            assert (question["role"], answer["role"]) == ("user", "assistant")
            assert answer["content"] == f"echo: {question['content']}"
            assert question["id"][:-2] == answer["id"][:-2]  # the two halves of one turn
        for c, sent in out.sent.items():
            if out.user_of[c] == user:
                assert len(sent) == TURNS
                assert [t for t in contents[::2] if f" c{c:02d} " in t] == sent, f"client {c} out of order"
