"""The short-term window and rolling summary (BrainMemory): overflow, restart, idempotence, crashes."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.llm import OpenAIChatLLM, ScriptedLLM
from engine.config import ShortTermConfig
from engine.errors import DataFileError, LLMError
from engine.testing.fake_openai import Delay, Garbage, Status
from engine.paths import character_paths
from engine.prompts import Prompts
from engine.shortterm import FileBackend, ShortTermMemory, extractive_summary, summarize
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


def test_torn_last_line_is_skipped_by_readers_and_set_aside_by_the_next_write(tmp_path):
    mem = make_memory(tmp_path)
    mem.add_turn(turn(1))
    history = tmp_path / "agents/c/users/u1/history.yaml"
    with open(history, "a", encoding="utf-8") as f:
        f.write('- {"id": "t002:u", "role": "us')  # a crash mid-append
    torn = history.read_bytes()
    restarted = make_memory(tmp_path)
    assert [m.id for m in restarted.state("u1").messages] == ["t001:u", "t001:a"]
    assert history.read_bytes() == torn and not history.with_name("history.yaml.corrupt").exists()  # readers never write
    restarted.add_turn(turn(3))
    assert "t002:u" in history.with_name("history.yaml.corrupt").read_text(encoding="utf-8")
    assert [m.id for m in make_memory(tmp_path).state("u1").messages] == ["t001:u", "t001:a", "t003:u", "t003:a"]


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


def test_recording_turns_never_rewrites_the_summary_file(tmp_path):
    """BrainMemory's is_dirty: brain.yaml is written when the summary changes (a fold), never by the
    per-turn appends, which re-derive last_history_id from history.yaml instead."""
    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=lambda m: "摘要。"))
    for i in range(10):
        mem.add_turn(turn(i))
    mem.fold("u1", now=T0)
    brain_file = tmp_path / "agents/c/users/u1/brain.yaml"
    before = (brain_file.stat().st_mtime_ns, brain_file.read_bytes())
    mem.add_turn(turn(10))
    mem.add_turn(turn(11))
    assert (brain_file.stat().st_mtime_ns, brain_file.read_bytes()) == before
    assert mem.state("u1").brain.last_history_id == "t011:a"
    mem.fold("u1", now=T0)
    assert brain_file.read_bytes() != before[1]  # the fold (summarized_through moved on) did write it
    assert mem.summary("u1") == "摘要。"


# -- text that splits lines, and lone surrogates ---------------------------------------------------

ODD_TEXTS = {
    "line-separator": "第一行\u2028第二行",
    "paragraph-separator": "a\u2029b",
    "next-line": "x\u0085y",
    "lone-high-surrogate": "坏\ud800字",
    "lone-low-surrogate": "\udc00结尾",
    "mixed": "\r\x0b\x0c\x1c\u2028\ud83d 😀 \u2029",
}


@pytest.mark.parametrize("text", list(ODD_TEXTS.values()), ids=list(ODD_TEXTS))
def test_odd_text_round_trips_through_window_and_summary(tmp_path, text):
    """A message holding a line separator or a lone surrogate comes back identical after a restart,
    from the window and from the summary (offline fallback: it keeps first sentences verbatim)."""
    mem = make_memory(tmp_path, max_messages=2)
    odd = Turn(id="t1", user_id="u1", at=T0, user=text, assistant=text + "!")
    mem.add_turn(odd)
    assert [m.content for m in make_memory(tmp_path).state("u1").messages] == [text, text + "!"]
    mem.add_turn(turn(2))
    mem.fold("u1", now=T0)
    restarted = make_memory(tmp_path)
    assert [m.id for m in restarted.state("u1").messages] == ["t002:u", "t002:a"]
    assert text.strip() in restarted.summary("u1")  # (the summary's edges are trimmed)
    assert not restarted.state("u1").problems


def test_odd_text_round_trips_through_an_llm_summary(tmp_path):
    summary = "总结：" + "".join(ODD_TEXTS.values()) + "完"
    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=lambda m: summary), max_messages=2)
    for i in range(3):
        mem.add_turn(turn(i))
    mem.fold("u1", now=T0)
    assert make_memory(tmp_path).summary("u1") == summary
    brain = (tmp_path / "agents/c/users/u1/brain.yaml").read_text(encoding="utf-8")
    assert "\ufffd" in brain  # the readable field shows a replacement character for the lone surrogates


# -- a broken summary file -------------------------------------------------------------------------

BROKEN_BRAINS = {
    "summary-is-a-list": ("historical_summary: [1, 2]\nsummarized_through: t1:a\n", 1, "historical_summary must be text"),
    "summary-is-a-mapping": ("updated_at: null\nhistorical_summary:\n  a: 1\n", 2, "historical_summary must be text"),
    "id-is-a-list": ("historical_summary: ok\nsummarized_through: [t1]\n", 2, "summarized_through must be text"),
    "not-a-mapping": ("- historical_summary\n", 1, "expected a mapping"),
    "bad-yaml": ("historical_summary: 'unclosed\n", 2, "brain.yaml:"),
}


@pytest.mark.parametrize("text,line,reason", list(BROKEN_BRAINS.values()), ids=list(BROKEN_BRAINS))
def test_broken_brain_is_named_with_file_and_line_and_never_overwritten(tmp_path, text, line, reason):
    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=lambda m: "新摘要。"))
    for i in range(10):
        mem.add_turn(turn(i))
    brain_file = tmp_path / "agents/c/users/u1/brain.yaml"
    brain_file.write_text(text, encoding="utf-8")
    state = mem.state("u1")
    assert state.brain_ok is False and state.brain.historical_summary == ""
    assert len(state.messages) == 20  # the window still loads
    (problem,) = state.problems
    assert reason in problem and (f"brain.yaml:{line}:" in problem)
    with pytest.raises(DataFileError, match="unreadable summary"):
        mem.fold("u1", now=T0)
    assert brain_file.read_text(encoding="utf-8") == text


# -- folds: no LLM call under the lock, check-and-set ----------------------------------------------


def test_a_slow_summary_does_not_hold_up_recording_and_keeps_what_arrived_meanwhile(tmp_path):
    import threading

    started, release = threading.Event(), threading.Event()

    def slow(messages):
        started.set()
        assert release.wait(10)
        return "旅人去了江边。"

    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=slow))
    for i in range(5):
        mem.add_turn(turn(i))
    folding = threading.Thread(target=mem.fold, args=("u1",), kwargs={"now": T0})
    folding.start()
    assert started.wait(10)
    mem.add_turn(turn(5))  # would wait for the LLM if the fold held the lock across the call
    mem.add_turn(turn(6))
    assert not release.is_set()
    release.set()
    folding.join(10)
    ids = [m.id for m in mem.state("u1").messages]
    assert ids[-4:] == ["t005:u", "t005:a", "t006:u", "t006:a"]
    assert mem.summary("u1") == "旅人去了江边。"


def test_a_fold_whose_base_changed_is_refused(tmp_path):
    mem = make_memory(tmp_path, llm=ScriptedLLM(rule=lambda m: f"摘要{len(m)}"))
    for i in range(5):
        mem.add_turn(turn(i))
    stale = mem.prepare_fold("u1", now=T0)
    assert mem.fold("u1", now=T0) is not None  # another worker folded first
    after = mem.state("u1")
    assert mem.apply_fold("u1", stale) is False
    assert mem.state("u1").messages == after.messages and mem.summary("u1") == after.brain.historical_summary
    mem.remove_turn("u1", "t004")
    for i in range(5, 9):
        mem.add_turn(turn(i))
    fresh = mem.prepare_fold("u1", now=T0)
    mem.remove_turn("u1", fresh.evicted_ids[0].rpartition(":")[0])  # a forget took a folded message away
    assert mem.apply_fold("u1", fresh) is False


@pytest.mark.parametrize("llm", [None, "echo"], ids=["offline", "llm-echoes-its-input"])
def test_summary_is_bounded_in_tokens_even_without_spaces(tmp_path, llm):
    echo = ScriptedLLM(rule=lambda msgs: msgs[-1]["content"]) if llm else None
    mem = make_memory(tmp_path, llm=echo, max_messages=2, summary_max_tokens=300)
    mem.add_turn(Turn(id="big", user_id="u1", at=T0, user="a" * 300_000, assistant="好" * 50_000))
    mem.add_turn(turn(1))
    mem.fold("u1", now=T0)
    assert 0 < count_tokens(mem.summary("u1")) <= 300


# -- chats ---------------------------------------------------------------------------------------

CHAT_IDS = {
    "uuid": ("3f1c9a2e-8d7b-4c55-9a1e-0b6f2d4c8e11", "chats/3f1c9a2e-8d7b-4c55-9a1e-0b6f2d4c8e11"),
    "traversal": ("../../../etc", "chats/~"),
    "chinese": ("小月的聊天", "chats/~"),
    "upper-case": ("Chat", "chats/~"),
    "windows-device": ("con", "chats/~"),
    "slash": ("a/b", "chats/~"),
}


@pytest.mark.parametrize("chat,folder", list(CHAT_IDS.values()), ids=list(CHAT_IDS))
def test_each_chat_has_its_own_window_inside_the_users_folder(tmp_path, chat, folder):
    mem = make_memory(tmp_path)
    mem.add_turn(turn(1))
    other = Turn(id="c1", user_id="u1", at=T0, user="别的聊天", assistant="好", chat_id=chat)
    mem.add_turn(other)
    user_root = tmp_path / "agents/c/users/u1"
    assert [m.id for m in mem.state("u1").messages] == ["t001:u", "t001:a"]  # default chat: the old layout
    assert (user_root / "history.yaml").is_file()
    assert [m.content for m in make_memory(tmp_path).state("u1", chat_id=chat).messages] == ["别的聊天", "好"]
    (history,) = [p for p in user_root.rglob("history.yaml") if p.parent != user_root]
    assert history.parent.parent == user_root / "chats"
    assert str(history.parent.relative_to(user_root)).startswith(folder)


@pytest.mark.parametrize("bad", ["", "   ", "x" * 257, None, 7], ids=["empty", "spaces", "too-long", "none", "int"])
def test_unusable_chat_ids_are_refused(bad):
    from engine.errors import InvalidIdError
    from engine.shortterm import chat_folder

    with pytest.raises(InvalidIdError, match="chat id"):
        chat_folder(bad)


@pytest.mark.parametrize(
    "messages, max_words, expected",
    [
        # Every line whole: the oldest line that no longer fits is left out, not cut mid-sentence.
        ([("user", "我去了江边。然后回家。"), ("assistant", "真好！"), ("user", "明天还去。")], 16,
         "小月: 真好！\n旅人: 明天还去。"),
        ([("user", "I walked by the river. Then home."), ("assistant", "Nice!")], 20,
         "旅人: I walked by the river.\n小月: Nice!"),
        # One first sentence longer than the bound keeps its newest part rather than nothing.
        ([("user", "一二三四五六七八九十")], 5, "六七八九十"),
    ],
    ids=["zh-oldest-line-left-out", "en-all-fit", "one-long-sentence"],
)
def test_the_offline_extract_keeps_whole_named_lines(messages, max_words, expected):
    got = extractive_summary("", [{"role": r, "content": c} for r, c in messages], max_words, user="旅人", char="小月")
    assert got == expected
