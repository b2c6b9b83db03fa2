"""CoreMemoryStore against the real embedder, real FAISS and real files in tmp_path; the memory LLM is
the library's ScriptedLLM, or a real HTTP server speaking the OpenAI protocol."""

import json
import logging
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.llm import OpenAIChatLLM, ScriptedLLM
from engine.config import CoreConfig
from engine.errors import DataFileError, LLMError
from engine.fake_openai import Garbage, Status
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Query, Turn
from engine.stores.core import CoreMemoryStore, FactNotFoundError, FactOp

from counting import CountingEmbedder

TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 11, 2, 20, 0, tzinfo=TZ)


@pytest.fixture
def make_store(tmp_path, embedder):
    made = []

    def make(llm=None, language="zh", **config):
        store = CoreMemoryStore(
            paths=CharacterPaths(tmp_path / "xiaoyue"),
            config=CoreConfig(**config),
            embedder=CountingEmbedder(embedder),
            llm=llm,
            prompts=Prompts(language),
            tz=TZ,
        )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def turn(text, i=0, user_id="alice", assistant="好的，我记住啦。"):
    return Turn(id=f"t{i}", user_id=user_id, at=T0 + timedelta(minutes=i), user=text, assistant=assistant)


def ask(store, message, user_id="alice"):
    vector = store.embedder.inner.embed([message], role="query")[0]
    return store.retrieve(Query(message=message, user_id=user_id, now=T0, recent=(), text=message, vector=vector))


def ops_json(*ops):
    return json.dumps({"operations": [dict(o) for o in ops]}, ensure_ascii=False)


def texts(store, user_id="alice"):
    return sorted(f.text for f in store.facts(user_id))


class TestScriptedOperations:
    """Each operation the LLM can return, applied through `record`."""

    def test_add_then_retrieve_with_date_and_score(self, make_store):
        llm = ScriptedLLM([ops_json({"op": "ADD", "text": "讨厌吃香菜"})])
        store = make_store(llm)
        store.record(turn("我讨厌吃香菜"))
        [fact] = store.facts("alice")
        assert fact.text == "讨厌吃香菜" and fact.source_turns == ("t0",) and fact.learned_at == T0
        [hit] = ask(store, "我讨厌吃什么？")
        assert hit.store == "core" and hit.text == "- 讨厌吃香菜（2026-11-02 记下）"
        assert hit.score >= store.threshold and hit.reason.startswith("cosine 0.")
        assert hit.meta["fact_id"] == fact.id

    def test_prompt_shows_similar_facts_by_alias_not_id(self, make_store):
        llm = ScriptedLLM([ops_json({"op": "NONE"})])
        store = make_store(llm)
        fact = store.add_fact("alice", "讨厌吃香菜")
        store.record(turn("香菜真难吃"))
        prompt = llm.calls[0][-1]["content"]
        assert "[1] 讨厌吃香菜" in prompt and fact.id not in prompt and "香菜真难吃" in prompt
        assert "用户" in llm.calls[0][0]["content"]  # the zh extraction prompt

    def test_update_keeps_history(self, make_store):
        llm = ScriptedLLM([ops_json({"op": "UPDATE", "id": 1, "text": "住在成都"})])
        store = make_store(llm)
        old = store.add_fact("alice", "住在重庆", at=T0 - timedelta(days=3))
        store.record(turn("我搬到成都了", 5))
        [fact] = store.facts("alice")
        assert (fact.id, fact.text, fact.learned_at, fact.updated_at) == (old.id, "住在成都", old.learned_at, T0 + timedelta(minutes=5))
        assert [(r.text, r.change) for r in fact.history] == [("住在重庆", "update")]
        assert [h.text for h in ask(store, "我住在哪里？")] == ["- 住在成都（2026-11-02 记下）"]

    def test_delete_keeps_history_and_is_never_injected(self, make_store):
        llm = ScriptedLLM([ops_json({"op": "DELETE", "id": 1})])
        store = make_store(llm)
        store.add_fact("alice", "养了一只猫叫小白")
        store.record(turn("小白走丢了，我不养猫了"))
        assert store.facts("alice") == []
        [gone] = store.facts("alice", include_deleted=True)
        assert gone.deleted_at is not None and gone.history[-1].change == "delete"
        assert ask(store, "我的猫叫什么？") == []

    def test_none_changes_nothing(self, make_store):
        store = make_store(ScriptedLLM(['{"operations": [{"op": "NONE"}]}']))
        store.add_fact("alice", "讨厌吃香菜")
        before = store.facts("alice")
        store.record(turn("今天天气不错"))
        assert store.facts("alice") == before

    @pytest.mark.parametrize(
        "replies,calls,expected",
        [
            (["not json at all", '```json\n{"operations": [{"op": "ADD", "text": "喜欢爬山"}]}\n```'], 2, ["喜欢爬山", "讨厌吃香菜"]),
            (["not json", "{'operations': [{'op': 'ADD'"], 2, ["讨厌吃香菜"]),
        ],
        ids=["retried_once_then_applied", "skipped_after_two_bad_replies"],
    )
    def test_invalid_reply_retried_once_then_skipped(self, make_store, caplog, replies, calls, expected):
        llm = ScriptedLLM(replies)
        store = make_store(llm)
        store.add_fact("alice", "讨厌吃香菜")
        with caplog.at_level(logging.WARNING):
            store.record(turn("我喜欢爬山"))
        assert len(llm.calls) == calls and texts(store) == expected
        assert "unreadable" in caplog.text
        assert "could not be parsed" in llm.calls[1][-1]["content"] or "无法解析" in llm.calls[1][-1]["content"]

    def test_llm_down_keeps_turns_pending_for_the_next_extraction(self, make_store):
        llm = ScriptedLLM([LLMError("down"), ops_json({"op": "ADD", "text": "讨厌吃香菜"})])
        store = make_store(llm)
        with pytest.raises(LLMError):
            store.record(turn("我讨厌吃香菜", 0))
        store.record(turn("今天好累", 1))
        assert "我讨厌吃香菜" in llm.calls[1][-1]["content"] and "今天好累" in llm.calls[1][-1]["content"]
        assert texts(store) == ["讨厌吃香菜"]

    def test_extracts_every_n_turns_with_the_last_n(self, make_store):
        llm = ScriptedLLM(rule=lambda messages: '{"operations": []}')
        store = make_store(llm, extract_every_turns=3)
        for i in range(7):
            store.record(turn(f"第{i}句话", i))
        assert len(llm.calls) == 2
        assert "第3句话" in llm.calls[1][-1]["content"] and "第2句话" not in llm.calls[1][-1]["content"]

    def test_pending_turns_survive_a_restart(self, make_store):
        llm = ScriptedLLM(rule=lambda messages: '{"operations": []}')
        make_store(llm, extract_every_turns=2).record(turn("我讨厌吃香菜", 0))
        second = make_store(llm, extract_every_turns=2)
        second.record(turn("今天好累", 1))
        assert len(llm.calls) == 1 and "我讨厌吃香菜" in llm.calls[0][-1]["content"]


