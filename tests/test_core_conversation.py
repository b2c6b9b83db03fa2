"""End to end: a 200-turn Chinese conversation that states, repeats and later changes facts, and a
hand edit of core_mem.yml between two `build_prompt` calls of the real orchestrator."""

import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.llm import OpenAIChatLLM, ScriptedLLM
from engine.config import CoreConfig, load_config
from engine.orchestrator import MemoryOrchestrator
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Query, Turn
from engine.testing.fake_openai import Status
from engine.factory import files_core_store
from engine.stores.core.background import FACTS as REFERENCE

from counting import CountingEmbedder

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 9, 1, 20, 0, tzinfo=TZ)

FILLER = ["今天天气不错", "给我讲个笑话吧", "你今天过得怎么样？", "工作好累啊", "晚上吃什么好呢？", "哈哈哈太好笑了",
          "周末打算出去走走", "最近在追一部剧", "晚安", "早上好呀"]
STATEMENTS = {
    3: "我叫小明", 5: "我住在重庆", 8: "我讨厌吃香菜", 12: "我养了一只猫叫小白",
    30: "我真的很讨厌吃香菜", 41: "我住在重庆，天天吃火锅", 55: "我叫小明啦", 63: "我讨厌吃香菜！",
    77: "我养了一只猫叫小白，它很可爱", 90: "我住在重庆", 120: "我上个月搬到成都了", 133: "我住在成都",
    150: "其实我不讨厌香菜了", 171: "我搬到成都了", 188: "我叫小明",
}


def fact_passages(counting):
    """What was embedded as a passage, less the relevance decision's reference facts (embedded once)."""
    return [t for t in counting.passages if t not in REFERENCE]


def conversation():
    for i in range(200):
        text = STATEMENTS.get(i, FILLER[i % len(FILLER)])
        yield Turn(id=f"t{i:03d}", user_id="xm", at=T0 + timedelta(hours=6 * i), user=text, assistant="嗯嗯，我在听。")


def sloppy_llm(messages):
    """Plays a memory LLM deterministically from the turns and aliases it is shown. Sloppy on
    purpose: it re-ADDs what is already known (sometimes reworded) and leaves dedup to the store."""
    prompt = messages[-1]["content"]
    shown = {int(n): text for n, text in re.findall(r"^\[(\d+)\] (.+)$", prompt, re.M)}
    said = " ".join(re.findall(r"^用户: (.+)$", prompt, re.M))
    alias = lambda word: next((n for n, t in shown.items() if word in t), None)  # noqa: E731
    ops = []
    if "叫小明" in said:
        ops.append({"op": "ADD", "text": "名字叫小明"})
    if "很讨厌" in said:
        ops.append({"op": "ADD", "text": "很讨厌吃香菜"})
    elif "讨厌吃香菜" in said:
        ops.append({"op": "ADD", "text": "讨厌吃香菜"})
    if "小白" in said:
        ops.append({"op": "ADD", "text": "养了一只猫叫小白"})
    for city in ("重庆", "成都"):
        if f"住在{city}" in said or f"搬到{city}" in said:
            where = alias("住在")
            ops.append({"op": "UPDATE", "id": where, "text": f"住在{city}"} if where else {"op": "ADD", "text": f"住在{city}"})
    if "不讨厌香菜" in said and alias("香菜"):
        ops.append({"op": "UPDATE", "id": alias("香菜"), "text": "不再讨厌香菜"})
    return "```json\n" + str({"operations": ops}) + "\n```"  # Python-literal quotes, fenced


def ask(store, message):
    vector = store.embedder.embed([message], role="query")[0]
    return store.retrieve(Query(message=message, user_id="xm", now=T0, recent=(), text=message, vector=vector))


