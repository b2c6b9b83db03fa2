"""Recall through `build_prompt` / `record_turn` (real embedder, real FAISS, files in tmp_path):
the issue's questions reach the asked day, unrelated messages inject nothing, statements that
mention a past time do not pull the range, dates are resolved at write time, recording is
idempotent, forget/edit update the search, a broken day file is reported."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.embed_cache import CachedEmbedder
from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import copy_demo

from demo_data import diary_only_config, errands

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 5, 9, 20, 0, tzinfo=TZ)

# (turn id, when, user, assistant): a few days of real-looking chat, each with its own topic.
TURNS = [
    ("a1", datetime(2026, 4, 28, 21, 0), "最近笔记太乱了，有没有好用的笔记软件？", "可以试试 Obsidian，本地存储，双向链接很好用。"),
    ("a2", datetime(2026, 4, 28, 21, 5), "Obsidian 要收费吗？", "个人使用是免费的。"),
    ("b1", datetime(2026, 4, 30, 22, 10), "最近工作压力好大，有什么舒缓压力和放松心情的办法吗？", "睡前冥想十分钟，或者出去慢跑都不错。"),
    ("b2", datetime(2026, 4, 30, 22, 20), "下周要交季度报告，老板天天催。", "先把报告拆成小块，一天做一点。"),
    ("c1", datetime(2026, 5, 4, 9, 30), "今天阴天，还下了小雨，心情有点低落。", "下雨天适合在家喝杯热茶。"),
    ("c2", datetime(2026, 5, 4, 19, 0), "晚上心情好多了，和朋友吃了火锅。", "吃火锅最治愈了！"),
    ("d1", datetime(2026, 5, 6, 15, 0), "今天读完了一本书，叫《活着》，余华写的。", "那本书很沉重，但很有力量。"),
    ("e1", datetime(2026, 5, 8, 10, 0), "I went to the support group yesterday and it helped a lot.", "I'm glad it helped you!"),
    ("e2", datetime(2026, 5, 8, 10, 5), "My cat Mochi knocked over the plant again.", "Mochi is such a troublemaker."),
]
TEXTS = {tid: (u, a) for tid, _, u, a in TURNS}


@pytest.fixture(scope="module")
def orch(tmp_path_factory, embedder):
    data_dir = tmp_path_factory.mktemp("recall")
    copy_demo(data_dir)
    config = diary_only_config(data_dir)
    cached = CachedEmbedder(embedder, data_dir / "vectors.sqlite3")
    orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=cached)
    for tid, at, user, reply in TURNS:
        orch.record_turn(user, reply, user_id="amy", at=at.replace(tzinfo=TZ), turn_id=tid)
    assert orch.flush(300)
    assert not orch.background_errors
    # A window of unrelated chat, so the diary is asked and the window holds none of the above.
    for i in range(12):
        orch.record_turn(f"随便聊聊{i}", f"嗯嗯{i}", user_id="amy", at=NOW - timedelta(minutes=30 - i), turn_id=f"w{i}")
    assert orch.flush(300)
    yield orch
    orch.close()


def diary_text(result) -> str:
    return "\n".join(h.text for h in result.hits if h.store == "diary")


def shown(result, tid: str) -> bool:
    """Both halves of turn `tid` are in the built messages (the recall check: text containment)."""
    built = "\n".join(m["content"] for m in result.messages)
    user, reply = TEXTS[tid]
    return user in built and reply in built


@pytest.mark.parametrize(
    "question, day_turns",
    [
        ("在5月6号我读了一本书，它的名字是？", ["d1"]),
        ("5月4号的天气怎么样？我的心情怎么样？", ["c1", "c2"]),
        ("在4月28号你给我推荐了一个笔记软件，它的名字是？", ["a1", "a2"]),
        ("我4月30号为什么要问你舒缓压力和放松心情的办法？", ["b1", "b2"]),
        ("What was our conversation yesterday about?", ["e1", "e2"]),
    ],
)
def test_issue_questions_get_the_asked_day(orch, question, day_turns):
    result = orch.build_prompt(question, user_id="amy", now=NOW)
    for tid in day_turns:
        assert shown(result, tid), (question, tid, diary_text(result))
    assert any(h.meta.get("kind") == "turn" for h in result.hits if h.store == "diary")


@pytest.mark.parametrize(
    "request_, day_turns",
    [
        ("Tell me about Thursday April 30th", ["b1", "b2"]),
        ("Summarize our conversations from last week", ["a1", "a2", "b1", "b2"]),
        ("给我讲讲5月4号那天", ["c1", "c2"]),
        ("帮我回顾一下这周三", ["d1"]),
    ],
)
def test_requests_phrased_as_instructions_get_the_asked_day(orch, request_, day_turns):
    """Neither a question nor a recall verb, and too short to search on once the time words are
    gone: before, these got no diary line at all."""
    result = orch.build_prompt(request_, user_id="amy", now=NOW)
    for tid in day_turns:
        assert shown(result, tid), (request_, tid, diary_text(result))


@pytest.mark.parametrize(
    "message, day_turns",
    [
        ("tell me again what I said yesterday", ["e1", "e2"]),
        ("any idea what I told you yesterday", ["e1", "e2"]),
        ("接着昨天的话题说", ["e1", "e2"]),
    ],
)
def test_recall_asked_without_a_question_mark_gets_the_asked_day(orch, message, day_turns):
    """A request or question with no "?" and no wh-word at its start: before, the diary answered
    none of these from yesterday (its turns reached the prompt only through the rolling summary)."""
    result = orch.build_prompt(message, user_id="amy", now=NOW)
    for tid in day_turns:
        assert TEXTS[tid][0] in diary_text(result), (message, tid, diary_text(result))


def test_a_range_is_also_answered_by_what_was_told_of_it_afterwards(tmp_path, embedder):
    """Nothing was said during the weekend; on Monday the user told of it. Asked about the weekend,
    the diary finds Monday's turns whose resolved dates (上周末 → 2026-05-02–2026-05-03) fall in it,
    not only the turns recorded in it (before: the note that nothing was recorded then)."""
    copy_demo(tmp_path)
    monday = datetime(2026, 5, 4, 9, 0, tzinfo=TZ)
    with MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder) as orch:
        orch.record_turn("上周末我带孩子去了动物园，看到了熊猫。", "孩子们一定很开心！", user_id="kim", at=monday, turn_id="m1")
        orch.record_turn("Last weekend I also fixed the bike.", "Nice work!", user_id="kim", at=monday + timedelta(minutes=2),
                         turn_id="m2")
        orch.record_turn("今天要开会。", "加油。", user_id="kim", at=monday + timedelta(days=3), turn_id="t1")
        assert orch.flush(300)
        for question in ("5月2号我干了什么？", "What did I do on May 3rd?"):
            text = diary_text(orch.build_prompt(question, user_id="kim", chat_id="new", now=NOW))
            assert "带孩子去了动物园" in text and "fixed the bike" in text, (question, text)
            assert "今天要开会" not in text, text  # told of nothing in the range


def test_a_day_that_fits_comes_whole_before_what_later_days_told_of_it(tmp_path, embedder):
    """A day whose own turns fit the diary's budget is shown whole, asked about as a whole or for
    something within it: turns of later days that tell of it (their resolved dates fall in it) take
    only what it leaves, never push its own turns out (before: 3 of a 20-turn day's turns left out
    for two told of it the next week)."""
    copy_demo(tmp_path)
    day = datetime(2026, 5, 6, 20, 0, tzinfo=TZ)
    own = [(f"d{i}", day + timedelta(minutes=5 * i), line, "好的。") for i, line in enumerate(errands(8))]
    story = "，".join(["朋友们一起去爬山", "山顶的风景特别美", "下山的时候下起了大雨", "我们在小卖部躲了一个小时的雨"] * 3)
    told = [(f"t{i}", day + timedelta(days=1, hours=1, minutes=i), f"昨天晚上{story}。", "听起来很难忘。") for i in range(3)]
    overrides = {"data_dir": str(tmp_path), "core": {"enabled": False}, "world_book": {"enabled": False},
                 "retrieval": {"caps": {"diary": 420}}}
    with MemoryOrchestrator.from_config("xiaoyue", config=load_config(overrides=overrides, env={}), embedder=embedder) as orch:
        for tid, at, user, reply in own + told:
            orch.record_turn(user, reply, user_id="lee", at=at, turn_id=tid)
        assert orch.flush(300)
        for question in ("5月6号我们聊了什么？", "What did we talk about on May 6?", "On May 6 I told you about my landlord, what did I say?"):
            result = orch.build_prompt(question, user_id="lee", chat_id="new", now=NOW)
            shown = {str(i) for h in result.hits if h.store == "diary" for i in (h.meta.get("ids") or [h.meta.get("id")]) if i}
            assert {tid for tid, *_ in own} <= shown, (question, sorted(shown), diary_text(result))


@pytest.mark.parametrize("message, vague", [
    ("What did we talk about on Wednesday? I keep forgetting things lately.", "lately"),
    ("最近记性太差了，周三我们聊了什么？", "最近"),
    # a vague count is as vague as "lately"
    ("这几天脑子乱乱的，周三我们聊了什么？", "这几天"),
    ("这两天一直没睡好，周三我跟你说了什么来着？", "这两天"),
    ("I've been so tired the last few days. What did we talk about on Wednesday?", "the last few days"),
])
def test_a_named_day_is_asked_not_the_vague_time_beside_it(orch, message, vague):
    """"Lately" in the same message is background, not a second range: the named day is answered."""
    result = orch.build_prompt(message, user_id="amy", now=NOW)
    reasons = [h.reason for h in result.hits if h.store == "diary"]
    assert TEXTS["d1"][0] in diary_text(result), (message, reasons)
    assert not any(f'"{vague}"' in r for r in reasons), (message, reasons)


def test_last_time_is_the_previous_sitting(tmp_path, embedder):
    """"上次我们聊到哪了" names no calendar time: it is the sitting before the current one, which
    only the diary knows (in a new chat the window holds none of it)."""
    copy_demo(tmp_path)
    earlier = datetime(2026, 5, 1, 20, 0, tzinfo=TZ)
    last = datetime(2026, 5, 6, 21, 0, tzinfo=TZ)
    with MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder) as orch:
        for tid, at, user, reply in [("j1", earlier, "我在考虑换工作，想去做产品经理。", "产品经理很考验沟通能力。"),
                                     ("g1", last, "今天学了一首新歌，叫《晴天》。", "周杰伦的经典！"),
                                     ("g2", last + timedelta(minutes=3), "我练了一晚上吉他和弦。", "手指疼不疼？")]:
            orch.record_turn(user, reply, user_id="ann", chat_id="old", at=at, turn_id=tid)
        assert orch.flush(300)
        for question in ("上次我们聊到哪了？", "where did we leave off?", "What did we talk about last time?"):
            text = diary_text(orch.build_prompt(question, user_id="ann", chat_id="new", now=NOW))
            assert "今天学了一首新歌" in text and "我练了一晚上吉他和弦" in text, (question, text)
            assert "产品经理" not in text, (question, text)
        # Mid-sitting (a turn ten minutes ago), "last time" is still the sitting before.
        orch.record_turn("今天好累", "早点休息", user_id="ann", chat_id="now", at=NOW - timedelta(minutes=10), turn_id="n1")
        assert orch.flush(300)
        text = diary_text(orch.build_prompt("上次我们聊到哪了？", user_id="ann", chat_id="now", now=NOW))
        assert "我练了一晚上吉他和弦" in text, text
        # A statement about another "last time" is no question about the conversation.
        assert diary_text(orch.build_prompt("上次去日本的时候下雨了", user_id="ann", chat_id="new", now=NOW)) == ""


@pytest.mark.parametrize("message", ["今天天气真好", "晚安", "How are you?", "好累啊", "Good night!"])
def test_unrelated_messages_inject_no_diary_lines(orch, message):
    result = orch.build_prompt(message, user_id="amy", now=NOW)
    assert [h for h in result.hits if h.store == "diary"] == []


@pytest.mark.parametrize("message", ["昨天加班到很晚", "I went hiking last weekend", "前几天手机摔坏了"])
def test_statements_with_a_past_time_do_not_pull_the_range(orch, message):
    result = orch.build_prompt(message, user_id="amy", now=NOW)
    assert not [h for h in result.hits if h.store == "diary" and h.meta.get("kind") in ("turn", "digest", "empty")]


def test_content_question_without_time_words_finds_the_turn(orch):
    result = orch.build_prompt("你之前推荐的那个笔记软件叫什么来着？", user_id="amy", now=NOW)
    assert "Obsidian" in diary_text(result)
    result = orch.build_prompt("What is my cat called?", user_id="amy", now=NOW)
    assert "Mochi" in diary_text(result)


def test_the_search_vector_leaves_out_the_participants_names(orch):
    """Nearly every line is said to or by one of them, so a name in the query vector matches
    everything a little; the side prior decides whose lines rank first instead."""
    store = orch.store("diary")
    names = store.names()
    assert store.query_texts(f"{names.char}，{names.user}上次说的笔记软件叫什么？", []) == ["， 上次说的笔记软件叫什么？"]
    assert store.query_texts("那个笔记软件叫什么？", []) == []  # no names, no window: the query vector is the message
    result = orch.build_prompt(f"{names.char}，你推荐的笔记软件叫什么？", user_id="amy", now=NOW)
    assert "Obsidian" in diary_text(result)


def test_dates_are_resolved_at_write_time(orch):
    diary = orch.store("diary")
    entry = next(e for e in diary.entries("amy", datetime(2026, 5, 8, tzinfo=TZ), datetime(2026, 5, 9, tzinfo=TZ)) if e.id == "e1")
    assert entry.dates == (("yesterday", "2026-05-07"),)
    path = orch.paths.user("amy").diary_dir / "2026-05-08.yaml"
    assert 'dates: [["yesterday", "2026-05-07"]]' in path.read_text(encoding="utf-8")
    result = orch.build_prompt("When did I go to the support group?", user_id="amy", now=NOW)
    assert "yesterday (2026-05-07)" in diary_text(result)
    assert shown(result, "e1")  # the annotation follows the text; the words stay whole


def test_replayed_turn_adds_nothing(orch):
    from engine.stores.base import Turn

    diary = orch.store("diary")
    before = diary.entries("amy", datetime(2026, 4, 1, tzinfo=TZ), NOW)
    index_before = len(diary.backend.user("amy").search)
    again = Turn("c1", "amy", datetime(2026, 5, 4, 9, 30, tzinfo=TZ), TEXTS["c1"][0], TEXTS["c1"][1])
    diary.record(again)
    diary.record(again)
    assert diary.entries("amy", datetime(2026, 4, 1, tzinfo=TZ), NOW) == before
    assert len(diary.backend.user("amy").search) == index_before


def test_forget_and_edit_update_the_search(orch):
    diary = orch.store("diary")
    assert "Mochi" in " ".join(r.text for r in diary.search("amy", "cat knocked over the plant"))
    edited = diary.edit("amy", "e2", user="My cat Mochi broke a vase yesterday.")
    assert edited.dates == (("yesterday", "2026-05-07"),)
    found = diary.search("amy", "cat broke a vase")
    # The edited turn comes first (shown by its best line: with the words nearest the question
    # added, that may be its reply, "Mochi is such a troublemaker."); its new line is found by a
    # word only it holds, and the old words are gone.
    assert found and found[0].turn_id == "e2"
    found = diary.search("amy", "a broken vase")
    assert found and found[0].turn_id == "e2" and "vase" in found[0].text
    assert all("knocked" not in r.text for r in diary.search("amy", "cat knocked over the plant"))
    assert diary.forget("amy", "e2") == 1
    assert diary.forget("amy", "e2") == 0
    assert all(r.turn_id != "e2" for r in diary.search("amy", "cat broke a vase"))
    day = datetime(2026, 5, 8, tzinfo=TZ)
    assert [e.id for e in diary.entries("amy", day, day + timedelta(days=1))] == ["e1"]


def test_broken_day_file_is_reported_not_called_empty(tmp_path, embedder):
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    folder = tmp_path / "agents/xiaoyue/users/bob/memorys"
    folder.mkdir(parents=True)
    (folder / "2026-05-08.yaml").write_text("- id: x\n  time: [unclosed\n  user: hi\n", encoding="utf-8")
    config = load_config(overrides={"data_dir": str(tmp_path), "core": {"enabled": False}, "world_book": {"enabled": False}}, env={})
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as orch:
        result = orch.build_prompt("昨天我们聊了什么？", user_id="bob", now=NOW)
        assert any("2026-05-08.yaml:" in d for d in result.diagnostics), result.diagnostics
        text = diary_text(result)
        assert "没有任何对话记录" not in text and "2026-05-08.yaml" in text


def test_cache_deleted_under_a_running_engine_is_not_an_error_and_is_rebuilt_at_the_next_start(tmp_path, embedder):
    """A user clears `.cache/` while kioku runs, then keeps chatting. Before, the next turn's index
    write re-created a short vector file by path and every later record and search of that user
    failed ("mmap length is greater than file size": the diary skipped in every prompt, the
    journal retrying each turn) until a restart."""
    copy_demo(tmp_path)
    config = diary_only_config(tmp_path)
    before = [("p1", "我最近在学钢琴，每天练半小时音阶。", "坚持下去，手指会越来越灵活。"),
              ("p2", "周末去爬了香山，红叶特别好看。", "秋天的香山最美了。")]
    after = [("q1", "今天第一次去攀岩馆，爬了三条线路。", "第一次就爬三条，很厉害！")]
    day = datetime(2026, 5, 6, 20, 0, tzinfo=TZ)

    def record(orch, turns, at):
        for i, (tid, user, reply) in enumerate(turns):
            orch.record_turn(user, reply, user_id="ann", at=at + timedelta(minutes=i), turn_id=tid)
        assert orch.flush(300) and not orch.background_errors, orch.background_errors

    def window(orch, tag):  # unrelated chat, so the window holds none of the turns asked about
        record(orch, [(f"{tag}{i}", f"随便聊聊{i}", f"嗯嗯{i}") for i in range(12)], NOW - timedelta(minutes=30))

    def asked(orch, question, tid, text):
        result = orch.build_prompt(question, user_id="ann", now=NOW)
        assert not result.diagnostics, result.diagnostics
        assert text in diary_text(result), (question, tid, diary_text(result))

    orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder)
    record(orch, before, day)
    cache = tmp_path / "agents/xiaoyue/.cache"
    assert (cache / "users/ann/diary/search/vectors.f16").is_file()
    shutil.rmtree(cache)
    record(orch, after, day + timedelta(days=1))
    window(orch, "w")
    asked(orch, "我在学什么乐器？", "p1", "每天练半小时音阶")
    asked(orch, "我第一次去攀岩馆爬了几条线路？", "q1", "爬了三条线路")
    orch.close()

    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as again:
        asked(again, "我在学什么乐器？", "p1", "每天练半小时音阶")
        asked(again, "我第一次去攀岩馆爬了几条线路？", "q1", "爬了三条线路")
    assert (cache / "users/ann/diary/search/vectors.f16").stat().st_size > 0  # rebuilt at the start


def test_an_engine_closed_and_reopened_in_one_process_keeps_the_shared_index(tmp_path, embedder):
    """The diary is opened on whichever thread first needs it (the background worker's for a
    recorded turn, the caller's for a prompt) and closed on the caller's. Its claim on the shared
    index folder was a thread-local file lock, so a close on another thread never released it
    (only the old engine's garbage collection did), and the reopened engine took the folder for
    another process's and rebuilt the whole index into a private copy (deleted again at its
    close: a full rebuild at every reopen)."""
    copy_demo(tmp_path)
    config = diary_only_config(tmp_path)
    at = datetime(2026, 5, 6, 20, 0, tzinfo=TZ)
    folder = tmp_path / "agents/xiaoyue/.cache/users/ann/diary"
    first = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder)
    first.record_turn("我最近在学钢琴", "坚持练习", user_id="ann", at=at, turn_id="p1")  # opened on the worker
    assert first.flush(300) and not first.background_errors
    first.close()  # the closed engine is still referenced, as an application's old instance may be
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as second:
        second.build_prompt("我在学什么乐器？", user_id="ann", now=at + timedelta(days=1))  # opened here
        assert [p.name for p in folder.iterdir() if p.is_dir()] == ["search"]
    del first


def test_a_range_too_long_to_show_whole_answers_from_its_turns_even_when_no_word_matches(tmp_path, embedder):
    """"Where did I go in July 2026?" over a July too long for the budget, whose lines share no word
    with the question and none stands out by meaning: the month's turns are still what is shown
    (ranked), not nothing but a note that they were left out."""
    copy_demo(tmp_path)
    orch = MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder)
    dishes = ["braised pork", "tomato egg soup", "dumplings", "mapo tofu", "fried rice", "noodles with scallion oil"]
    try:
        for i in range(36):
            at = datetime(2026, 7, 1 + i % 28, 19, i, tzinfo=TZ)
            dish = dishes[i % len(dishes)]
            orch.record_turn(
                f"Tonight I cooked {dish} again, number {i}: first the sauce, then the heat low for a long while, "
                f"then a pinch of sugar at the end so it tastes rounder; the kitchen smelled wonderful.",
                f"That sounds delicious. {dish.capitalize()} is worth the patience; did you keep some for tomorrow?",
                user_id="jo", at=at, turn_id=f"july{i}")
        for i in range(6):
            orch.record_turn(f"Work was busy this week, meeting {i}.", "Take a break when you can.", user_id="jo",
                             at=datetime(2026, 8, 3 + i, 9, 0, tzinfo=TZ), turn_id=f"aug{i}")
        assert orch.flush(300)
        result = orch.build_prompt("Where did I go in July 2026?", user_id="jo", now=datetime(2026, 9, 1, 12, tzinfo=TZ))
        text = diary_text(result)
        assert "Tonight I cooked" in text, text
        assert "Work was busy" not in text  # the range's lines, not the rest of the diary
    finally:
        orch.close()


def test_a_line_said_again_and_again_is_shown_once(tmp_path, embedder):
    """The same sentence on many days is one line of the diary's budget, not one per day; the other
    lines that match still come."""
    copy_demo(tmp_path)
    orch = MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder)
    try:
        for i in range(8):
            orch.record_turn("I fed my turtles Shelly and Pebble their lettuce this morning.", "They must love it.",
                             user_id="jo", at=datetime(2026, 6, 1 + i, 9, 0, tzinfo=TZ), turn_id=f"same{i}")
        orch.record_turn("Pebble the turtle hid in her shell all afternoon today.", "Maybe she was tired.",
                         user_id="jo", at=datetime(2026, 6, 12, 15, 0, tzinfo=TZ), turn_id="other")
        for i in range(12):  # a window of other chat: lines in the window are not repeated by the diary
            orch.record_turn(f"随便聊聊{i}", f"嗯嗯{i}", user_id="jo", at=datetime(2026, 7, 1, 11, i, tzinfo=TZ), turn_id=f"w{i}")
        assert orch.flush(300)
        result = orch.build_prompt("What do my turtles Shelly and Pebble eat?", user_id="jo", now=datetime(2026, 7, 1, 12, tzinfo=TZ))
        text = diary_text(result)
        assert text.count("their lettuce this morning") == 1, text
        assert "hid in her shell" in text, text
    finally:
        orch.close()


def test_a_remembered_line_quotes_the_turn_as_said_on_one_line(tmp_path, embedder):
    """A diary line is the half's text as it was said (its spacing kept), with line breaks made
    spaces so each half stays one line; it is charged what it costs as sent."""
    from engine.tokens import count_tokens

    copy_demo(tmp_path)
    orch = MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder)
    said = "My turtle Shelly  loves lettuce.  Pebble prefers kale! "
    listed = "Their shopping list:\nlettuce\nkale\n"
    try:
        orch.record_turn(said, listed, user_id="jo", at=datetime(2026, 6, 1, 9, 0, tzinfo=TZ), turn_id="t1")
        for i in range(12):  # a window of other chat: lines in the window are not repeated by the diary
            orch.record_turn(f"随便聊聊{i}", f"嗯嗯{i}", user_id="jo", at=datetime(2026, 7, 1, 11, i, tzinfo=TZ), turn_id=f"w{i}")
        assert orch.flush(300)
        result = orch.build_prompt("What do my turtles Shelly and Pebble eat?", user_id="jo",
                                   now=datetime(2026, 7, 1, 12, tzinfo=TZ))
        text = diary_text(result)
        assert f"{{{{user}}}}: {said}\n" in text, text
        assert "{{char}}: Their shopping list: lettuce kale" in text, text
        names = orch.store("diary").names()
        sent = text.replace("{{user}}", names.user).replace("{{char}}", names.char)
        assert count_tokens(sent) <= result.tokens["diary"]
    finally:
        orch.close()


def test_admin_reads_many_turns_at_once_in_the_order_asked(orch):
    found = orch.admin.search_diary("amy", "Obsidian 笔记软件", k=5)
    ids = [r.turn_id for r in found]
    assert ids[:2] == ["a1", "a2"], ids
    asked = ids[::-1] + ["no-such-turn"]
    entries = orch.admin.diary_turns("amy", asked)
    assert [e.id for e in entries] == ids[::-1]  # the order asked, the missing one left out
    assert [(e.user, e.assistant) for e in entries if e.id in TEXTS] == [TEXTS[i] for i in ids[::-1] if i in TEXTS]


@pytest.mark.parametrize(
    "lines",
    [
        ["I fed the turtles.", "We went hiking on Saturday.", "The museum was closed!"],  # "." + newline: one token
        ["今天读完了《活着》。", "晚上和朋友吃了火锅！", "下雨了"],
        ["Coco is my puppy", "She is two months old", "Her name is Coco"],  # no final punctuation
    ],
)
def test_search_lines_are_charged_what_they_cost_and_fill_the_budget(lines):
    """A budget of exactly what the lines cost, sent as the diary sends them, shows all of them,
    and a day's `tokens` is never less than its text counts (the fusion trusts it)."""
    from datetime import timezone

    from engine.search.base import SearchHit
    from engine.stores.diary.render import search_hits
    from engine.tokens import count_tokens

    day = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)
    found = [SearchHit(turn_id=f"t{i}", ts=int(day.timestamp()) + 60 * i, side="user", score=1.0 - i / 10,
                       lexical=0.0, dense=0.0, text=line) for i, line in enumerate(lines)]
    sent = "[2026-06-01]\n" + "\n".join(f"Amy: {line}" for line in lines)
    exact = count_tokens("[2026-06-01]\n") + sum(count_tokens(f"Amy: {line}\n") for line in lines)
    hits = search_hits(found, tz=timezone.utc, budget=exact, max_line_tokens=200, skip_texts=set(), reason="test",
                       names=("Amy", "Bot"))
    assert len(hits) == 1 and hits[0].meta["ids"] == [f"t{i}" for i in range(len(lines))]
    assert hits[0].text.replace("{{user}}", "Amy") == sent
    assert count_tokens(sent) <= hits[0].tokens <= exact
    assert search_hits(found, tz=timezone.utc, budget=exact - 1, max_line_tokens=200, skip_texts=set(), reason="test",
                       names=("Amy", "Bot"))[0].meta["ids"] != [f"t{i}" for i in range(len(lines))]