class TestDuplicateGuard:
    """Independent of the LLM: an ADD too similar to an existing fact is not a second copy."""

    def test_near_duplicate_add_is_skipped(self, make_store):
        store = make_store(ScriptedLLM([ops_json({"op": "ADD", "text": "特别讨厌吃香菜"})]))
        store.add_fact("alice", "讨厌吃香菜")
        store.record(turn("香菜太难吃了"))
        [fact] = store.facts("alice")
        assert fact.text == "讨厌吃香菜" and "t0" in fact.source_turns

    def test_near_duplicate_add_becomes_update_by_config(self, make_store):
        store = make_store(duplicate_action="update")
        store.add_fact("alice", "讨厌吃香菜")
        [applied] = store.apply("alice", [FactOp("ADD", "特别讨厌吃香菜")])
        assert applied.kind == "updated" and "near-duplicate" in applied.note or applied.note.startswith("was")
        assert texts(store) == ["特别讨厌吃香菜"]

    def test_different_fact_with_same_shape_is_added(self, make_store):
        store = make_store()
        store.add_fact("alice", "讨厌吃香菜")
        store.apply("alice", [FactOp("ADD", "讨厌吃洋葱")])
        assert texts(store) == ["讨厌吃洋葱", "讨厌吃香菜"]


class TestLibraryApi:
    def test_add_update_delete(self, make_store):
        store = make_store()
        fact = store.add_fact("alice", "住在重庆")
        assert store.update_fact("alice", fact.id, "住在成都").history[0].text == "住在重庆"
        store.delete_fact("alice", fact.id)
        assert store.facts("alice") == [] and len(store.facts("alice", include_deleted=True)) == 1
        with pytest.raises(FactNotFoundError):
            store.update_fact("alice", fact.id, "x")
        store.delete_fact("alice", store.add_fact("alice", "喜欢猫").id, purge=True)
        assert [f.text for f in store.facts("alice", include_deleted=True)] == ["住在成都"]

    def test_import_is_idempotent(self, make_store):
        store = make_store()
        first = store.import_fact("alice", "讨厌吃香菜", T0)
        again = store.import_fact("alice", "讨厌吃香菜", T0 + timedelta(days=1))
        assert first == again and len(store.facts("alice")) == 1 and first.source_turns == ("import",)

    def test_users_are_separate(self, make_store):
        store = make_store()
        store.add_fact("alice", "讨厌吃香菜")
        assert store.facts("bob") == [] and ask(store, "我讨厌吃什么？", user_id="bob") == []


