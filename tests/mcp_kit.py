"""Shared by the MCP tests (test_mcp_stdio.py, test_mcp_http.py): a week of two users' memory, the
SDK's client held open in a thread of its own (so many tests share one connection), and the
table of questions each transport must answer as the library does."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from mcp import Client
from mcp.shared.exceptions import MCPError

from engine.timerange import named_range

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 20, 30, tzinfo=TZ)
"""A Sunday evening: "昨天" is Saturday 11-21, "这周" Monday 11-16 to today."""
AT = NOW.isoformat()
ME, OTHER = "linzhou", "alice"
CHARACTER = "xiaoyue"
MY_WEEK = [
    ("和同事坐缆车去上城看雾", "雾大的话缆车会停哦。"), ("我家猫小白又把花盆打翻了", "小白太调皮了！"),
    ("去夜市街吃了豌杂面", "辣不辣呀？"), ("在家画了一天海报", "辛苦啦，画完了吗？"),
    ("下雨了没带伞", "茶馆里有备用的伞。"), ("I went running by the river", "How far did you go?"),
    ("去老码头看陈伯摆渡", "陈伯最近身体还好吗？"),
]
"""linzhou's turns, one topic a day from 11-15 to 11-21 (two turns a day)."""
OTHER_SECRET = "我在偷偷准备吉他比赛，别告诉别人"
TOOLS = {"search_memory", "recall", "list_facts", "add_fact", "correct_fact", "forget_fact", "lookup_world_book",
         "preview_prompt"}


MEMORY_SETTINGS: dict[str, Any] = {"memory_llm": {"backend": "none"}, "diary": {"digest_over_turns": 3}}
"""Offline memory writing; three turns over several days are "long" (answered as per-day
digests), so a week exercises both kinds of recall."""


def config_overrides(data_dir: Path) -> dict[str, Any]:
    """The whole config of an offline `kioku mcp` on `data_dir`."""
    return {"data_dir": str(data_dir), "llm": {"backend": "none"}, **MEMORY_SETTINGS}


def write_memory(orch) -> dict[str, str]:  # noqa: ANN001 - a MemoryOrchestrator
    """Record both users' week and facts; returns the fact id of each user's first fact."""
    for i, (said, answer) in enumerate(MY_WEEK):
        day = NOW - timedelta(days=7 - i)
        for n, hour in enumerate((19, 21)):
            orch.record_turn(said if n == 0 else f"{said}（续）", answer, user_id=ME,
                             at=day.replace(hour=hour, minute=5))
    orch.record_turn(OTHER_SECRET, "放心，我不说。", user_id=OTHER, at=NOW - timedelta(days=2))
    # Last year's Thanksgiving (this year's is four days after NOW: a recall of it means last year's).
    orch.record_turn("感恩节我们烤了一只火鸡，外婆也来了", "听起来很温馨！", user_id=ME,
                     at=datetime(2025, 11, 27, 18, 0, tzinfo=TZ))
    ids = {ME: orch.admin.facts.add(ME, "喜欢喝桂花乌龙").fact.id,
           OTHER: orch.admin.facts.add(OTHER, "在练吉他，准备比赛").fact.id}
    assert orch.flush(60)
    return ids


# -- the client, held open in a thread ----------------------------------------------------------


class HeldClient:
    """An MCP SDK `Client` connected in a thread of its own and called synchronously: `connect()`
    yields the entered client; every call runs in the task that entered it (anyio requires it)."""

    def __init__(self, connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
        self.connect = connect
        self._queue: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = concurrent.futures.Future()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), name="mcp-client", daemon=True)

    def __enter__(self) -> "HeldClient":
        self._thread.start()
        self._ready.result(timeout=120)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._queue is not None:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        self._thread.join(60)

    async def _main(self) -> None:
        self._loop, self._queue = asyncio.get_running_loop(), asyncio.Queue()
        try:
            async with self.connect() as client:
                self._ready.set_result(None)
                while (item := await self._queue.get()) is not None:
                    ask, answer = item
                    try:
                        answer.set_result(await ask(client))
                    except Exception as exc:  # noqa: BLE001 - handed to the calling thread
                        answer.set_exception(exc)
        except Exception as exc:  # noqa: BLE001
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, ask: Callable[[Client], Awaitable[Any]], timeout: float = 60) -> Any:
        assert self._loop is not None and self._queue is not None
        answer: concurrent.futures.Future = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (ask, answer))
        return answer.result(timeout)

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's result; raises `MCPError` for a protocol error."""
        return self.run(lambda c: c.call_tool(tool, arguments))

    def error(self, tool: str, arguments: dict[str, Any]) -> MCPError:
        """The protocol error the call must end in."""
        try:
            result = self.call(tool, arguments)
        except MCPError as exc:
            return exc
        raise AssertionError(f"{tool}({arguments}) answered instead of failing: {result}")