@pytest.mark.parametrize(
    "text",
    [
        "I fed the turtles.", "今天读完了《活着》。", "2023 was a good year!", "“Quoted” at the start", "...",
        "  spaces   and\nnewlines inside. ", "emoji 🐢🐢 at the end", "Mr. O'Neil's café", "数字123和English混合！",
    ],
)
def test_a_half_is_charged_at_index_time_exactly_what_its_line_costs(tmp_path, embedder, text):
    """The search index counts each half's line cost once, when it indexes the turn; a shown line
    `Name: text` plus its newline costs exactly the name's part plus that, for any name."""
    from engine.search.base import TurnDoc
    from engine.search.files import FileTurnIndex
    from engine.tokens import count_tokens

    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add([TurnDoc("t1", 1_700_000_000, text, "ok.")])
    ix.save(force=True)
    again = FileTurnIndex(tmp_path / "ix", embedder)
    flat = " ".join(text.split())
    for index in (ix, again):
        for name in ("Amy", "小林", "{{user}}", "Dr. Who"):
            assert count_tokens(f"{name}:") + int(index.line_tokens.view[0, 0]) == count_tokens(f"{name}: {flat}\n")


def test_an_index_saved_before_line_costs_were_kept_opens_and_counts_when_shown(tmp_path, embedder):
    import io
    from datetime import timezone

    import numpy as np

    from engine.search.base import SearchRequest, TurnDoc
    from engine.search.files import FileTurnIndex
    from engine.stores.diary.render import search_hits

    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add([TurnDoc("t1", 1_700_000_000, "My turtle Shelly loves lettuce.", "Cute!")])
    ix.save(force=True)
    with np.load(tmp_path / "ix" / "meta.npz") as npz:  # as the previous release wrote it
        arrays = {k: npz[k] for k in npz.files if k != "line_tokens"}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (tmp_path / "ix" / "meta.npz").write_bytes(buf.getvalue())
    old = FileTurnIndex(tmp_path / "ix", embedder)
    assert len(old) == 1 and old.line_tokens.view.tolist() == [[-1, -1]]
    hits = old.search(SearchRequest(text="turtle lettuce", vector=embedder.embed(["turtle lettuce"], role="query")[0]))
    assert hits and hits[0].tokens == -1 and "Shelly" in hits[0].text
    # Shown, such a line is counted then: the same charge as from an index that kept the cost.
    fresh = FileTurnIndex(tmp_path / "fresh", embedder)
    fresh.add([TurnDoc("t1", 1_700_000_000, "My turtle Shelly loves lettuce.", "Cute!")])
    same = [h for h in fresh.search(SearchRequest(text="turtle lettuce", vector=embedder.embed(["turtle lettuce"], role="query")[0]))
            if h.side == hits[0].side]
    assert same and same[0].tokens > 0
    shown = [search_hits([h], tz=timezone.utc, budget=100, max_line_tokens=200, skip_texts=set(), reason="t",
                         names=("Amy", "Bot"))[0].tokens for h in (hits[0], same[0])]
    assert shown[0] == shown[1]


