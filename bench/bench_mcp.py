"""MCP bench (issue 40): a scripted agent session against a real `kioku serve`, offline, then the
latency of every tool call on a long-history user.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_mcp.py [--turns 100000] [--repeat 30]

What runs, all on 127.0.0.1: `engine.testing.fake_openai` as the upstream LLM, `kioku serve` (a
process) with the MCP endpoint at /mcp, and the official MCP SDK's client playing the model.

1. The session. Twelve past days of a user's chat are written with `record_turn(at=...)` (the chat
   endpoint records at the real clock, so only today's turns go through it), then today's turns go
   through `/v1/chat/completions`. Over MCP the "model" then asks what we talked about last Tuesday,
   searches a topic with no time word, corrects a fact it finds, and previews the next prompt before
   and after the correction. Each step prints what the tool answered and whether it is right.
2. Latency. A user with `--turns` diary turns (bench_prompt's builder: day files and a search index
   with synthetic passage vectors; queries are embedded by the real model) is asked every tool
   over MCP (HTTP, JSON-RPC, the service's auth) `--repeat` times. Printed beside each: the same
   question asked of the library in this process, and the embedding call alone (the query, one
   text, the real model), alternated one of each per round. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import shutil
import time
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from harness import NOW, TZ, character_folder, offline_config, options, percentiles
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engine.orchestrator import MemoryOrchestrator
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.serve import KiokuServe
from engine.timerange import named_range

TOKEN = "bench-mcp-token-0123456789"
MIRROR = "library-copy"
"""The data folder's copy (inside it, not under agents/) that the in-process library answers from."""
USER, BIG = "linzhou", "bench"
PAST = [
    ("今天和同事坐缆车去上城看雾", "雾大的话缆车会停，记得看时间。"),
    ("我家猫小白又把花盆打翻了", "小白太调皮了！花还好吗？"),
    ("去夜市街吃了豌杂面，辣得直冒汗", "下次少放点辣油～"),
    ("在家画了一天的海报，腰都酸了", "辛苦啦，画完了吗？"),
    ("下雨了没带伞，在你这儿躲了一下午", "茶馆里一直有备用的伞。"),
    ("去老码头看陈伯摆渡，他教我打绳结", "陈伯的绳结可是一绝。"),
    ("今天开始学吉他了，手指好疼", "刚开始都这样，坚持一周就好。"),
    ("江边在准备灯会了，兔子灯挂了一排", "那是我糊的兔子灯哦！"),
    ("I went running by the river this morning", "How far did you go?"),
    ("工作室接了个新项目，要做一套茶包装", "要不要用我们茶馆当灵感？"),
    ("周末想去山上的旧书市", "帮我留意一下老版的诗集吧。"),
    ("今天好累，只想喝杯热茶", "先坐下，我给你泡一杯。"),
]
"""One topic a day, from twelve days ago to yesterday (two turns each)."""
TODAY = ["我最喜欢喝桂花乌龙了", "今天工作室好忙", "晚上想来茶馆坐坐"]


def main() -> None:
    args = options(__doc__, turns=100_000, repeat=30)
    from engine.runtime import configure_threads

    configure_threads()
    with character_folder() as data, FakeOpenAIServer() as upstream:
        now = datetime.now(TZ).replace(microsecond=0)
        config = offline_config(data)
        t = time.perf_counter()
        with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
            days = write_past(orch, now)
        print(f"wrote {len(PAST)} past days of {USER!r} with record_turn(at=...) in {time.perf_counter() - t:.1f} s")
        if args.turns:
            from bench_prompt import write_diary

            t = time.perf_counter()
            write_diary(data, BIG, args.turns, end=NOW - timedelta(days=1))
            with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
                for fact in ("喜欢喝桂花乌龙", "养了一只叫小白的猫", "在设计工作室上班"):
                    orch.admin.facts.add(BIG, fact)
            # The library's side of the comparison reads a copy: two processes opening one user's
            # files would each keep a search index (the second a private one, rebuilt by embedding).
            shutil.copytree(data / "agents", data / MIRROR / "agents")
            print(f"wrote {args.turns:,} diary turns of {BIG!r} and their search index in {time.perf_counter() - t:.0f} s")
        config_file = write_config(data, upstream.base_url)
        with KiokuServe(config_file, env={"KIOKU_API_TOKEN": TOKEN}, log_file=data / "serve.log") as served:
            print(f"kioku serve on {served.url}; MCP at {served.url}/mcp")
            session(served.url, now, days)
            if args.turns:
                latency(served.url, data, args.turns, args.repeat)


