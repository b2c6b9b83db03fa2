"""The LLM seam against a real OpenAI-compatible server on 127.0.0.1."""

import pytest

from engine.adapters.llm import OpenAIChatLLM, ScriptedLLM
from engine.errors import LLMError
from engine.testing.fake_openai import Delay, Garbage, Reply, Status


def test_reply_and_request_shape(openai_server):
    llm = OpenAIChatLLM(model="deepseek-chat", base_url=openai_server.base_url, timeout_s=5, max_retries=0)
    openai_server.push(Reply("你好呀"))
    assert llm.complete([{"role": "user", "content": "你好"}]) == "你好呀"
    body = openai_server.requests[-1]
    assert body["model"] == "deepseek-chat" and body["messages"] == [{"role": "user", "content": "你好"}]


@pytest.mark.parametrize(
    "failure,match",
    [(Status(500), "HTTP 500"), (Status(401, "bad key"), "HTTP 401"), (Garbage(), "JSON|Error"), (Delay(2.0), "timed out"), (Reply("   "), "empty")],
    ids=["500", "401", "garbage", "timeout", "empty"],
)
def test_failures_become_llm_error(openai_server, failure, match):
    openai_server.push(failure)
    llm = OpenAIChatLLM(model="m", base_url=openai_server.base_url, timeout_s=0.5, max_retries=0)
    with pytest.raises(LLMError, match=match):
        llm.complete([{"role": "user", "content": "x"}])


def test_retries_are_in_one_place(openai_server):
    openai_server.push(Status(500), Reply("second time lucky"))
    llm = OpenAIChatLLM(model="m", base_url=openai_server.base_url, timeout_s=5, max_retries=1)
    assert llm.complete([{"role": "user", "content": "x"}]) == "second time lucky"
    assert len(openai_server.requests) == 2


def test_scripted_llm_queues_raises_and_records():
    llm = ScriptedLLM(replies=["a", LLMError("boom")], rule=lambda m: "rule")
    assert llm.complete([{"role": "user", "content": "1"}]) == "a"
    with pytest.raises(LLMError):
        llm.complete([{"role": "user", "content": "2"}])
    assert llm.complete([{"role": "user", "content": "3"}]) == "rule"
    assert [c[0]["content"] for c in llm.calls] == ["1", "2", "3"]
    with pytest.raises(LLMError):
        ScriptedLLM().complete([])