def _record_eval_conversation(orch, sample: dict, user: str) -> datetime:
    """Record one conversation of bench/zh_eval (speaker_a's line, then speaker_b's reply) at
    its real times; returns the day after its last session."""
    conv, tz = sample["conversation"], ZoneInfo(sample["timezone"])
    n, last = 1, None
    while f"session_{n}" in conv:
        stamp = conv[f"session_{n}_date_time"].replace(" on ", " ")
        last = datetime.strptime(stamp, "%I:%M %p %d %B, %Y").replace(tzinfo=tz)
        lines = conv[f"session_{n}"]
        for i in range(0, len(lines), 2):
            reply = lines[i + 1]["text"] if i + 1 < len(lines) and lines[i + 1]["speaker"] != conv["speaker_a"] else ""
            orch.record_turn(lines[i]["text"], reply, user_id=user, at=last + timedelta(minutes=i))
        n += 1
    assert orch.flush(600) and not orch.background_errors
    return last + timedelta(days=1)


@pytest.fixture(scope="module")
def tea_house(tmp_path_factory, embedder):
    """A real three-session Chinese conversation (bench/zh_eval, zh-01), about 70 turns."""
    import json

    data_dir = tmp_path_factory.mktemp("tea_house")
    copy_demo(data_dir)
    cached = CachedEmbedder(embedder, data_dir / "vectors.sqlite3")
    orch = MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(data_dir), embedder=cached)
    sample = json.loads((ROOT / "bench/zh_eval/zh_eval.json").read_text(encoding="utf-8"))[0]
    now = _record_eval_conversation(orch, sample, "lin")
    yield orch, now
    orch.close()