# -- the same question, asked of the library ----------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One tool call, and the same question asked of the library; both reduced to comparable data."""

    id: str
    tool: str
    args: dict[str, Any]
    library: Callable[[Any, str], Any]
    """(orchestrator, user) -> what the library answers."""
    seen: Callable[[dict[str, Any]], Any]
    """The tool's structured content -> the same shape."""
    says: str = ""
    """A phrase the text answer must hold."""


def _searched(found) -> tuple:  # noqa: ANN001 - a MemorySearch
    return ([m.turn.id for m in found.diary], [h.text for h in found.facts], [h.text for h in found.world_book])


def _search_seen(s: dict) -> tuple:
    return ([h["turn"]["id"] for h in s["diary"]], [h["text"] for h in s["facts"]], [h["text"] for h in s["world_book"]])


def _recalled(orch, user: str, time: str) -> tuple:  # noqa: ANN001
    when = named_range(time, orch.tz, now=NOW, past=True)  # as the tool reads it: a time of memory
    r = orch.admin.recall(user, when.start, when.end)
    return r.total, [e.id for e in r.turns], [(d.day.isoformat(), d.turns, d.text) for d in r.digests]


def _recall_seen(s: dict) -> tuple:
    return s["total"], [t["id"] for t in s["turns"]], [(d["day"], d["turns"], d["text"]) for d in s["digests"]]


def _in_range(orch, user: str) -> tuple:  # noqa: ANN001
    when = named_range("2026-11-16/2026-11-17", orch.tz, now=NOW)
    return _searched(orch.admin.search_memory(user, "猫", start=when.start, end=when.end, k=10, now=NOW))


READ_CASES = [
    Case("search-topic-no-time", "search_memory", {"query": "缆车", "now": AT},
         lambda o, u: _searched(o.admin.search_memory(u, "缆车", k=10, now=NOW)), _search_seen, says="缆车"),
    Case("search-within-iso-range", "search_memory", {"query": "猫", "time": "2026-11-16/2026-11-17", "now": AT},
         _in_range, _search_seen, says="小白"),
    Case("recall-yesterday", "recall", {"time": "昨天", "now": AT},
         lambda o, u: _recalled(o, u, "昨天"), _recall_seen, says="陈伯"),
    Case("recall-last-tuesday-en", "recall", {"time": "what did we talk about last Tuesday?", "now": AT},
         lambda o, u: _recalled(o, u, "last Tuesday"), _recall_seen, says="豌杂面"),
    Case("recall-this-week-as-digests", "recall", {"time": "这周", "now": AT},
         lambda o, u: _recalled(o, u, "这周"), _recall_seen, says="One digest per day"),
    Case("recall-festival-ahead-is-last-years", "recall", {"time": "Thanksgiving", "now": AT},
         lambda o, u: _recalled(o, u, "Thanksgiving"), _recall_seen, says="火鸡"),
    Case("recall-iso-day", "recall", {"time": "2026-11-18", "now": AT},
         lambda o, u: _recalled(o, u, "2026-11-18"), _recall_seen, says="海报"),
    Case("list-facts", "list_facts", {},
         lambda o, u: [(f.id, f.text) for f in o.admin.facts.list(u)],
         lambda s: [(f["id"], f["text"]) for f in s["facts"]], says="桂花乌龙"),
    Case("world-book-lookup", "lookup_world_book", {"text": "阿黄又睡在旧书堆上了", "now": AT},
         lambda o, u: [(h.text, h.reason) for h in o.admin.try_world_book("阿黄又睡在旧书堆上了", now=NOW).hits],
         lambda s: [(h["text"], h["reason"]) for h in s["entries"]], says="橘猫"),
    Case("prompt-preview", "preview_prompt", {"message": "昨天我们聊了什么？", "now": AT},
         lambda o, u: [(h.store, h.text, h.reason) for h in o.build_prompt("昨天我们聊了什么？", user_id=u, now=NOW).hits],
         lambda s: [(h["store"], h["text"], h["reason"]) for h in s["hits"]], says="why:"),
]
"""Every read-only tool, as the same question to the library. The data make each answer non-empty."""

