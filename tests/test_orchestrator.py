"""The orchestrator with small real test stores: parallel retrieval, time limits, failures,
one embedding call per prompt, fixed message order, budgets, sync and async entry points."""

import asyncio
import shutil
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from engine.config import load_config
from engine.errors import InvalidIdError
from engine.orchestrator import MemoryOrchestrator
from engine.stores.base import Hit

from counting import CountingEmbedder

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")


class KeywordStore:
    """Returns a hit for every keyword found in the message; records what it was given."""

    def __init__(self, name, facts, pieces=()):
        self.name, self.facts, self.pieces = name, facts, list(pieces)
        self.queries, self.turns = [], []

    def query_texts(self, message, recent):
        return list(self.pieces)

    def retrieve(self, query):
        self.queries.append(query)
        return [Hit(self.name, text, 0.5 + i / 10, f"keyword {k!r}") for i, (k, text) in enumerate(self.facts.items()) if k in query.message]

    def record(self, turn):
        self.turns.append(turn)

    def close(self):
        pass


class SlowStore(KeywordStore):
    def retrieve(self, query):
        time.sleep(2.0)
        return [Hit(self.name, "too late", 1.0, "slow")]


class BrokenStore(KeywordStore):
    def retrieve(self, query):
        raise OSError("disk on fire")

    def record(self, turn):
        raise OSError("cannot write")


@pytest.fixture
def data_dir(tmp_path):
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    return tmp_path


def open_orch(data_dir, embedder, stores, **overrides):
    config = load_config(overrides={"data_dir": str(data_dir), **overrides}, env={})
    return MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder, stores=stores)