@pytest.mark.parametrize("message", ["How's it going?", "Really?", "Sure, sounds good", "今天天气真好", "晚安"])
def test_small_talk_in_another_language_does_not_open_the_search_gate(tea_house, message):
    """A short line ("真的吗？", "好的") is close in meaning to a short message, and its cosine
    used to be measured against the spread of whole turns' cosines, where it stood out for any
    small talk; only a turn's cosine is compared with the turns' now."""
    orch, now = tea_house
    result = orch.build_prompt(message, user_id="lin", now=now)
    assert [h.text for h in result.hits if h.store == "diary"] == []


@pytest.mark.parametrize("message", ["是真的吗", "你今天心情怎么样", "你最喜欢什么颜色呀", "你平时都做些什么",
                                     "你想吃什么"])
def test_a_message_of_only_common_words_that_names_no_one_of_us_searches_nothing(tea_house, message):
    """In a diary of ~70 turns 真的, 心情, 喜欢 or 做 is rare enough to open the search's gate, and
    the whole budget of unrelated lines followed; against a general-language prior (jionlp's IDF
    table) they are among the language's commonest words, and the message asks nothing of us."""
    orch, now = tea_house
    result = orch.build_prompt(message, user_id="lin", now=now)
    assert [h.text for h in result.hits if h.store == "diary"] == []


