"""Conversation or housekeeping (issue 13 item 1): the pure decision on every fixture request and on
cases made to look alike, then through HTTP (override header, metadata, config patterns)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from engine.errors import ConfigError
from engine.fake_openai import FakeOpenAIServer
from engine.service.app import create_app
from engine.service.errors import ServiceError
from engine.service.housekeeping import classify, compile_patterns
from engine.service.testing import ServiceThread, copy_demo, service_config

FIXTURES = Path(__file__).parent / "fixtures" / "frontends"
TOKEN = "hk-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def fixture_lines() -> list:
    out = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            out.append(pytest.param(data, id=f"{path.stem}-{data['seq']}-{data['note'][:30]}"))
    return out


def pairs(body):
    out = []
    for m in body["messages"]:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text") or "" for p in content if p.get("type") == "text")
        out.append((m["role"], content.replace("{{reply:", "reply to ").replace("}}", "")))
    return out


@pytest.mark.parametrize("line", fixture_lines())
def test_every_fixture_request(line):
    assert classify(pairs(line["body"])).kind == line["expect"]["request"]


CONVERSATION = [
    ([("user", "帮我想个标题吧，我在写一篇关于雾川镇的小说。")], "asks for a title in words of its own"),
    ([("user", "Task: remember that I hate coriander.")], "Task without the ### heading"),
    ([("user", "我们之前聊过 ### Task: 这种格式吗？")], "### Task: not at the start"),
    ([("system", "persona"), ("user", "hi"), ("assistant", "hello"), ("user", "how are you?"),
      ("system", "[Stay in character]")], "post-history instruction after a new user message"),
    ([("user", "hi"), ("assistant", "hello"), ("system", "[Continue your last message without repeating its original content.]")],
     "continue nudge"),
    ([("user", "hi"), ("assistant", "hel")], "assistant prefill"),
    ([("system", "You are a helpful assistant."), ("user", "总结一下今天的新闻")], "a user asking for a summary"),
]
HOUSEKEEPING = [
    ([("user", "  ### Task:\nSuggest an emoji")], "open-webui task prompt"),
    ([("system", "Available Tools: [{\"name\": \"x\"}]\n\nReturn {\"tool_calls\": []}"), ("user", "Query: hi")],
     "open-webui tool selection"),
    ([("user", "hi"), ("assistant", "hello"), ("system", "[Pause your roleplay. Summarize the chat.]")],
     "sillytavern summary"),
    ([("user", "hi"), ("assistant", "hello"), ("system", "What is the mood of the scene? One word.")],
     "instruction after an answered turn (quiet prompt)"),
    ([("system", "Summarize our discussion briefly in 50 characters or less to use as a prompt for future context.")],
     "nextchat summary"),
]


@pytest.mark.parametrize(("messages", "why"), CONVERSATION, ids=[w for _, w in CONVERSATION])
def test_look_alikes_stay_conversation(messages, why):
    assert classify(messages).kind == "conversation", why


@pytest.mark.parametrize(("messages", "reason"), HOUSEKEEPING, ids=[r for _, r in HOUSEKEEPING])
def test_housekeeping_shapes(messages, reason):
    decision = classify(messages)
    assert (decision.kind, decision.reason) == ("housekeeping", reason)
    assert decision.reason.isascii()


def test_override_and_config_patterns():
    title = [("user", "### Task:\nGenerate a title")]
    assert classify(title, override="conversation").kind == "conversation"
    assert classify([("user", "hi")], override=" Housekeeping ").kind == "housekeeping"
    with pytest.raises(ServiceError, match="must be 'conversation' or 'housekeeping'"):
        classify([("user", "hi")], override="maybe")
    rules = compile_patterns([r"^\[OOC:", r"生成.*标题"])
    assert classify([("user", "[OOC: what is your model?]")], rules=rules).reason == "config pattern 1"
    assert classify([("user", "请为这段对话生成一个标题")], rules=rules).reason == "config pattern 2"
    with pytest.raises(ConfigError, match=r"housekeeping_patterns\[0\]: '\(' is not a valid regex"):
        compile_patterns(["("])


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    data_dir = copy_demo(tmp_path_factory.mktemp("hk"))
    with FakeOpenAIServer() as upstream:
        config = service_config(data_dir, upstream.base_url, token=TOKEN,
                                service={"housekeeping_patterns": [r"^\[OOC:"]})
        with ServiceThread(create_app(config=config, embedder=embedder)) as server:
            yield server, upstream, data_dir


def history(data_dir, user) -> list[str]:
    path = data_dir / "agents/xiaoyue/users" / user / "history.yaml"
    return [m["content"] for m in yaml.safe_load(path.read_text(encoding="utf-8")) or []] if path.exists() else []


@pytest.mark.parametrize(
    ("extra", "headers", "message", "kind", "reason"),
    [({}, {}, "### Task:\nGenerate a concise title", "housekeeping", "open-webui task prompt"),
     ({}, {"X-Kioku-Request": "housekeeping"}, "写一首关于雾的诗", "housekeeping", "explicit"),
     ({"metadata": {"kioku_request": "housekeeping"}}, {}, "写一首关于雨的诗", "housekeeping", "explicit"),
     ({}, {"X-Kioku-Request": "conversation"}, "### Task:\n我真的想聊这个", "conversation", "explicit"),
     ({}, {}, "[OOC: which model are you?]", "housekeeping", "config pattern 1"),
     ({}, {}, "今天雾好大", "conversation", "conversation turn")],
    ids=["builtin", "header", "metadata", "header-forces-conversation", "config-pattern", "plain"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_over_http(svc, extra, headers, message, kind, reason, stream):
    server, upstream, data_dir = svc
    user = f"hk-{abs(hash((message, stream))) % 10**8}"
    before = server.done.count
    r = httpx.post(f"{server.url}/v1/chat/completions", headers={**AUTH, **headers}, timeout=30,
                   json={"model": "xiaoyue", "user": user, "stream": stream,
                         "messages": [{"role": "user", "content": message}], **extra})
    assert r.status_code == 200, r.text
    assert server.done.wait_for(before + 1)
    assert (r.headers["x-kioku-request"], r.headers["x-kioku-request-reason"]) == (kind, reason)
    sent = upstream.requests[-1]["messages"]
    if kind == "housekeeping":
        assert sent == [{"role": "user", "content": message}]  # as the client sent it: no persona, no memory
        assert "x-kioku-turn-id" not in r.headers
        assert history(data_dir, user) == []
    else:
        assert len(sent) > 1 and message in history(data_dir, user)