class TestFiles:
    def test_malformed_file_names_file_and_line_and_is_never_overwritten(self, make_store):
        store = make_store(ScriptedLLM([ops_json({"op": "ADD", "text": "喜欢爬山"})]))
        store.add_fact("alice", "讨厌吃香菜")
        path = store.paths.user("alice").core_file
        broken = path.read_text(encoding="utf-8") + "- id: f2\n  txet: 喜欢猫\n"
        path.write_text(broken, encoding="utf-8")
        line = broken.count("\n")
        with pytest.raises(DataFileError) as info:
            ask(store, "我讨厌什么？")
        assert info.value.path == str(path) and info.value.line == line
        with pytest.raises(DataFileError, match="unknown key .txet."):
            store.add_fact("alice", "喜欢猫")
        with pytest.raises(DataFileError):
            store.record(turn("我喜欢爬山"))
        assert path.read_text(encoding="utf-8") == broken
        # Fixed by hand: the store works again and the pending turn is extracted next time.
        path.write_text(broken.replace("txet", "text"), encoding="utf-8")
        assert texts(store) == ["喜欢猫", "讨厌吃香菜"]

    def test_warm_reopen_embeds_nothing_and_corrupt_cache_is_rebuilt(self, make_store, caplog):
        store = make_store()
        for text in ("讨厌吃香菜", "住在重庆", "养了一只猫叫小白"):
            store.add_fact("alice", text)
        warm = make_store()
        assert len(warm.facts("alice")) == 3 and warm.embedder.passages == []
        assert "住在重庆" in ask(warm, "我住在哪里？")[0].text
        cache = store.paths.user("alice").cache
        (cache / "core.faiss").write_bytes(b"garbage")
        cold = make_store()
        with caplog.at_level(logging.WARNING):
            assert [h.text.split("（")[0] for h in ask(cold, "我住在哪？")][0] == "- 住在重庆"
        assert "corrupt" in caplog.text and len(cold.embedder.passages) == 3

    def test_hand_edit_reembeds_only_changed_facts(self, make_store):
        store = make_store()
        for text in ("讨厌吃香菜", "住在重庆", "养了一只猫叫小白"):
            store.add_fact("alice", text)
        path = store.paths.user("alice").core_file
        store.embedder.passages.clear()
        path.write_text(path.read_text(encoding="utf-8").replace("住在重庆", "住在成都"), encoding="utf-8")
        assert "住在成都" in ask(store, "我住在哪里？")[0].text
        assert store.embedder.passages == ["住在成都"]


class TestRealHttp:
    """The same operations through the OpenAI-compatible client and a real local HTTP server."""

    def test_operations_and_malformed_replies_over_http(self, make_store, openai_server):
        llm = OpenAIChatLLM(model="memory", base_url=openai_server.base_url, timeout_s=5, max_retries=0)
        store = make_store(llm)
        openai_server.push('好的：\n```json\n{"operations": [{"op": "ADD", "text": "住在重庆"}, {"op": "ADD", "text": "讨厌吃香菜"}]}\n```')
        store.record(turn("我住在重庆，讨厌吃香菜", 0))
        assert texts(store) == ["住在重庆", "讨厌吃香菜"]
        # A garbage HTTP body is an LLMError: the turn stays pending.
        openai_server.push(Garbage())
        with pytest.raises(LLMError):
            store.record(turn("我搬到成都了", 1))
        # An unreadable reply then a valid one: retried once. Aliases follow similarity order.
        openai_server.push("抱歉，我不太明白", "{'operations': [{'op': 'UPDATE', 'id': 1, 'text': '住在成都'}]}")
        store.record(turn("我现在住在成都", 2))
        assert texts(store) == ["住在成都", "讨厌吃香菜"]
        bodies = [r for r in openai_server.requests if "messages" in r]
        assert "[1] 住在重庆" in bodies[-2]["messages"][-1]["content"]
        assert "我搬到成都了" in bodies[-2]["messages"][-1]["content"]  # the pending turn came along
        openai_server.push(Status(500))
        with pytest.raises(LLMError):
            store.record(turn("随便聊聊", 3))
        openai_server.push('{"operations": [{"op": "DELETE", "id": 2}]}')
        store.record(turn("我不讨厌香菜了", 4))
        shown = [r for r in openai_server.requests if "messages" in r][-1]["messages"][-1]["content"]
        second = next(line[4:] for line in shown.splitlines() if line.startswith("[2] "))
        assert texts(store) == sorted({"住在成都", "讨厌吃香菜"} - {second})