@pytest.mark.parametrize("message", ["你喜欢吃什么水果", "你喜欢看书吗", "你说话好温柔"])
def test_a_common_word_alone_does_not_open_the_search_gate(tea_house, message):
    """喜欢 and 说 are in many of a small diary's lines; in the lexical agreement of a message that
    names neither the user nor us a common word counts a fraction of its IDF, so its rarer words
    (水果, 看书, 温柔) must match. One that names the user keeps the full weight: "我在学什么乐器？"
    finds "我最近在学钢琴" through 学 alone (test_cache_deleted_under_a_running_engine…)."""
    orch, now = tea_house
    result = orch.build_prompt(message, user_id="lin", now=now)
    assert [h.text for h in result.hits if h.store == "diary"] == []


@pytest.mark.parametrize("message, expected", [
    ("我最喜欢喝你这儿的什么茶？", "桂花乌龙"),  # only common words, but it asks about me
    ("我们说过喜欢什么茶吗", "桂花乌龙"),        # about us
    ("旅人喜欢喝什么茶？", "桂花乌龙"),           # the user by name (the demo character's user)
])
def test_common_words_still_search_when_the_message_names_the_user_or_us(tea_house, message, expected):
    orch, now = tea_house
    result = orch.build_prompt(message, user_id="lin", now=now)
    assert expected in "\n".join(h.text for h in result.hits if h.store == "diary")


