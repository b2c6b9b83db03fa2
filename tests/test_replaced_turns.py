"""A turn being replaced never comes back into its own prompt (issue 38 item 1), through the
library's `build_prompt(exclude_turns=)`: not from the window, the diary or the facts it alone
stated; and a reply the client re-spaced (SillyTavern joins a continuation with a space) is still
recognised as already in the window. Each test has its control: without the exclusion, or with the
window's text as stored, the same line is in the prompt."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import copy_demo

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 20, 21, 0, tzinfo=TZ)


@pytest.fixture
def orch(tmp_path, embedder):
    config = load_config(None, env={}).model_copy(update={"data_dir": copy_demo(tmp_path / "data")})
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as o:
        yield o


def system_text(result) -> str:
    return "\n".join(m["content"] for m in result.messages if m["role"] == "system")


def test_the_replaced_turn_leaves_diary_window_and_facts(orch):
    old = orch.record_turn("我最喜欢的茶是桂花乌龙，每次来都点它。", "记住啦，桂花乌龙配雨天正好。", user_id="lin",
                           at=NOW - timedelta(days=2), turn_id="t-old")
    orch.record_turn("今天山上起雾了。", "雾川镇的雾最浓的时候连缆车都停了。", user_id="lin",
                     at=NOW - timedelta(minutes=5), turn_id="t-now")
    assert orch.flush(60)
    facts = [f for f in orch.admin.facts.list("lin") if "t-old" in f.source_turns]
    question = "我最喜欢喝什么茶来着？"

    kept = orch.build_prompt(question, user_id="lin", now=NOW)
    assert facts and all(f.text in system_text(kept) for f in facts)  # the control: its facts are shown

    result = orch.build_prompt(question, user_id="lin", now=NOW, exclude_turns={old.id})
    assert "配雨天正好" not in system_text(result) and "每次来都点它" not in system_text(result)
    assert not [h for h in result.hits if old.id in (h.meta.get("ids") or [h.meta.get("id")])]
    assert all(f.text not in system_text(result) for f in facts)


def test_the_replaced_turn_leaves_an_asked_day(orch):
    """Asked about its day, the day is shown without the replaced turn, and without it among the
    turns that day's own fill the budget with (the range path reads both)."""
    day = NOW - timedelta(days=2)
    for i, (user, reply) in enumerate([("我最喜欢的茶是桂花乌龙。", "记住啦，桂花乌龙配雨天正好。"),
                                       ("周末想去爬雾川山。", "记得带件外套。")]):
        orch.record_turn(user, reply, user_id="lin", at=day + timedelta(minutes=i), turn_id=f"d{i}")
    orch.record_turn("前天我说的那座山好高啊，爬完腿好酸。", "辛苦啦。", user_id="lin", at=NOW - timedelta(hours=20), turn_id="t1")
    assert orch.flush(60)
    for question in ("前天我们聊了什么？", "What did we talk about the day before yesterday?"):
        kept = orch.build_prompt(question, user_id="lin", now=NOW, chat_id="new")
        assert "配雨天正好" in system_text(kept), system_text(kept)  # the control
        result = orch.build_prompt(question, user_id="lin", now=NOW, chat_id="new", exclude_turns={"d0"})
        assert "配雨天正好" not in system_text(result) and "记得带件外套" in system_text(result), system_text(result)


def test_the_replaced_turn_leaves_the_stored_window(orch):
    orch.record_turn("第一句", "第一句的回答", user_id="lin", at=NOW - timedelta(minutes=3), turn_id="t1")
    orch.record_turn("第二句", "第二句的回答，将被重新生成", user_id="lin", at=NOW - timedelta(minutes=2), turn_id="t2")
    window = [m["content"] for m in orch.build_prompt("第二句", user_id="lin", now=NOW).messages]
    assert "第二句的回答，将被重新生成" in window
    window = [m["content"] for m in orch.build_prompt("第二句", user_id="lin", now=NOW, exclude_turns={"t2"}).messages]
    assert "第二句的回答，将被重新生成" not in window and "第一句的回答" in window


def test_a_respaced_reply_in_the_window_is_not_injected_again(orch):
    partial = "小月把围巾递给你：山顶风大，明早记得戴上这条灰色的围巾。"
    more = "（续写）然后她又往你手里塞了一个暖手宝。"
    orch.record_turn("我明天一早要去山顶拍日出。", partial + more, user_id="lin", at=NOW - timedelta(minutes=2),
                     turn_id="t-cont")
    assert orch.flush(60)
    question = "明早去山顶要带围巾吗？"
    stored = [{"role": "user", "content": "我明天一早要去山顶拍日出。"}, {"role": "assistant", "content": partial + more}]
    shown = [stored[0], {"role": "assistant", "content": partial + " " + more}]
    elsewhere = [{"role": "user", "content": "别的话题"}, {"role": "assistant", "content": "好呀"}]

    control = orch.build_prompt(question, user_id="lin", now=NOW, history=elsewhere)
    assert "灰色的围巾" in system_text(control)  # not in the window: the diary shows it
    for history in (stored, shown):
        result = orch.build_prompt(question, user_id="lin", now=NOW, history=history)
        assert "灰色的围巾" not in system_text(result)


def test_a_range_that_reaches_the_sitting_under_way_leaves_its_turns_to_the_conversation(orch):
    """Asked at 1 a.m., "last night" runs to 5: the sitting under way is in the range. Its turns are in
    the conversation already; the diary shows the rest of the night, not them again."""
    night = datetime(2026, 11, 21, 1, 0, tzinfo=TZ)
    orch.record_turn("今晚的月亮好圆。", "雾川镇的月亮总是特别亮。", user_id="lin", at=night - timedelta(hours=4), turn_id="n1")
    orch.record_turn("我刚下班，路过你的花店。", "欢迎光临，桂花刚开。", user_id="lin", at=night - timedelta(minutes=10),
                     turn_id="n2")
    assert orch.flush(60)
    sent = [{"role": "user", "content": "我刚下班，路过你的花店。"}, {"role": "assistant", "content": "欢迎光临，桂花刚开。"}]
    elsewhere = [{"role": "user", "content": "别的话题"}, {"role": "assistant", "content": "好呀"}]
    for question in ("昨天晚上我们聊了什么？", "What did we talk about last night?"):
        control = orch.build_prompt(question, user_id="lin", now=night, history=elsewhere)
        assert "桂花刚开" in system_text(control) and "月亮总是特别亮" in system_text(control), system_text(control)
        result = orch.build_prompt(question, user_id="lin", now=night, history=sent)
        assert "桂花刚开" not in system_text(result) and "月亮总是特别亮" in system_text(result), system_text(result)
        # an earlier sitting's turns stay though the client sends them back (SillyTavern sends the whole
        # chat): only the diary says when they were
        result = orch.build_prompt(question, user_id="lin", now=night, history=[
            {"role": "user", "content": "今晚的月亮好圆。"}, {"role": "assistant", "content": "雾川镇的月亮总是特别亮。"}, *sent])
        assert "月亮总是特别亮" in system_text(result), system_text(result)