def write_past(orch: MemoryOrchestrator, now: datetime) -> dict[str, str]:
    """The past days (each topic's first line -> its day)."""
    days = {}
    for i, (said, answer) in enumerate(PAST):
        day = (now - timedelta(days=len(PAST) - i)).replace(hour=20, minute=5, second=0)
        orch.record_turn(said, answer, user_id=USER, at=day)
        orch.record_turn("嗯，就是这样", "好呀，下次再聊。", user_id=USER, at=day + timedelta(minutes=20))
        days[said] = day.date().isoformat()
    orch.flush(120)
    return days


def write_config(data: Path, upstream_url: str) -> Path:
    import yaml

    path = data / "config.yaml"
    path.write_text(yaml.safe_dump({
        "data_dir": str(data),
        "llm": {"backend": "openai", "base_url": upstream_url, "model": "fake-model", "max_retries": 0},
        "memory_llm": {"backend": "none"},
        "service": {"allow_edit": True},
    }, allow_unicode=True), encoding="utf-8")
    return path


@asynccontextmanager
async def mcp(url: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            yield client


# -- 1. the session ------------------------------------------------------------------------------


def session(url: str, now: datetime, days: dict[str, str]) -> None:
    print("\n== the agent session ==")
    for text in TODAY:
        r = httpx.post(f"{url}/v1/chat/completions", timeout=60, headers={"Authorization": f"Bearer {TOKEN}"},
                       json={"model": "xiaoyue", "user": USER, "messages": [{"role": "user", "content": text}]})
        r.raise_for_status()
    print(f"today: {len(TODAY)} turns through /v1/chat/completions (fake upstream), e.g. {TODAY[0]!r}")
    checks: list[tuple[str, bool]] = []
    anyio.run(_session, url, now, days, checks)
    print("\nchecks: " + ", ".join(f"{name} {'PASS' if ok else 'FAIL'}" for name, ok in checks))


async def _session(url: str, now: datetime, days: dict[str, str], checks: list[tuple[str, bool]]) -> None:
    async with mcp(url) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        print(f"tools: {', '.join(tools)}")

        async def ask(tool: str, arguments: dict[str, Any], *, lines: int = 8) -> Any:
            t = time.perf_counter()
            result = await client.call_tool(tool, {"user": USER, **arguments})
            ms = (time.perf_counter() - t) * 1000
            print(f"\nmodel -> {tool}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})   [{ms:.0f} ms]")
            text = result.content[0].text.splitlines()
            print("\n".join("   " + line for line in text[:lines]) + ("\n   ..." if len(text) > lines else ""))
            return result.structured_content

        tuesday = named_range("last Tuesday", TZ, now=now).start.date().isoformat()
        expected = [said for said, day in days.items() if day == tuesday]
        found = await ask("recall", {"time": "what did we talk about last Tuesday?"})
        checks.append(("recall last Tuesday", bool(expected) and any(t["user"] == expected[0] for t in found["turns"])))

        found = await ask("search_memory", {"query": "灯会的兔子灯"}, lines=6)
        top = found["diary"][0]["turn"]["user"] if found["diary"] else ""
        checks.append(("search without a time word", "灯会" in top))

        fact = await _wait_for_fact(client, "桂花乌龙")
        before = await ask("preview_prompt", {"message": "你还记得我平时喜欢喝什么吗？"}, lines=4)
        await ask("list_facts", {}, lines=4)
        await ask("correct_fact", {"fact_id": fact, "text": "最近改喝茉莉花茶了，不再喝桂花乌龙"}, lines=2)
        after = await ask("preview_prompt", {"message": "你还记得我平时喜欢喝什么吗？"}, lines=4)
        core = [h["text"] for h in after["hits"] if h["store"] == "core"]
        print(f"\ncore facts in the prompt before: {[h['text'] for h in before['hits'] if h['store'] == 'core']}")
        print(f"core facts in the prompt after:  {core}")
        checks.append(("the next prompt changed", any("茉莉花茶" in c for c in core) and before["messages"] != after["messages"]))


async def _wait_for_fact(client: Client, words: str, timeout: float = 60) -> str:
    """The id of the fact the chat turn produced (core memory writes it in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = (await client.call_tool("list_facts", {"user": USER})).structured_content["facts"]
        for fact in listed:
            if words in fact["text"]:
                return fact["id"]
        await anyio.sleep(0.2)
    raise RuntimeError(f"no fact with {words!r} appeared within {timeout:g} s")


# -- 2. latency ----------------------------------------------------------------------------------


def latency(url: str, data: Path, turns: int, repeat: int) -> None:
    print(f"\n== latency per tool call, user with {turns:,} diary turns (MCP over HTTP to kioku serve) ==")
    orch = MemoryOrchestrator.from_config("xiaoyue", config=offline_config(data / MIRROR))
    try:
        t = time.perf_counter()
        anyio.run(_open_in_server, url)
        print(f"the server opened the {turns:,}-turn user in {time.perf_counter() - t:.1f} s (first recall)")
        t = time.perf_counter()
        orch.store("diary").backend.user(BIG).terms.wait()
        # The open's background work (the rare terms' context vectors) runs in the server too:
        # waited for here, and as long again for the server's, before anything is timed.
        waited = time.perf_counter() - t
        time.sleep(waited)
        print(f"this process opened its copy in {waited:.1f} s (background work included); waited as long for the server")
        fact = orch.admin.facts.list(BIG)[0].id
        anyio.run(_latency, url, orch, _calls(orch, fact, NOW.isoformat()), repeat)
    finally:
        orch.close()


async def _open_in_server(url: str) -> None:
    async with mcp(url) as client:
        await client.call_tool("recall", {"user": BIG, "time": "昨天", "now": NOW.isoformat()})


def _calls(orch: MemoryOrchestrator, fact: str, at: str) -> list[tuple[str, str, dict[str, Any], Any, str]]:
    """(label, tool, arguments, the same question asked of the library, the text the tool embeds)."""
    admin = orch.admin

    def when(text: str):
        return named_range(text, orch.tz, now=NOW)

    month = when("上个月")
    texts = iter(["在设计工作室上班", "在设计工作室做包装设计"] * 10_000)
    return [
        ("search_memory (no time)", "search_memory", {"query": "我想坐缆车去上城看看", "now": at},
         lambda: admin.search_memory(BIG, "我想坐缆车去上城看看", k=10, now=NOW), "我想坐缆车去上城看看"),
        ("search_memory time=上个月", "search_memory", {"query": "猫", "time": "上个月", "now": at},
         lambda: admin.search_memory(BIG, "猫", start=month.start, end=month.end, k=10, now=NOW), "猫"),
        ("recall 昨天 (turns)", "recall", {"time": "昨天", "now": at},
         lambda: admin.recall(BIG, *_span(when("昨天"))), None),
        ("recall 上个月 (digests)", "recall", {"time": "上个月", "now": at},
         lambda: admin.recall(BIG, month.start, month.end), None),
        ("list_facts", "list_facts", {}, lambda: admin.facts.list(BIG), None),
        ("correct_fact", "correct_fact", {"fact_id": fact, "text": "<next>"},
         lambda: admin.facts.edit(BIG, fact, next(texts)), None),
        ("lookup_world_book", "lookup_world_book", {"text": "阿黄又睡在旧书堆上了", "now": at},
         lambda: admin.try_world_book("阿黄又睡在旧书堆上了", now=NOW), "阿黄又睡在旧书堆上了"),
        ("preview_prompt", "preview_prompt", {"message": "昨天我们聊了什么？", "now": at},
         lambda: orch.build_prompt("昨天我们聊了什么？", user_id=BIG, now=NOW), "昨天我们聊了什么？"),
    ]


def _span(r) -> tuple[datetime, datetime]:  # noqa: ANN001
    return r.start, r.end


async def _latency(url: str, orch: MemoryOrchestrator, calls: list, repeat: int) -> None:
    texts = iter(["在设计工作室上班啦", "在设计工作室做茶包装"] * 10_000)
    async with mcp(url) as client:
        for label, tool, arguments, library, embedded in calls:
            args = {"user": BIG, **arguments}
            for _ in range(3):  # warm: the first pass over a range's day files reads them from disk
                library()
                await client.call_tool(tool, _fill(args, texts) if tool == "correct_fact" else args)
            over, lib, emb = [], [], []
            for _ in range(repeat):  # alternated, one of each per round (a shared host drifts)
                if embedded:
                    t = time.perf_counter()
                    orch.embedder.embed([embedded], role="query")
                    emb.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                library()
                lib.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                result = await client.call_tool(tool, _fill(args, texts) if tool == "correct_fact" else args)
                over.append((time.perf_counter() - t) * 1000)
                assert not result.is_error, result.content
            _report(label, over, lib, emb)
    print("(search_memory makes one embedding call, a batch: the query and the stores' extra pieces (world-book "
          "sentences, the diary's residual), as a prompt does; the column beside it times one text alone)")


def _fill(args: dict[str, Any], texts) -> dict[str, Any]:  # noqa: ANN001
    return {**args, "text": next(texts)}


def _report(label: str, over: list[float], lib: list[float], emb: list[float]) -> None:
    p50, p95 = percentiles(over)
    l50, _ = percentiles(lib)
    line = f"{label:<26} MCP p50 {p50:6.1f} p95 {p95:6.1f} ms | library p50 {l50:6.1f} ms (MCP adds {p50 - l50:4.1f})"
    if emb:
        e50, _ = percentiles(emb)
        line += f" | one embedding call p50 {e50:5.1f} ms (MCP = {p50 / e50:4.2f}x)"
    print(line)


if __name__ == "__main__":
    main()