def test_a_question_about_the_conversation_still_finds_it(tea_house):
    orch, now = tea_house
    result = orch.build_prompt("茶馆里的那只猫叫什么名字？", user_id="lin", now=now)
    assert "阿黄" in "\n".join(h.text for h in result.hits if h.store == "diary")


@pytest.mark.parametrize("k", [2, 4, 12])
def test_near_duplicates_are_skipped_past_the_first_units_compared_at_once(tmp_path, embedder, k):
    """The first k + k/4 ranked lines are compared with each other at once, later ones one by one:
    with a line said on 30 days and a small k, the search must go far past that head and still
    return the line once and then the other matching lines, each once."""
    from engine.search.base import SearchRequest, TurnDoc
    from engine.search.files import FileTurnIndex

    ix = FileTurnIndex(tmp_path / "ix", embedder)
    day = 86_400
    same = [TurnDoc(f"s{i}", 1_700_000_000 + i * day, "I fed my turtle Shelly her lettuce.", "") for i in range(30)]
    other = [
        TurnDoc(f"o{i}", 1_700_000_000 + (40 + i) * day, text, "")
        for i, text in enumerate(["Shelly the turtle hid in her shell.", "My turtle Shelly likes warm water.",
                                  "Shelly bit the lettuce leaf in half.", "The turtle tank needs a new filter."])
    ]
    ix.add(same + other)
    query = "my turtle Shelly and lettuce"  # every word is in the repeated line: its 30 copies rank first
    vector = embedder.embed([query], role="query")[0]
    found = ix.search(SearchRequest(text=query, vector=vector, k=k))
    texts = [h.text for h in found if h.side == "user"]
    assert texts.count("I fed my turtle Shelly her lettuce.") == 1, texts
    assert len(texts) == len(set(texts)) == min(k, 5), texts


