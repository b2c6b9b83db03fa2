"""CoreMemoryStore against the real embedder, real FAISS and real files in tmp_path; the memory LLM is
the library's ScriptedLLM, or a real HTTP server speaking the OpenAI protocol."""

import json
import logging
from datetime import datetime, timedelta

import pytest

from engine.adapters.llm import OpenAIChatLLM, ScriptedLLM
from engine.config import CoreConfig
from engine.errors import DataFileError, LLMError
from engine.testing.fake_openai import Delay, Garbage, Status
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Turn
from engine.factory import files_core_store
from engine.stores.core import FactNotFoundError, FactOp, FactTextError

from core_kit import T0, TZ, ask, warmed
from counting import CountingEmbedder


class WallClock:
    """The store's wall clock (LLM retry backoff), moved by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 2, 20, 0, tzinfo=TZ)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def make_store(tmp_path, embedder):
    made = []

    def make(llm=None, language="zh", wall_clock=None, **config):
        config.setdefault("check_interval_s", 0)
        store = files_core_store(
paths=CharacterPaths(tmp_path / "xiaoyue"),
            config=CoreConfig(**config),
            embedder=CountingEmbedder(embedder),
            llm=llm,
            prompts=Prompts(language),
            tz=TZ,
            wall_clock=wall_clock,
        )
        made.append(store)
        return warmed(store)

    yield make
    for store in made:
        store.close()


def turn(text, i=0, user_id="alice", assistant="好的，我记住啦。"):
    return Turn(id=f"t{i}", user_id=user_id, at=T0 + timedelta(minutes=i), user=text, assistant=assistant)


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
        assert hit.meta["fact_id"] == fact.id and hit.reason

    def test_prompt_shows_similar_facts_by_alias_not_id(self, make_store):
        llm = ScriptedLLM([ops_json({"op": "NONE"})])
        store = make_store(llm)
        fact = store.add_fact("alice", "讨厌吃香菜")
        store.record(turn("香菜真难吃"))
        prompt = llm.calls[0][-1]["content"]
        assert "[1] 讨厌吃香菜" in prompt and fact.id not in prompt and "香菜真难吃" in prompt
        assert "用户" in llm.calls[0][0]["content"]  # the zh extraction prompt

    def test_update_keeps_history_with_the_turn_that_made_it(self, make_store):
        llm = ScriptedLLM([ops_json({"op": "UPDATE", "id": 1, "text": "住在成都"})])
        store = make_store(llm)
        old = store.add_fact("alice", "住在重庆", at=T0 - timedelta(days=3))
        store.record(turn("我搬到成都了", 5))
        [fact] = store.facts("alice")
        assert (fact.id, fact.text, fact.learned_at, fact.updated_at) == (old.id, "住在成都", old.learned_at, T0 + timedelta(minutes=5))
        assert [(r.text, r.change, r.by) for r in fact.history] == [("住在重庆", "update", ("t5",))]
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

    def test_unreadable_reply_is_retried_once_with_the_error(self, make_store, caplog):
        llm = ScriptedLLM(["not json at all", '```json\n{"operations": [{"op": "ADD", "text": "喜欢爬山"}]}\n```'])
        store = make_store(llm)
        with caplog.at_level(logging.WARNING):
            store.record(turn("我喜欢爬山"))
        assert len(llm.calls) == 2 and texts(store) == ["喜欢爬山"] and "unreadable" in caplog.text
        assert "could not be parsed" in llm.calls[1][-1]["content"] or "无法解析" in llm.calls[1][-1]["content"]
        assert store.admin.pending("alice") == []

    def test_extracts_every_n_turns_with_the_last_n(self, make_store):
        llm = ScriptedLLM(rule=lambda messages: '{"operations": []}')
        store = make_store(llm, extract_every_turns=3)
        for i in range(7):
            store.record(turn(f"第{i}句话", i))
        assert len(llm.calls) == 2
        assert "第3句话" in llm.calls[1][-1]["content"] and "第2句话" not in llm.calls[1][-1]["content"]
        assert [p.id for p in store.admin.pending("alice")] == ["t6"]

    def test_batched_turns_wait_next_to_the_facts_not_in_the_cache(self, make_store):
        """`kioku reindex` deletes .cache/: a turn waiting for its batch must survive that and a restart."""
        llm = ScriptedLLM(rule=lambda messages: '{"operations": []}')
        first = make_store(llm, extract_every_turns=2)
        first.record(turn("我讨厌吃香菜", 0))
        first.close()
        root = first.paths.user("alice")
        assert (root.root / "core_pending.json").exists()
        for path in root.cache.glob("*"):
            path.unlink()
        second = make_store(llm, extract_every_turns=2)
        second.record(turn("今天好累", 1))
        assert len(llm.calls) == 1 and "我讨厌吃香菜" in llm.calls[0][-1]["content"]
        assert not (root.root / "core_pending.json").exists()


class TestIdempotentRecord:
    """The journal may call `record` again for the same turn (replay after a crash, retry)."""

    def test_recording_a_turn_twice_adds_nothing_and_asks_once(self, make_store):
        llm = ScriptedLLM(rule=lambda messages: ops_json({"op": "ADD", "text": "讨厌吃香菜"}))
        store = make_store(llm)
        store.record(turn("我讨厌吃香菜", 0))
        store.record(turn("我讨厌吃香菜", 0))
        again = make_store(llm)  # a new process replaying its journal
        again.record(turn("我讨厌吃香菜", 0))
        assert len(llm.calls) == 1 and [f.source_turns for f in again.facts("alice")] == [("t0",)]

    def test_offline_rules_are_idempotent_too(self, make_store):
        store = make_store()
        for _ in range(2):
            store.record(turn("我叫林舟，我住在成都", 0))
        assert texts(store) == ["住在成都", "名字叫林舟"]


FAILURES = {
    "http_500": [Status(500)],
    "garbage_body": [Garbage()],
    "timeout": [Delay(3.0, '{"operations": []}')],
    "unreadable_twice": ["我不太明白你的意思", "还是不明白"],
    "nested_too_deep": ["[" * 50_000 + "]" * 50_000, "{" * 30_000],
}
FIVE = ["我叫林舟", "我住在成都", "我讨厌吃香菜", "我养了一只猫叫小白", "我在腾讯工作"]
FIVE_FACTS = ["住在成都", "讨厌吃香菜", "名字叫林舟", "在腾讯工作", "养了一只猫叫小白"]


class TestMemoryLlmFails:
    """A failing memory LLM (real HTTP): the offline rules run at once, the turns wait in the pending
    file for an LLM retry with backoff, and the retry happens once the LLM answers again."""

    @pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
    def test_rules_fall_back_and_the_llm_is_retried_later(self, make_store, openai_server, failure):
        clock = WallClock()
        llm = OpenAIChatLLM(model="memory", base_url=openai_server.base_url, timeout_s=1.0, max_retries=0)
        store = make_store(llm, wall_clock=clock)
        for i, text in enumerate(FIVE):
            openai_server.push(*failure)
            clock.now += timedelta(seconds=1)  # within the backoff: each turn is tried once
            store.record(turn(text, i))
        assert sorted(texts(store)) == sorted(FIVE_FACTS)
        waiting = store.admin.pending("alice")
        assert [p.id for p in waiting] == [f"t{i}" for i in range(5)] and all(p.wait == "llm" for p in waiting)
        [problem] = store.problems()
        assert "5 turn(s) await a memory-LLM retry" in problem and waiting[-1].error.split(":")[0] in problem
        # The LLM is back; once the backoff has passed, the next turn takes the waiting ones along.
        clock.now += timedelta(hours=1)
        openai_server.push(ops_json({"op": "ADD", "text": "喜欢爬山"}))
        store.record(turn("我周末常去爬山", 5))
        shown = [r for r in openai_server.requests if "messages" in r][-1]["messages"][-1]["content"]
        assert all(text in shown for text in FIVE) and "我周末常去爬山" in shown
        assert store.admin.pending("alice") == [] and store.problems() == []
        assert "喜欢爬山" in texts(store) and len(texts(store)) == 6

    def test_backoff_holds_the_retry_until_due(self, make_store):
        clock = WallClock()
        llm = ScriptedLLM([LLMError("down"), '{"operations": []}', '{"operations": []}'])
        store = make_store(llm, wall_clock=clock)
        store.record(turn("我讨厌吃香菜", 0))
        [waiting] = store.admin.pending("alice")
        assert waiting.next_try == clock.now + timedelta(seconds=30) and waiting.attempts == 1
        store.record(turn("今天好累", 1))  # not yet due: the LLM sees only the new turn
        assert "我讨厌吃香菜" not in llm.calls[1][-1]["content"]
        clock.now += timedelta(seconds=31)
        assert store.retry("alice") == 1 and "我讨厌吃香菜" in llm.calls[2][-1]["content"]
        assert store.admin.pending("alice") == []

    def test_unreadable_pending_file_is_set_aside_not_overwritten(self, make_store):
        store = make_store(extract_every_turns=2)
        path = store.paths.user("alice").root / "core_pending.json"
        path.parent.mkdir(parents=True)
        path.write_text('{"turns": [ {"id": "t9", "at": ', encoding="utf-8")
        store.record(turn("我叫林舟", 0))
        [aside] = path.parent.glob("core_pending.json.unreadable-*")
        assert aside.read_text(encoding="utf-8") == '{"turns": [ {"id": "t9", "at": '
        [problem] = store.problems()
        assert "core_pending.json:1: unreadable pending turns" in problem and aside.name in problem


class TestNoLlmCallUnderTheLock:
    def test_facts_changed_while_the_llm_thought_means_asking_again(self, make_store):
        """Another writer (here: a second store on the same folder, as another process would be)
        changes a fact the LLM was shown while the LLM is answering: the stale answer is not applied."""
        other = make_store()
        fact = other.add_fact("alice", "住在重庆")
        replies = iter([ops_json({"op": "UPDATE", "id": 1, "text": "住在成都"}),
                        ops_json({"op": "UPDATE", "id": 1, "text": "住在成都"})])

        def llm_rule(messages):
            if "[1] 住在重庆" in messages[-1]["content"]:
                other.update_fact("alice", fact.id, "住在上海")  # meanwhile, elsewhere
            return next(replies)

        llm = ScriptedLLM(rule=llm_rule)
        store = make_store(llm)
        store.record(turn("我搬到成都了", 1))
        assert len(llm.calls) == 2 and "[1] 住在上海" in llm.calls[1][-1]["content"]
        [now] = store.facts("alice")
        assert now.text == "住在成都" and [r.text for r in now.history] == ["住在重庆", "住在上海"]


class TestForget:
    """forget(user, turn): what a regenerated reply's turn did to the facts is withdrawn."""

    def test_forget_withdraws_adds_updates_and_deletes_of_that_turn_only(self, make_store):
        store = make_store()
        kept = store.add_fact("alice", "在腾讯工作")
        moved = store.add_fact("alice", "住在重庆")
        cat = store.add_fact("alice", "养了一只猫叫小白")
        store.apply("alice", [FactOp("ADD", "讨厌吃香菜"), FactOp("UPDATE", "住在成都", moved.id),
                              FactOp("DELETE", fact_id=cat.id)], at=T0, source=["t7"])
        store.apply("alice", [FactOp("ADD", "喜欢爬山"), FactOp("ADD", "讨厌吃香菜")], at=T0, source=["t8"])
        assert store.forget("alice", "t7") == 2  # 住在成都 reverted, 小白 restored; 香菜 stays (t8 said it too)
        by_text = {f.text: f for f in store.facts("alice")}
        assert sorted(by_text) == sorted(["在腾讯工作", "住在重庆", "养了一只猫叫小白", "讨厌吃香菜", "喜欢爬山"])
        assert by_text["讨厌吃香菜"].source_turns == ("t8",) and by_text["在腾讯工作"] == kept
        assert [(r.text, r.change) for r in by_text["住在重庆"].history] == [("住在重庆", "update"), ("住在成都", "forget")]
        assert store.forget("alice", "t8") == 2 and texts(store) == sorted(["在腾讯工作", "住在重庆", "养了一只猫叫小白"])
        gone = [f for f in store.facts("alice", include_deleted=True) if not f.live]
        assert sorted(f.text for f in gone) == ["喜欢爬山", "讨厌吃香菜"] and all(f.history[-1].change == "forget" for f in gone)
        assert not any("香菜" in h.text for h in ask(store, "我讨厌吃什么？"))

    def test_forgotten_turn_is_not_recorded_again_and_unknown_turn_changes_nothing(self, make_store):
        store = make_store()
        store.record(turn("我叫林舟", 3))
        assert store.forget("alice", "t3") == 1 and store.forget("alice", "nope") == 0
        store.record(turn("我叫林舟", 3))  # a stale replay of the forgotten turn
        assert store.facts("alice") == []


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
        assert applied.kind == "updated"
        assert "near-duplicate" in applied.note and "was '讨厌吃香菜'" in applied.note
        assert texts(store) == ["特别讨厌吃香菜"]

    def test_different_fact_with_same_shape_is_added(self, make_store):
        store = make_store()
        store.add_fact("alice", "讨厌吃香菜")
        store.apply("alice", [FactOp("ADD", "讨厌吃洋葱")])
        assert texts(store) == ["讨厌吃洋葱", "讨厌吃香菜"]