ERROR_CASES = [
    ("time-names-no-time", "recall", {"time": "the blue cheese"}, "time"),
    ("time-range-backwards", "recall", {"time": "2026-11-20/2026-11-18"}, "time"),
    ("now-not-a-time", "recall", {"time": "昨天", "now": "soon"}, "now"),
    ("unknown-character", "search_memory", {"query": "缆车", "character": "nobody"}, "character"),
    ("character-not-an-id", "list_facts", {"character": "../xiaoyue"}, "character"),
]
"""(id, tool, arguments, the argument the protocol error must name), for every transport."""


def check_tools(client: HeldClient) -> None:
    """Every tool is listed, with its input and output schemas and whether it only reads."""
    tools = {t.name: t for t in client.run(lambda c: c.list_tools()).tools}
    assert set(tools) == TOOLS
    assert tools["recall"].input_schema["required"] == ["time"]
    assert "digests" in tools["recall"].output_schema["properties"]
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["forget_fact"].annotations.read_only_hint is False


def check_case(client: HeldClient, orch, case: Case, user: str = ME) -> None:  # noqa: ANN001
    result = client.call(case.tool, case.args)
    assert not result.is_error, result.content
    expected = case.library(orch, user)
    assert case.seen(result.structured_content) == expected
    parts = expected if isinstance(expected, tuple) else (expected,)
    assert any(parts), f"{case.id}: the data should make this answer non-empty"
    text = result.content[0].text
    assert case.says in text, text


def check_error(client: HeldClient, tool: str, args: dict[str, Any], argument: str) -> None:
    from mcp_types import INVALID_PARAMS

    err = client.error(tool, args)
    assert err.error.code == INVALID_PARAMS, err.error
    assert err.error.message.startswith(argument), err.error.message
    assert (err.error.data or {}).get("argument") == argument, err.error


def check_edits(client: HeldClient, orch, *, user: str = ME, others_fact: str) -> None:  # noqa: ANN001
    """add, correct and forget through the tools; the library then holds the same facts, the
    correction's old text in history; another user's fact id is an error naming `fact_id`."""
    added = client.call("add_fact", {"text": "讨厌吃香菜"}).structured_content
    assert added["change"] == "added"
    fact_id = added["fact"]["id"]
    assert (fact_id, "讨厌吃香菜") in [(f.id, f.text) for f in orch.admin.facts.list(user)]
    corrected = client.call("correct_fact", {"fact_id": fact_id, "text": "其实香菜也能吃一点"})
    assert "讨厌吃香菜" in corrected.content[0].text
    history = orch.admin.facts.history(user, fact_id)
    assert history.fact.text == "其实香菜也能吃一点" and [r.text for r in history.revisions] == ["讨厌吃香菜"]
    client.call("forget_fact", {"fact_id": fact_id})
    assert fact_id not in [f.id for f in orch.admin.facts.list(user)]
    assert orch.admin.facts.history(user, fact_id).fact.deleted_at is not None
    check_error(client, "correct_fact", {"fact_id": others_fact, "text": "偷改"}, "fact_id")
    check_error(client, "forget_fact", {"fact_id": others_fact}, "fact_id")


def check_read_only(client: HeldClient, fact_id: str) -> None:
    from mcp_types import INVALID_REQUEST

    for tool, args in (("add_fact", {"text": "讨厌吃香菜"}), ("correct_fact", {"fact_id": fact_id, "text": "改"}),
                       ("forget_fact", {"fact_id": fact_id})):
        err = client.error(tool, args)
        assert err.error.code == INVALID_REQUEST and "service.allow_edit" in err.error.message, err.error