SAID = datetime(2026, 5, 7, 9, 30, tzinfo=TZ)  # a Thursday morning


@pytest.mark.parametrize(
    "text, phrase, label",
    [
        # A night runs past midnight; it is dated by its evening, as people date it.
        ("昨晚看了《星际穿越》，太震撼了", "昨晚", "2026-05-06"),
        ("昨天夜里下了好大的雨", "昨天夜里", "2026-05-06"),
        ("前天晚上和朋友去唱歌了", "前天晚上", "2026-05-05"),
        ("I watched Interstellar last night!", "last night", "2026-05-06"),
        ("the night before last I couldn't sleep", "the night before last", "2026-05-05"),
        ("On Saturday night we went dancing", "On Saturday night", "2026-05-02"),
        ("two nights ago the power went out", "two nights ago", "2026-05-05"),
        # A clock in it is still to the hour.
        ("last night at 11 I finally slept", "last night at 11", "2026-05-06 23:00"),
        ("昨天晚上十点才下班", "昨天晚上十点", "2026-05-06 22:00"),
        # Tonight is the turn's own day, which every line shows already.
        ("今晚想吃火锅", None, None),
        ("what are you doing tonight?", None, None),
        # A rolling span that crosses midnight is no night.
        ("I slept badly in the past 12 hours", None, None),
    ],
)
def test_relative_dates_are_stored_as_the_days_they_meant(text, phrase, label):
    from engine.stores.diary.dates import resolve_dates

    found = dict(resolve_dates([text], SAID, TZ))
    assert found == ({phrase: label} if phrase else {}), found