class TestAdmin:
    def test_add_edit_delete_history(self, make_store):
        admin = make_store().admin
        added = admin.add("alice", "住在重庆")
        assert added.created and admin.add("alice", "住在重庆。").created is False
        assert admin.edit("alice", added.fact.id, "住在成都").history[0].text == "住在重庆"
        admin.delete("alice", added.fact.id)
        assert admin.list("alice") == [] and len(admin.list("alice", include_deleted=True)) == 1
        history = admin.history("alice", added.fact.id)
        assert [(r.text, r.change) for r in history.revisions] == [("住在重庆", "update"), ("住在成都", "delete")]
        with pytest.raises(FactNotFoundError):
            admin.edit("alice", added.fact.id, "x")
        admin.delete("alice", admin.add("alice", "喜欢猫").fact.id, purge=True)
        assert [f.text for f in admin.list("alice", include_deleted=True)] == ["住在成都"]

    BAD = {
        "control_char": ("住在\x07重庆", "control characters"),
        "c1_control": ("住在\x9b重庆", "control characters"),
        "lone_surrogate": ("住在\ud800重庆", "lone surrogate"),
        "empty": ("   \n ", "needs some text"),
        "too_long": ("长" * 2001, "at most 2000"),
    }

    @pytest.mark.parametrize("text,message", BAD.values(), ids=BAD.keys())
    def test_bad_text_is_refused_by_the_library(self, make_store, text, message):
        store = make_store()
        with pytest.raises(FactTextError, match=message):
            store.add_fact("alice", text)
        fact = store.add_fact("alice", "住在重庆")
        with pytest.raises(ValueError, match=message):
            store.update_fact("alice", fact.id, text)
        assert texts(store) == ["住在重庆"]

    def test_separators_are_whitespace_and_kept_out(self, make_store):
        store = make_store()
        assert store.add_fact("alice", "住在\u2028重庆\u0085\t").text == "住在 重庆"

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
        assert store.problems() == [f"user alice: fact file unreadable, not updated until fixed: {info.value}"]
        with pytest.raises(DataFileError, match="unknown key .txet."):
            store.add_fact("alice", "喜欢猫")
        with pytest.raises(DataFileError):
            store.record(turn("我喜欢爬山"))
        assert path.read_text(encoding="utf-8") == broken
        # Fixed by hand: the store works again, and the journal's retry of the turn extracts it.
        path.write_text(broken.replace("txet", "text"), encoding="utf-8")
        store.record(turn("我喜欢爬山"))
        assert texts(store) == ["喜欢爬山", "喜欢猫", "讨厌吃香菜"] and store.problems() == []

    def test_added_facts_are_appended_and_the_file_stays_one_list(self, make_store):
        store = make_store()
        first = store.add_fact("alice", "讨厌吃香菜")
        path = store.paths.user("alice").core_file
        inode = path.stat().st_ino
        store.add_fact("alice", "住在重庆")
        store.add_fact("alice", "养了一只猫叫小白")
        assert path.stat().st_ino == inode  # appended in place, not rewritten
        store.update_fact("alice", first.id, "不再讨厌香菜")
        assert path.stat().st_ino != inode  # an update rewrites atomically
        fresh = make_store()
        assert [f.text for f in fresh.facts("alice")] == ["不再讨厌香菜", "住在重庆", "养了一只猫叫小白"]

    def test_facts_another_process_appended_are_read_alone(self, make_store, monkeypatch):
        """A second store on the same folder (another worker process) appends: this one reads only
        the new entries and embeds only their texts; an edit elsewhere in the file reads it all."""
        import engine.stores.core.repo as repo_module

        mine, other = make_store(), make_store()
        for text in ("讨厌吃香菜", "住在重庆"):
            mine.add_fact("alice", text)
        assert len(other.facts("alice")) == 2
        parsed = []
        real_parse = repo_module.parse_facts
        monkeypatch.setattr(repo_module, "parse_facts", lambda text, **kw: parsed.append(text) or real_parse(text, **kw))
        other.embedder.passages.clear()
        mine.add_fact("alice", "养了一只猫叫小白")
        assert "小白" in ask(other, "我的猫叫什么？")[0].text
        assert other.embedder.passages == ["养了一只猫叫小白"] and parsed[0].startswith("- id: ") and "香菜" not in parsed[0]
        mine.update_fact("alice", mine.facts("alice")[0].id, "不再讨厌香菜")
        assert texts(other) == ["不再讨厌香菜", "住在重庆", "养了一只猫叫小白"] and "住在重庆" in parsed[-1]

    def test_warm_reopen_embeds_nothing_and_corrupt_cache_is_rebuilt(self, make_store, caplog):
        store = make_store()
        for text in ("讨厌吃香菜", "住在重庆", "养了一只猫叫小白"):
            store.add_fact("alice", text)
        store.close()  # saves the cache (a small user's is otherwise saved every 32 changes)
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

    def test_change_checks_are_throttled_to_one_stat_per_interval(self, tmp_path, embedder):
        ticks = [100.0]
        store = files_core_store(
paths=CharacterPaths(tmp_path / "x"), config=CoreConfig(check_interval_s=5),
                                embedder=CountingEmbedder(embedder), llm=None, prompts=Prompts("zh"), tz=TZ,
                                clock=lambda: ticks[0])
        store.add_fact("alice", "住在重庆")
        path = store.paths.user("alice").core_file
        ask(store, "我住在哪里？")
        path.write_text(path.read_text(encoding="utf-8").replace("住在重庆", "住在成都"), encoding="utf-8")
        ticks[0] += 4
        assert "住在重庆" in ask(store, "我住在哪里？")[0].text  # not looked at yet
        ticks[0] += 2
        assert "住在成都" in ask(store, "我住在哪里？")[0].text
        # A write always re-reads under the lock, whatever the interval.
        path.write_text(path.read_text(encoding="utf-8").replace("住在成都", "住在上海"), encoding="utf-8")
        store.add_fact("alice", "讨厌吃香菜")
        assert texts(store) == ["住在上海", "讨厌吃香菜"]
        store.close()


