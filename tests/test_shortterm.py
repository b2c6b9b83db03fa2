"""The short-term window and rolling summary (BrainMemory): overflow, restart, idempotence, crashes."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.llm import OpenAIChatLLM, ScriptedLLM
from engine.config import ShortTermConfig
from engine.errors import LLMError
from engine.fake_openai import Delay, Garbage, Status
from engine.paths import character_paths
from engine.prompts import Prompts
from engine.shortterm import FileBackend, ShortTermMemory, summarize
from engine.stores.base import Turn
from engine.tokens import count_tokens

TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 11, 20, 20, 0, tzinfo=TZ)


def make_memory(tmp_path, llm=None, **overrides):
    config = ShortTermConfig(**{"max_messages": 6, "max_tokens": 400, "summary_max_words": 80, **overrides})
    paths = character_paths(tmp_path, "c")
    return ShortTermMemory(FileBackend(paths), config=config, llm=llm, prompts=Prompts("zh"), user_name="旅人", char_name="小月")


def turn(i, user_id="u1"):
    return Turn(id=f"t{i:03d}", user_id=user_id, at=T0 + timedelta(minutes=i), user=f"第{i}句：我去了江边散步。", assistant=f"回答{i}：真好。")


def test_overflow_folds_into_summary_and_restart_restores(tmp_path):
    llm = ScriptedLLM(rule=lambda msgs: "旅人这几天常去江边散步，小月都回应了。")
    mem = make_memory(tmp_path, llm=llm)
    for i in range(10):
        mem.add_turn(turn(i))
        mem.fold("u1", now=T0)
    window = mem.window("u1")
    assert mem.summary("u1") == "旅人这几天常去江边散步，小月都回应了。"
    ids = [m.id for m in window]
    assert ids[0] == "t007:u" and ids[-1] == "t009:a"  # evicted turns left the window
    assert len(window) <= 6 and sum(m.tokens for m in window) <= 400
    assert llm.calls, "the memory LLM wrote the summary"

    restarted = make_memory(tmp_path, llm=None)
    assert restarted.summary("u1") == mem.summary("u1")
    assert [m.id for m in restarted.window("u1")] == ids


def test_same_turn_twice_is_a_no_op(tmp_path):
    mem = make_memory(tmp_path)
    assert mem.add_turn(turn(1)) is True
    assert mem.add_turn(turn(1)) is False
    assert [m.id for m in mem.state("u1").messages] == ["t001:u", "t001:a"]


def test_tokens_are_stored_with_each_message(tmp_path):
    mem = make_memory(tmp_path)
    mem.add_turn(turn(1))
    m = mem.state("u1").messages[0]
    assert m.tokens == count_tokens(m.content) > 0
    assert '"tokens": ' in (tmp_path / "agents/c/users/u1/history.yaml").read_text(encoding="utf-8")


def test_llm_failure_leaves_extractive_fallback_and_nothing_lost(tmp_path):
    mem = make_memory(tmp_path, llm=ScriptedLLM(replies=[LLMError("down")] * 20))
    for i in range(10):
        mem.add_turn(turn(i))
    update = mem.fold("u1", now=T0)
    assert update is not None and not update.used_llm and "down" in update.error
    summary = mem.summary("u1")
    assert "第0句" in summary or "第6句" in summary
    assert len(mem.window("u1")) <= 6


@pytest.mark.parametrize("failure", [Status(500), Garbage(), Delay(3.0)], ids=["http-500", "garbage", "timeout"])
def test_real_http_llm_failures_fall_back(tmp_path, openai_server, failure):
    openai_server.push(*[failure] * 5)
    llm = OpenAIChatLLM(model="m", base_url=openai_server.base_url, timeout_s=0.5, max_retries=0)
    mem = make_memory(tmp_path, llm=llm)
    for i in range(10):
        mem.add_turn(turn(i))
    update = mem.fold("u1", now=T0)
    assert update is not None and update.used_llm is False and update.error
    assert mem.summary("u1")  # the extractive fallback is in place
    assert [m.id for m in mem.state("u1").messages][-1] == "t009:a"


def test_real_http_llm_success(tmp_path, openai_server):
    openai_server.push("旅人常去江边。")
    llm = OpenAIChatLLM(model="m", base_url=openai_server.base_url, timeout_s=5, max_retries=0)
    mem = make_memory(tmp_path, llm=llm)
    for i in range(5):
        mem.add_turn(turn(i))
    mem.fold("u1", now=T0)
    assert mem.summary("u1") == "旅人常去江边。"
    sent = openai_server.requests[-1]["messages"][0]["content"]
    assert "第0句" in sent and "旅人" in sent


def test_long_text_is_summarised_in_windows_and_always_stops(tmp_path):
    # A model that never shrinks its input must not loop forever.
    llm = ScriptedLLM(rule=lambda msgs: msgs[-1]["content"])
    messages = [{"role": "user", "content": "很长的一段话，" * 200} for _ in range(5)]
    update = summarize(messages, previous="", llm=llm, prompts=Prompts("zh"), max_words=50, input_tokens=600)
    assert update.used_llm and update.llm_calls == len(llm.calls)
    # One call per overlapping 300-token window (step 270), plus the final merge: one round.
    text_tokens = count_tokens("\n".join("user: " + m["content"] for m in messages))
    assert len(llm.calls) <= text_tokens // 270 + 2
    assert count_tokens(update.text) <= 2 * 50 * 2


def test_torn_last_line_is_set_aside(tmp_path):
    mem = make_memory(tmp_path)
    mem.add_turn(turn(1))
    history = tmp_path / "agents/c/users/u1/history.yaml"
    with open(history, "a", encoding="utf-8") as f:
        f.write('- {"id": "t002:u", "role": "us')  # a crash mid-append
    restarted = make_memory(tmp_path)
    assert [m.id for m in restarted.state("u1").messages] == ["t001:u", "t001:a"]
    assert "t002:u" in history.with_name("history.yaml.corrupt").read_text(encoding="utf-8")


def test_crash_between_brain_and_history_write_drops_folded_messages(tmp_path):
    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=lambda m: "摘要。"))
    for i in range(10):
        mem.add_turn(turn(i))
    history = tmp_path / "agents/c/users/u1/history.yaml"
    before = history.read_text(encoding="utf-8")
    mem.fold("u1", now=T0)
    history.write_text(before, encoding="utf-8")  # as if the rewrite never happened
    restarted = make_memory(tmp_path)
    assert [m.id for m in restarted.state("u1").messages][0] == "t007:u"


def test_hand_written_line_without_a_count_is_counted(tmp_path):
    mem = make_memory(tmp_path)
    history = tmp_path / "agents/c/users/u1/history.yaml"
    history.parent.mkdir(parents=True)
    history.write_text("- {id: h1, role: user, content: 我今天去了江边散步，看到了很多雾。}\n", encoding="utf-8")
    (m,) = mem.state("u1").messages
    assert m.tokens == count_tokens("我今天去了江边散步，看到了很多雾。")


def test_an_unchanged_brain_is_not_rewritten(tmp_path):
    """BrainMemory's is_dirty: a window rewrite with the brain as loaded leaves brain.yaml alone."""
    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=lambda m: "摘要。"))
    for i in range(10):
        mem.add_turn(turn(i))
    mem.fold("u1", now=T0)
    brain_file = tmp_path / "agents/c/users/u1/brain.yaml"
    before = brain_file.stat().st_ino  # atomic writes replace the file, so a write changes the inode
    state = mem.backend.load("u1")
    mem.backend.replace("u1", state.messages, state.brain)
    assert brain_file.stat().st_ino == before
    assert mem.summary("u1") == "摘要。"