def test_a_night_told_of_the_next_morning_answers_a_question_about_that_day(tmp_path, embedder):
    """"昨晚看了《星际穿越》" said on May 7 is about May 6: a question about May 6 finds it
    though it was said the day after and shares no word with the question."""
    config = diary_only_config(tmp_path)
    copy_demo(tmp_path)
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as orch:
        orch.record_turn("昨晚看了《星际穿越》，太震撼了", "诺兰的片子总是这样！", user_id="kim", at=SAID, turn_id="n1")
        orch.record_turn("早饭吃了包子", "包子不错", user_id="kim", at=SAID + timedelta(minutes=5), turn_id="n2")
        for i in range(12):
            orch.record_turn(f"随便聊聊{i}", f"嗯嗯{i}", user_id="kim", at=NOW - timedelta(minutes=30 - i), turn_id=f"w{i}")
        assert orch.flush(300) and not orch.background_errors
        for question in ("5月6号晚上我干什么了？", "What did I do on the evening of May 6th?"):
            text = diary_text(orch.build_prompt(question, user_id="kim", now=NOW))
            assert "昨晚看了《星际穿越》，太震撼了 [昨晚 (2026-05-06)]" in text, (question, text)


def test_a_content_question_about_a_day_that_fits_gets_the_whole_day(tmp_path, embedder):
    """"5月5号我为什么犹豫要不要取消旅行？": the reason (奶奶住院了) shares no word with the question,
    and other days match the question better. The asked day (more than half the diary's budget, less
    than three quarters) is shown whole; with half, only the few of its lines the search ranked among
    every day's best were shown."""
    from demo_data import errands

    copy_demo(tmp_path)
    day = datetime(2026, 5, 5, 20, 0, tzinfo=TZ)
    turns = [("今天下午奶奶因为血压太高住院了，邻居发现了送去的医院。", "啊，现在情况怎么样？")]
    turns += [(line, f"嗯嗯，辛苦了（{i}）") for i, line in enumerate(errands(20))]
    turns += [("我在犹豫要不要取消后天的旅行，回老家陪她。", "你妈妈怎么说？")]
    # Other days talk of trips and of cancelling things: the search has better-matching lines
    # than the reason.
    places = ["大理", "厦门", "青岛", "成都", "西安", "桂林", "杭州", "三亚", "丽江", "拉萨"]
    plans = ["健身课", "牙医预约", "聚餐", "面试", "读书会", "瑜伽课", "音乐会", "相亲", "家长会", "体检"]
    others = [(f"去{p}旅行要不要带{t}？", f"{p}这个季节带{t}比较好。") for p in places for t in ("伞", "外套", "相机")]
    others += [(f"我犹豫要不要取消{p}，{w}。", f"取消{p}也没关系，下次再约。") for p in plans for w in ("好纠结", "想了一晚上")]
    with MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(tmp_path), embedder=embedder) as orch:
        for i, (user, reply) in enumerate(others):
            at = day - timedelta(days=1 + i % 3, minutes=i)
            orch.record_turn(user, reply, user_id="kim", at=at, turn_id=f"o{i}")
        for i, (user, reply) in enumerate(turns):
            orch.record_turn(user, reply, user_id="kim", at=day + timedelta(minutes=i), turn_id=f"d{i}")
        for i in range(12):
            orch.record_turn(f"随便聊聊{i}", f"嗯嗯{i}", user_id="kim", at=NOW - timedelta(minutes=30 - i), turn_id=f"w{i}")
        assert orch.flush(300) and not orch.background_errors
        result = orch.build_prompt("5月5号我为什么犹豫要不要取消旅行？", user_id="kim", now=NOW)
        text = diary_text(result)
        assert all(user in text for user, _ in turns), text
        day_tokens = sum(h.tokens for h in result.hits if h.store == "diary" and h.meta.get("kind") == "turn")
        assert orch.store("diary").budget_tokens // 2 < day_tokens, day_tokens


@pytest.mark.parametrize(
    "start, end",
    [
        (datetime(2023, 5, 7, tzinfo=TZ), datetime(2023, 5, 8, tzinfo=TZ)),  # a day
        (datetime(2023, 7, 24, tzinfo=TZ), datetime(2023, 7, 31, tzinfo=TZ)),  # a week of days
        (datetime(2023, 7, 1, tzinfo=TZ), datetime(2023, 8, 1, tzinfo=TZ)),  # a month
        (datetime(2023, 12, 1, tzinfo=TZ), datetime(2024, 1, 1, tzinfo=TZ)),  # December
        (datetime(2023, 1, 1, tzinfo=TZ), datetime(2024, 1, 1, tzinfo=TZ)),  # a year
        (datetime(2023, 5, 7, 14, tzinfo=TZ), datetime(2023, 5, 7, 15, tzinfo=TZ)),  # an hour
    ],
)
def test_a_stored_date_label_reads_back_as_its_span(start, end):
    """What the diary stores for a resolved expression (`describe_range`) is read back as the same
    span when an asked range looks for turns that told of it (`label_range`)."""
    from engine.stores.diary.dates import describe_range, label_range

    assert label_range(describe_range(start, end), TZ) == (start, end)
    assert label_range("sometime", TZ) is None