@pytest.mark.parametrize("mode", ["scripted_llm", "offline_rules"])
def test_two_hundred_turns(tmp_path, embedder, mode):
    llm = ScriptedLLM(rule=sloppy_llm) if mode == "scripted_llm" else None
    every = 2 if llm else 4
    store = files_core_store(
paths=CharacterPaths(tmp_path / "c"), config=CoreConfig(extract_every_turns=every),
                            embedder=embedder, llm=llm, prompts=Prompts("zh"), tz=TZ)
    for turn in conversation():
        store.record(turn)
    facts = {f.text: f for f in store.facts("xm")}
    # No duplicates, and the current facts are the latest.
    assert sorted(facts) == sorted(["名字叫小明", "住在成都", "不再讨厌香菜", "养了一只猫叫小白"])
    assert [r.text for r in facts["住在成都"].history] == ["住在重庆"]
    assert [r.text for r in facts["不再讨厌香菜"].history] == ["讨厌吃香菜"]
    assert facts["住在成都"].learned_at < facts["住在成都"].updated_at
    # The right fact is retrieved for a question; the stale one never is.
    where = ask(store, "我现在住在哪里？")
    assert "住在成都" in where[0].text and not any("重庆" in h.text for h in where)
    assert "小白" in ask(store, "我的猫叫什么名字？")[0].text
    assert "名字叫小明" in ask(store, "你还记得我叫什么吗？")[0].text
    assert not any(h.text.startswith("- 讨厌吃香菜") for h in ask(store, "我讨厌吃什么菜？"))
    store.close()


def test_hand_edit_between_two_build_prompt_calls(tmp_path, embedder):
    """Change one fact, delete one, add one by editing core_mem.yml: the next build_prompt sees it,
    and only the changed and added facts are embedded again."""
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    config = load_config(overrides={"data_dir": str(tmp_path), "core": {"check_interval_s": 0}}, env={})
    counting = CountingEmbedder(embedder)
    store = files_core_store(
paths=CharacterPaths(tmp_path / "agents/xiaoyue"), config=config.core,
                            embedder=counting, llm=None, prompts=Prompts("zh"), tz=TZ)
    for text in ("住在重庆", "讨厌吃香菜", "养了一只猫叫小白", "在腾讯工作"):
        store.add_fact("xm", text, at=T0)
    orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=counting, stores=[store])
    try:
        def core_hits(message):
            result = orch.build_prompt(message, user_id="xm", now=T0 + timedelta(days=1))
            return [h.text for h in result.hits if h.store == "core"], result

        before, result = core_hits("我住在哪里？还有我讨厌吃什么？")
        assert any("住在重庆" in h for h in before) and any("讨厌吃香菜" in h for h in before)
        assert any("住在重庆（2026-09-01 记下）" in m["content"] for m in result.messages)

        path = store.paths.user("xm").core_file
        text = path.read_text(encoding="utf-8").replace("住在重庆", "住在成都")
        text = re.sub(r"- id: \w+\n  text: 讨厌吃香菜\n(?:  .*\n)*", "", text)
        path.write_text(text + "- text: 喜欢爬山\n  learned_at: 2026-09-02\n", encoding="utf-8")
        counting.passages.clear()

        where, _ = core_hits("我住在哪里？")
        dislike, _ = core_hits("我讨厌吃什么？")
        assert any("住在成都" in h for h in where) and not any("重庆" in h or "香菜" in h for h in where + dislike)
        assert any("喜欢爬山（2026-09-02 记下）" in h for h in core_hits("周末我喜欢做什么运动？")[0])
        assert sorted(fact_passages(counting)) == ["住在成都", "喜欢爬山"]
    finally:
        orch.close()