class TestRealHttp:
    """The same operations through the OpenAI-compatible client and a real local HTTP server."""

    def test_operations_over_http(self, make_store, openai_server):
        llm = OpenAIChatLLM(model="memory", base_url=openai_server.base_url, timeout_s=5, max_retries=0)
        store = make_store(llm)
        openai_server.push('好的：\n```json\n{"operations": [{"op": "ADD", "text": "住在重庆"}, {"op": "ADD", "text": "讨厌吃香菜"}]}\n```')
        store.record(turn("我住在重庆，讨厌吃香菜", 0))
        assert texts(store) == ["住在重庆", "讨厌吃香菜"]
        # An unreadable reply then a valid one: retried once. Aliases follow similarity order.
        openai_server.push("抱歉，我不太明白", "{'operations': [{'op': 'UPDATE', 'id': 1, 'text': '住在成都'}]}")
        store.record(turn("我现在住在成都", 2))
        assert texts(store) == ["住在成都", "讨厌吃香菜"]
        bodies = [r for r in openai_server.requests if "messages" in r]
        assert "[1] 住在重庆" in bodies[-2]["messages"][-1]["content"]
        openai_server.push('{"operations": [{"op": "DELETE", "id": 2}]}')
        store.record(turn("我不讨厌香菜了", 4))
        shown = [r for r in openai_server.requests if "messages" in r][-1]["messages"][-1]["content"]
        second = next(line[4:] for line in shown.splitlines() if line.startswith("[2] "))
        assert texts(store) == sorted({"住在成都", "讨厌吃香菜"} - {second})
