"""End to end through `MemoryOrchestrator.build_prompt`: turns written with `record_turn(at=...)`
over several months; questions in both languages return exactly the asked range's turns."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest


from demo_data import diary_only_orchestrator

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 15, 30, tzinfo=TZ)


@pytest.fixture(scope="module")
def orch(tmp_path_factory, embedder):
    orch = diary_only_orchestrator(tmp_path_factory.mktemp("e2e"), embedder)
    # Every 5 days since August, then yesterday: its first turn at 00:00:00 and two in one second.
    at = datetime(2026, 8, 3, 20, 15, tzinfo=TZ)
    n = 0
    while at < datetime(2026, 11, 20, tzinfo=TZ):
        orch.record_turn(f"第{n}次聊天，说说近况", f"好的{n}", user_id="alice", at=at, turn_id=f"m{n:03d}")
        at += timedelta(days=5, hours=1)
        n += 1
    yday = [
        ("y0", datetime(2026, 11, 21, 0, 0, 0, tzinfo=TZ), "零点整，刚到家"),
        ("y1", datetime(2026, 11, 21, 12, 30, 5, tzinfo=TZ), "中午吃了火锅"),
        ("y2", datetime(2026, 11, 21, 12, 30, 5, tzinfo=TZ), "同一秒的第二句"),
        ("y3", datetime(2026, 11, 21, 23, 59, 59, tzinfo=TZ), "睡了"),
        ("t0", datetime(2026, 11, 22, 0, 0, 0, tzinfo=TZ), "今天第一句"),
    ]
    for tid, t, text in yday:
        orch.record_turn(text, "嗯嗯", user_id="alice", at=t, turn_id=tid)
    assert orch.flush(120)
    assert not orch.background_errors
    yield orch
    orch.close()


def diary_ids(result):
    return [h.meta["id"] for h in result.hits if h.store == "diary" and h.meta.get("kind") == "turn"]


@pytest.mark.parametrize("message", ["昨天我们聊了什么？", "What did we talk about yesterday?"])
def test_yesterday_through_build_prompt(orch, message):
    result = orch.build_prompt(message, user_id="alice", now=NOW)
    assert diary_ids(result) == ["y0", "y1", "y2", "y3"]
    text = "\n".join(m["content"] for m in result.messages)
    assert "零点整，刚到家" in text and "同一秒的第二句" in text and "今天第一句" not in text.split("当前时间")[0]
    assert "{{" not in text


@pytest.mark.parametrize("message", ["十月份我们都聊了什么", "What did we talk about in October?"])
def test_a_month_through_build_prompt(orch, message):
    result = orch.build_prompt(message, user_id="alice", now=NOW)
    diary = orch.stores[0] if orch.stores[0].name == "diary" else next(s for s in orch.stores if s.name == "diary")
    want = [e.id for e in diary.entries("alice", datetime(2026, 10, 1, tzinfo=TZ), datetime(2026, 11, 1, tzinfo=TZ))]
    assert diary_ids(result) == want and len(want) >= 5
    ranged = [h for h in result.hits if h.store == "diary" and h.meta.get("kind") != "search"]
    assert all("2026-10-01 00:00, 2026-11-01 00:00) +08:00" in h.reason for h in ranged)


def test_ordinary_message_has_no_diary(orch):
    result = orch.build_prompt("今天天气真好", user_id="alice", now=NOW)
    assert not [h for h in result.hits if h.store == "diary"]