def test_failing_memory_llm_through_the_orchestrator(tmp_path, embedder, openai_server):
    """`record_turn` with a memory LLM answering 500: the offline rules still get all five facts,
    `build_prompt` injects them, and its diagnostics say the turns wait for an LLM retry."""
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    config = load_config(overrides={"data_dir": str(tmp_path)}, env={})
    llm = OpenAIChatLLM(model="memory", base_url=openai_server.base_url, timeout_s=2, max_retries=0)
    store = files_core_store(
paths=CharacterPaths(tmp_path / "agents/xiaoyue"), config=config.core,
                            embedder=embedder, llm=llm, prompts=Prompts("zh"), tz=TZ)
    orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder, stores=[store])
    said = ["我叫林舟", "我住在成都", "我讨厌吃香菜", "我养了一只猫叫小白", "我在腾讯工作"]
    try:
        for i, text in enumerate(said):
            openai_server.push(Status(500))
            orch.record_turn(text, "好的", user_id="lz", at=T0 + timedelta(minutes=i))
        assert orch.flush(timeout=60) and orch.background_errors == []
        facts = sorted(f.text for f in store.facts("lz"))
        assert facts == sorted(["名字叫林舟", "住在成都", "讨厌吃香菜", "养了一只猫叫小白", "在腾讯工作"])
        result = orch.build_prompt("我的猫叫什么名字？", user_id="lz", now=T0 + timedelta(days=1))
        assert any("小白" in h.text for h in result.hits if h.store == "core")
        assert any("5 turn(s) await a memory-LLM retry" in d for d in result.diagnostics)
    finally:
        orch.close()


DEMO_FACTS = ["名字叫林舟", "刚搬到雾川镇", "在设计工作室上班", "讨厌吃香菜", "养了一只猫叫阿橘",
              "用户喜欢在下雨天看书，最喜欢的作家是村上春树", "用户的妹妹在北京读大学", "Is allergic to peanuts"]
UNRELATED = ["今天天气真好", "晚安", "How are you?", "我想去看看阿黄", "昨天我们聊了什么？", "给我讲个笑话吧",
             "What did we talk about yesterday?", "现在几点了"]
RELEVANT = {"你还记得我叫什么吗？": "名字叫林舟", "我讨厌吃什么来着": "讨厌吃香菜", "我的猫叫什么名字？": "养了一只猫叫阿橘",
            "我是做什么工作的": "在设计工作室上班", "Can I eat this peanut butter cookie?": "Is allergic to peanuts"}


@pytest.fixture(scope="module")
def demo_orch(tmp_path_factory, embedder):
    tmp_path = tmp_path_factory.mktemp("relevance")
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    config = load_config(overrides={"data_dir": str(tmp_path)}, env={})
    store = files_core_store(
paths=CharacterPaths(tmp_path / "agents/xiaoyue"), config=config.core,
                            embedder=embedder, llm=None, prompts=Prompts("zh"), tz=TZ)
    store.import_facts("lz", [(text, T0) for text in DEMO_FACTS])
    orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder, stores=[store])
    yield orch
    orch.close()


@pytest.mark.parametrize("message", UNRELATED)
def test_unrelated_messages_inject_no_fact(demo_orch, message):
    result = demo_orch.build_prompt(message, user_id="lz", now=T0 + timedelta(days=1))
    assert [h.text for h in result.hits if h.store == "core"] == []


@pytest.mark.parametrize("message,fact", RELEVANT.items(), ids=list(RELEVANT))
def test_relevant_messages_get_their_fact_and_why(demo_orch, message, fact):
    result = demo_orch.build_prompt(message, user_id="lz", now=T0 + timedelta(days=1))
    core = [h for h in result.hits if h.store == "core"]
    assert any(fact in h.text for h in core) and all("lift" in h.reason for h in core)


def test_a_previous_turn_about_a_fact_does_not_drag_it_into_an_unrelated_message(demo_orch):
    """The decision is on the message itself; the window before it is the conversation, not a query."""
    demo_orch.record_turn("我的猫叫阿橘，特别调皮", "阿橘真可爱！", user_id="lz2", at=T0)
    demo_orch.flush(timeout=60)
    demo_orch.store("core").import_facts("lz2", [("养了一只猫叫阿橘", T0)])
    result = demo_orch.build_prompt("晚安", user_id="lz2", now=T0 + timedelta(minutes=5))
    assert [h for h in result.hits if h.store == "core"] == []