def test_one_embedding_call_shared_by_all_stores(data_dir, embedder):
    counting = CountingEmbedder(embedder)
    a = KeywordStore("core", {"香菜": "讨厌吃香菜"}, pieces=["piece one"])
    b = KeywordStore("world_book", {"缆车": "缆车七点开"}, pieces=["piece two", "piece three"])
    with open_orch(data_dir, counting, [a, b]) as orch:
        orch.flush()  # the background warm-up embeds once at open
        counting.calls.clear()
        result = orch.build_prompt("坐缆车的时候吃香菜", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
    assert len(counting.calls) == 1
    texts, role = counting.calls[0]
    assert role == "query" and texts[1:] == ["piece one", "piece two", "piece three"]
    qa, qb = a.queries[0], b.queries[0]
    assert qa.vector is qb.vector and qa.vector.shape == (embedder.dim,)
    assert qb.pieces["world_book"][0] == ("piece two", "piece three")
    assert np.allclose(qb.pieces["world_book"][1], embedder.embed(["piece two", "piece three"], role="query"), atol=1e-5)
    assert {h.store for h in result.hits} == {"core", "world_book"}


def test_a_text_several_stores_ask_for_is_embedded_once(data_dir, embedder):
    counting = CountingEmbedder(embedder)
    a = KeywordStore("core", {}, pieces=["坐缆车"])
    b = KeywordStore("world_book", {}, pieces=["坐缆车", "piece two"])
    with open_orch(data_dir, counting, [a, b]) as orch:
        orch.flush()
        counting.calls.clear()
        orch.build_prompt("坐缆车", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
    assert [texts for texts, _ in counting.calls] == [["坐缆车", "piece two"]]
    # Every store still gets a vector per piece, in its order.
    assert b.queries[0].pieces["world_book"][0] == ("坐缆车", "piece two")
    vectors = b.queries[0].pieces["world_book"][1]
    assert np.allclose(vectors[0], a.queries[0].pieces["core"][1][0]) and np.allclose(vectors[0], a.queries[0].vector)
    assert np.allclose(vectors[1], embedder.embed(["piece two"], role="query")[0], atol=1e-5)


def test_fixed_message_order(data_dir, embedder):
    stores = [KeywordStore("diary", {"昨天": "[昨天] 吃了面"}), KeywordStore("core", {"昨天": "讨厌香菜"}),
              KeywordStore("world_book", {"昨天": "雾川镇多雾"})]
    with open_orch(data_dir, embedder, stores) as orch:
        orch.record_turn("你好", "你好呀", user_id="u1", at=datetime(2026, 11, 21, 9, tzinfo=TZ))
        orch.flush()
        result = orch.build_prompt("昨天怎么样", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
    contents = [m["content"] for m in result.messages]
    roles = [m["role"] for m in result.messages]
    assert contents[0].startswith("你是小月")  # persona, {{char}} filled in
    idx = {name: next(i for i, c in enumerate(contents) if needle in c)
           for name, needle in [("world_book", "雾川镇多雾"), ("core", "讨厌香菜"), ("diary", "吃了面"), ("time", "当前时间")]}
    assert idx["world_book"] < idx["core"] < idx["diary"] < idx["time"]
    assert roles[-3:] == ["user", "assistant", "user"] and contents[-3:] == ["你好", "你好呀", "昨天怎么样"]
    assert "{{" not in "".join(contents)


def test_slow_and_failing_stores_are_skipped_and_named(data_dir, embedder):
    good = KeywordStore("core", {"猫": "养了猫"})
    stores = [good, SlowStore("diary", {}), BrokenStore("world_book", {})]
    with open_orch(data_dir, embedder, stores, retrieval={"store_timeout_s": 0.5}) as orch:
        result = orch.build_prompt("我的猫", user_id="u1")
        orch.record_turn("我的猫", "好可爱", user_id="u1")
        orch.flush()
        errors = orch.background_errors
    assert [h.text for h in result.hits] == ["养了猫"]
    diag = "\n".join(result.diagnostics)
    assert "diary: skipped, no answer within 0.5s" in diag and "world_book: skipped, failed: OSError: disk on fire" in diag
    assert "too late" not in [h.text for h in result.hits]
    assert any(e.job == "world_book.record" and "cannot write" in e.error for e in errors)
    assert good.turns and good.turns[0].user == "我的猫"  # the other stores still got the turn


def test_stores_run_in_parallel(data_dir, embedder):
    seen = []
    barrier = threading.Barrier(2, timeout=3)

    class Meeting(KeywordStore):
        def retrieve(self, query):
            barrier.wait()  # only passes if both stores are running at once
            seen.append(self.name)
            return []

    with open_orch(data_dir, embedder, [Meeting("core", {}), Meeting("diary", {})]) as orch:
        result = orch.build_prompt("hi", user_id="u1")
    assert sorted(seen) == ["core", "diary"] and not result.diagnostics


def test_budget_trims_least_relevant_first(data_dir, embedder):
    facts = {f"k{i}": f"事实{i}：" + "很长的描述" * 20 for i in range(6)}
    store = KeywordStore("core", facts)
    with open_orch(data_dir, embedder, [store], retrieval={"caps": {"core": 200}}) as orch:
        result = orch.build_prompt(" ".join(facts), user_id="u1")
    assert sum(h.tokens for h in result.hits) <= 200
    kept = {h.score for h in result.hits}
    assert result.dropped and max(h.score for h in result.dropped) < min(kept)


def _summary_setup(data_dir, embedder, memory_llm=None):
    """A tight memory budget (300 tokens, the summary's cap 120), a diary that answers "画展" with
    ~240 tokens, and 12 turns recorded so the rolling summary holds the evicted ones."""
    diary = KeywordStore("diary", {"画展": "旅人说画展很好看。" * 22})
    config = load_config(overrides={
        "data_dir": str(data_dir), "short_term": {"max_messages": 4},
        "retrieval": {"budget_tokens": 300, "caps": {"diary": 300, "summary": 120}},
    }, env={})
    orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder, stores=[diary],
                                          memory_llm=memory_llm)
    for i in range(12):
        orch.record_turn(f"第{i}句：今天去江边散步了，风很大。", f"回答{i}：那要多穿点。", user_id="u1",
                         at=datetime(2026, 11, 22, 10, i, tzinfo=TZ))
    orch.flush()
    return orch


def test_the_offline_summary_takes_what_the_diary_leaves_in_whole_lines(data_dir, embedder):
    with _summary_setup(data_dir, embedder) as orch:
        stored = orch.short_term.summary("u1")
        assert "旅人: 第9句" in stored and "小月: 回答9" in stored  # the extract names the speakers
        asked = orch.build_prompt("还记得那个画展吗？", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
        chat = orch.build_prompt("嗯嗯", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
    memory = lambda r: sum(r.tokens.get(t, 0) for t in ("world_book", "core", "diary", "summary"))  # noqa: E731
    # Asked about something the diary holds: the diary's lines stay whole and the extract gets the rest.
    assert asked.tokens["diary"] > 200 and 0 < asked.tokens["summary"] <= 300 - asked.tokens["diary"]
    assert memory(asked) <= 300 and not asked.dropped
    # Small talk: the extract fills its own cap. Either way it is its newest whole lines.
    assert asked.tokens["summary"] < chat.tokens["summary"] <= 120
    for result in (asked, chat):
        shown = next(h.text for h in result.hits if h.store == "summary")
        assert stored.endswith(shown) and stored[: len(stored) - len(shown)].endswith("\n")


def test_a_summary_the_memory_llm_wrote_keeps_its_share_of_the_budget(data_dir, embedder):
    from engine.adapters.llm import ScriptedLLM

    written = "旅人这几天常去江边散步，风很大，小月叮嘱他多穿衣服。" * 6
    with _summary_setup(data_dir, embedder, memory_llm=ScriptedLLM(rule=lambda msgs: written)) as orch:
        asked = orch.build_prompt("还记得那个画展吗？", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
    assert asked.tokens["summary"] > 100  # its cap, 120, whatever the diary found
    assert asked.dropped and asked.tokens["diary"] == 0  # the diary's one long line did not fit beside it


def test_record_turn_is_durable_before_returning(data_dir, embedder):
    with open_orch(data_dir, embedder, []) as orch:
        orch.record_turn("第一句", "回答", user_id="u1", at=datetime(2026, 11, 22, 10, tzinfo=TZ), turn_id="t1")
        text = (data_dir / "agents/xiaoyue/users/u1/history.yaml").read_text(encoding="utf-8")
        assert "第一句" in text and "t1:u" in text
        again = orch.record_turn("第一句", "回答", user_id="u1", turn_id="t1")
        assert again.id == "t1"
        assert len(orch.short_term.state("u1").messages) == 2


def test_async_entry_points_share_the_implementation(data_dir, embedder):
    store = KeywordStore("core", {"香菜": "讨厌吃香菜"})

    async def main(orch):
        await orch.arecord_turn("我讨厌香菜", "记住了", user_id="u1")
        await orch.aflush()
        return await orch.abuild_prompt("香菜怎么样", user_id="u1")

    with open_orch(data_dir, embedder, [store]) as orch:
        result = asyncio.run(main(orch))
    assert [h.text for h in result.hits] == ["讨厌吃香菜"]
    assert store.turns[0].user == "我讨厌香菜"


def test_ids_are_validated(data_dir, embedder):
    with open_orch(data_dir, embedder, []) as orch:
        with pytest.raises(InvalidIdError):
            orch.build_prompt("hi", user_id="../../etc")
        with pytest.raises(InvalidIdError):
            orch.record_turn("a", "b", user_id="a/b")
        with pytest.raises(InvalidIdError, match="chat id"):
            orch.build_prompt("hi", user_id="u1", chat_id="")
        with pytest.raises(InvalidIdError, match="turn id"):
            orch.record_turn("a", "b", user_id="u1", turn_id="")
        with pytest.raises(InvalidIdError, match="turn id"):
            orch.forget_turn("x" * 300, user_id="u1")
    with pytest.raises(InvalidIdError):
        MemoryOrchestrator.from_config("../xiaoyue", config=load_config(overrides={"data_dir": str(data_dir)}, env={}), stores=[])


def test_opening_lines_for_a_new_user(data_dir, embedder):
    with open_orch(data_dir, embedder, []) as orch:
        result = orch.build_prompt("你好", user_id="newcomer")
    assert result.messages[-3]["content"] == "你好，这里还营业吗？"


def test_broken_world_book_file_is_named_in_diagnostics(data_dir):
    """Real stores: a typo in a lore file shows in every prompt result, the rest still answers."""
    (data_dir / "agents/xiaoyue/data_base/坏文件.yaml").write_text("阿黄: 橘猫\n  缩进错了: 1\n", encoding="utf-8")
    config = load_config(overrides={"data_dir": str(data_dir)}, env={})
    with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
        result = orch.build_prompt("我想坐缆车", user_id="u1")
    assert any("坏文件.yaml:2" in d and d.startswith("world_book:") for d in result.diagnostics)
    assert any(h.store == "world_book" and "缆车" in h.reason for h in result.hits)


@pytest.mark.parametrize("brain", ["historical_summary: [1, 2]\n", "historical_summary: ok\nupdated_at: {a: 1}\n"],
                         ids=["summary-is-a-list", "time-is-a-mapping"])
def test_a_broken_brain_file_still_gives_a_prompt_and_is_named(data_dir, embedder, brain):
    """Issue 12 item 5: a wrong type in brain.yaml is a diagnostic with file and line, not an AttributeError."""
    with open_orch(data_dir, embedder, []) as orch:
        orch.record_turn("我今天去了江边", "真好", user_id="u1", at=datetime(2026, 11, 22, 10, tzinfo=TZ))
        brain_file = data_dir / "agents/xiaoyue/users/u1/brain.yaml"
        brain_file.write_text(brain, encoding="utf-8")
        result = orch.build_prompt("还记得吗", user_id="u1", now=datetime(2026, 11, 22, 12, tzinfo=TZ))
    contents = [m["content"] for m in result.messages]
    assert "我今天去了江边" in contents and contents[-1] == "还记得吗"
    line = brain.count("\n", 0, brain.index("{") if "{" in brain else 0) + 1
    assert any(d.startswith("short_term: ") and f"brain.yaml:{line}:" in d and "must be text" in d for d in result.diagnostics)


@pytest.mark.parametrize(("minutes", "with_context"), [(5, True), (24 * 60, False)], ids=["same-sitting", "next-day"])
def test_the_last_turn_joins_the_query_only_within_a_sitting(data_dir, embedder, minutes, with_context):
    """After a pause the previous sitting's last turn is not part of what the stores search for:
    it would pull that sitting's diary lines into an unrelated first message."""
    said = datetime(2026, 11, 20, 20, 0, tzinfo=TZ)
    with open_orch(data_dir, embedder, []) as orch:
        orch.record_turn("我在学吉他", "加油，练了多久了？", user_id="u1", at=said)
        result = orch.build_prompt("你心情好吗", user_id="u1", now=said + timedelta(minutes=minutes))
    assert ("吉他" in result.query_text) is with_context, result.query_text
