"""The diary store against real files in tmp_path and the real embedder."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.llm import ScriptedLLM
from engine.config import DiaryConfig
from engine.errors import LLMError
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Query, Turn
from engine.factory import files_diary_store
from engine.stores.diary import DiaryEntry, entry_id_for
from engine.stores.diary.dayfile import day_file_name, load_day
from engine.stores.diary.entry import format_entry

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 15, 30, tzinfo=TZ)  # a Sunday


@pytest.fixture(scope="module")
def embedder(embedder, tmp_path_factory):
    """The real embedder behind the real vector cache: the fixtures index the same turns in
    many tests (three vectors per turn), which the cache embeds once."""
    from engine.adapters.embed_cache import CachedEmbedder

    return CachedEmbedder(embedder, tmp_path_factory.mktemp("vectors") / "embeddings.sqlite3")


def make_store(tmp_path, embedder, *, llm=None, language="zh", budget=1500, **config):
    return files_diary_store(CharacterPaths(tmp_path / "agents" / "xiaoyue"), DiaryConfig(**config), embedder=embedder,
                             llm=llm, tz=TZ, prompts=Prompts(language), budget_tokens=budget)


def ask(store, embedder, message, *, now=NOW, user="alice"):
    vec = embedder.embed([message], role="query")[0]
    return store.retrieve(Query(message, user, now, (), message, vec))


def turns_of(hits):
    return [h.meta["id"] for h in hits if h.meta.get("kind") == "turn"]


def write_days(tmp_path, entries, user="alice"):
    """Write day files directly in the on-disk format (fast: one write per day, no fsync)."""
    folder = tmp_path / "agents" / "xiaoyue" / "users" / user / "memorys"
    folder.mkdir(parents=True, exist_ok=True)
    for e in entries:
        with open(folder / day_file_name(e.local_day(TZ)), "a", encoding="utf-8") as f:
            f.write(format_entry(e))


@pytest.fixture
def months(tmp_path, embedder):
    """Turns every 7 hours from 2026-08-01 to now, plus two turns in the same second at the very
    start of 2026-11-21 (the first turn of "昨天"); the last few go through `append`."""
    at = datetime(2026, 8, 1, 9, 0, tzinfo=TZ)
    entries = []
    while at < datetime(2026, 11, 21, tzinfo=TZ):
        n = len(entries)
        entries.append(DiaryEntry(f"t{n:04d}", at, f"话题{n % 5}", f"第{n}句话", f"回答{n}"))
        at += timedelta(hours=7)
    write_days(tmp_path, entries)
    store = make_store(tmp_path, embedder)
    midnight = datetime(2026, 11, 21, 0, 0, 0, tzinfo=TZ)
    store.append("alice", DiaryEntry("same-a", midnight, "吃火锅", "零点第一句", "嗯"))
    store.append("alice", DiaryEntry("same-b", midnight, "吃火锅", "零点第二句", "嗯嗯"))
    while at < NOW:
        n += 1
        store.append("alice", DiaryEntry(f"t{n:04d}", at, f"话题{n % 5}", f"第{n}句话", f"回答{n}"))
        at += timedelta(hours=7)
    store.append("alice", DiaryEntry("late", datetime(2026, 11, 21, 23, 59, 59, tzinfo=TZ), "睡觉", "睡啦", "晚安"))
    store.append("alice", DiaryEntry("next", datetime(2026, 11, 22, 0, 0, 0, tzinfo=TZ), "熬夜", "还没睡", "快睡"))
    store.append("alice", DiaryEntry("future", NOW + timedelta(minutes=5), "未来", "未来", "未来"))
    yield store
    store.close()


def expected_ids(store, start, end):
    return [e.id for e in store.entries("alice", start, end)]


class TestRanges:
    """Questions return exactly the turns of the asked range, first turn and same-second turns included."""

    @pytest.mark.parametrize("message", ["昨天我们聊了什么", "what did we talk about yesterday?"])
    def test_yesterday(self, months, embedder, message):
        hits = ask(months, embedder, message)
        got = turns_of(hits)
        want = expected_ids(months, datetime(2026, 11, 21, tzinfo=TZ), datetime(2026, 11, 22, tzinfo=TZ))
        assert got == want
        assert got[:2] == ["same-a", "same-b"] and got[-1] == "late" and "next" not in got
        assert all("2026-11-21 00:00, 2026-11-22 00:00) +08:00" in h.reason for h in hits if h.meta["kind"] == "turn")
        assert f"{len(want)} turns" in hits[0].reason

    # 上周三 is Wednesday of last week; English "last Wednesday" is the most recent one (the
    # time parser's convention, see engine/timeparse).
    @pytest.mark.parametrize("message, day", [("上周三我吃了什么", 11), ("What did I eat last Wednesday?", 18)])
    def test_last_wednesday(self, months, embedder, message, day):
        got = turns_of(ask(months, embedder, message))
        want = expected_ids(months, datetime(2026, 11, day, tzinfo=TZ), datetime(2026, 11, day + 1, tzinfo=TZ))
        assert got == want and len(want) >= 3

    @pytest.mark.parametrize("message", ["昨天和这周我们都聊了什么", "what did we talk about yesterday and this week?"])
    def test_two_ranges_that_overlap_show_each_turn_once_in_time_order(self, months, embedder, message):
        hits = ask(months, embedder, message)
        got = turns_of(hits)
        assert got == expected_ids(months, datetime(2026, 11, 16, tzinfo=TZ), NOW + timedelta(seconds=1))
        # A turn of both ranges keeps the first range's reason.
        assert all(("昨天" in h.reason or "yesterday" in h.reason) for h in hits if h.meta.get("id") == "late")

    def test_today_stops_at_now(self, months, embedder):
        got = turns_of(ask(months, embedder, "今天我们都聊了什么"))
        assert "next" in got and "future" not in got
        assert got == expected_ids(months, datetime(2026, 11, 22, tzinfo=TZ), NOW + timedelta(seconds=1))

    def test_ordinary_message_pulls_nothing(self, months, embedder):
        assert ask(months, embedder, "今天天气真好") == []
        assert ask(months, embedder, "see you tomorrow") == []

    def test_empty_range_says_so(self, months, embedder):
        hits = ask(months, embedder, "去年圣诞节我们聊了什么")
        assert hits[0].pinned and "没有任何对话记录" in hits[0].text
        assert not turns_of(hits)

    def test_hit_text_uses_placeholders(self, months, embedder):
        hit = ask(months, embedder, "昨天我们聊了什么")[0]
        assert hit.text == "[2026-11-21 00:00] {{user}}: 零点第一句 / {{char}}: 嗯"


class TestBudget:
    def test_long_range_uses_daily_digests_within_budget(self, months, embedder):
        hits = ask(months, embedder, "上个月我们都聊了什么")
        digests = [h for h in hits if h.meta.get("kind") == "digest"]
        note = [h for h in hits if h.pinned]
        assert digests and note
        assert sum(h.tokens for h in hits) <= 1500
        assert digests[0].text.startswith("[2026-10-01，")
        total = len(expected_ids(months, datetime(2026, 10, 1, tzinfo=TZ), datetime(2026, 11, 1, tzinfo=TZ)))
        assert note[0].meta["total"] == total and f"{total} 轮" in note[0].text

    def test_small_budget_keeps_most_relevant_turns_and_says_how_many_left(self, tmp_path, embedder):
        store = make_store(tmp_path, embedder, budget=200)
        day = datetime(2026, 11, 21, 8, 0, tzinfo=TZ)
        for i in range(30):
            store.append("alice", DiaryEntry(f"x{i}", day + timedelta(minutes=i), "日常闲聊", "随便聊聊" * 5, "嗯嗯" * 5))
        store.append("alice", DiaryEntry("hotpot", day + timedelta(hours=5), "吃火锅", "晚上吃了火锅", "好吃吗"))
        hits = ask(store, embedder, "昨天我吃了什么火锅")
        # A question about content whose range does not fit: the range's matching lines first.
        shown = set(turns_of(hits)) | {i for h in hits if h.meta.get("kind") == "search" for i in h.meta["ids"]}
        assert "hotpot" in shown
        assert sum(h.tokens for h in hits) <= 200
        note = [h for h in hits if h.pinned][0]
        assert note.meta["omitted"] == 31 - len(shown) and str(note.meta["omitted"]) in note.text

    def test_llm_digest_is_used_when_fresh(self, tmp_path, embedder):
        llm = ScriptedLLM(rule=lambda m: "吃火锅" if "标签" in m[0]["content"] else "{{user}}那天去吃了火锅。")
        store = make_store(tmp_path, embedder, llm=llm, digest_over_turns=2)
        for d in (19, 20):
            for i in range(3):
                store.record(Turn(f"d{d}-{i}", "alice", datetime(2026, 11, d, 12, i, tzinfo=TZ), "吃火锅去", "好"))
        store.record(Turn("d21", "alice", datetime(2026, 11, 21, 9, tzinfo=TZ), "早", "早"))  # closes the 20th
        hits = ask(store, embedder, "前天和大前天我们聊了什么")
        texts = " ".join(h.text for h in hits if h.meta.get("kind") == "digest")
        assert "{{user}}那天去吃了火锅。" in texts
        assert any(h.meta.get("source") == "llm digest" for h in hits if h.meta.get("kind") == "digest")


class TestWriting:
    def test_llm_tag_fallback_and_garbage(self, tmp_path, embedder):
        llm = ScriptedLLM(replies=["标签：吃火锅", LLMError("down"), "Sure! Here is a long answer\nwith lines\nand more"])
        store = make_store(tmp_path, embedder, llm=llm)
        at = datetime(2026, 11, 21, 20, 0, tzinfo=TZ)
        store.record(Turn("a", "alice", at, "晚上去吃了火锅，超辣", "好吃吗"))
        store.record(Turn("b", "alice", at, "今天去医院复查了", "结果怎么样"))
        store.record(Turn("c", "alice", at, "你好呀", "你好"))
        tags = {e.id: e.tag for e in store.entries("alice", at, at + timedelta(seconds=1))}
        assert tags == {"a": "吃火锅", "b": "今天去医院复查了", "c": "日常闲聊"}
        assert len(llm.calls) == 3 and "晚上去吃了火锅" in llm.calls[0][0]["content"]

    def test_file_format_and_offsets(self, tmp_path, embedder):
        store = make_store(tmp_path, embedder)
        at = datetime(2026, 11, 21, 23, 30, tzinfo=ZoneInfo("UTC"))  # 07:30 on the 22nd in Shanghai
        store.record(Turn("u1", "alice", at, 'say "hi"\nnext line', "ok"))
        path = tmp_path / "agents/xiaoyue/users/alice/memorys/2026-11-22.yaml"
        text = path.read_text(encoding="utf-8")
        assert 'time: "2026-11-22T07:30:00+08:00"' in text
        assert load_day(path, tz=TZ).entries[0].user == 'say "hi"\nnext line'

    def test_import_is_idempotent(self, tmp_path, embedder):
        store = make_store(tmp_path, embedder)
        at = datetime(2026, 5, 1, 10, tzinfo=TZ)
        entry = DiaryEntry(entry_id_for(at, "hi", "hello"), at, "日常闲聊", "hi", "hello")
        assert store.append("alice", entry) is True
        assert store.append("alice", entry) is False
        assert store.has_entry("alice", entry.id)
        assert len(store.entries("alice", at, at + timedelta(days=1))) == 1


class TestFiles:
    def test_hand_edit_is_picked_up(self, months, embedder, tmp_path, monkeypatch):
        from engine.stores.diary import userdiary

        # Files are re-checked once per REFRESH_S (not per prompt); here the interval has passed.
        monkeypatch.setattr(userdiary, "REFRESH_S", 0.0)
        path = tmp_path / "agents/xiaoyue/users/alice/memorys/2026-11-21.yaml"
        path.write_text(
            path.read_text(encoding="utf-8")
            + "- id: hand\n  time: 2026-11-21T12:00:00+08:00\n  tag: 手写\n  user: 我手动加的\n  assistant: 好\n",
            encoding="utf-8",
        )
        assert "hand" in turns_of(ask(months, embedder, "昨天我们聊了什么"))

    def test_torn_tail_is_set_aside(self, tmp_path, embedder):
        store = make_store(tmp_path, embedder)
        at = datetime(2026, 11, 21, 10, tzinfo=TZ)
        store.append("alice", DiaryEntry("ok1", at, "t", "第一句", "好"))
        store.close()
        path = tmp_path / "agents/xiaoyue/users/alice/memorys/2026-11-21.yaml"
        with open(path, "ab") as f:
            f.write('- id: "torn"\n  time: "2026-11-21T11:00:00+08:00"\n  tag: "x"\n  user: "半句'.encode())
        store = make_store(tmp_path, embedder)
        assert [e.id for e in store.entries("alice", at, at + timedelta(hours=5))] == ["ok1"]
        # Readers never write: the torn tail is only reported until the next append sets it aside.
        assert not (path.parent / "2026-11-21.yaml.corrupt").exists()
        assert any("2026-11-21.yaml:" in p and "incomplete" in p for p in store.problems())
        store.append("alice", DiaryEntry("ok2", at + timedelta(hours=2), "t", "第二句", "好"))
        assert "torn" in (path.parent / "2026-11-21.yaml.corrupt").read_text(encoding="utf-8")
        assert [e.id for e in load_day(path, tz=TZ).entries] == ["ok1", "ok2"]

    def test_bad_middle_item_is_skipped_and_named(self, tmp_path, embedder):
        folder = tmp_path / "agents/xiaoyue/users/alice/memorys"
        folder.mkdir(parents=True)
        (folder / "2026-11-21.yaml").write_text(
            '- id: a\n  time: "2026-11-21T10:00:00+08:00"\n  user: x\n  assistant: y\n'
            '- id: b\n  time: "2026-11-21T11:00:00+08:00"\n  user: [unclosed\n  assistant: y\n'
            '- id: c\n  time: "2026-11-21T12:00:00+08:00"\n  user: x\n  assistant: y\n',
            encoding="utf-8",
        )
        store = make_store(tmp_path, embedder)
        day = datetime(2026, 11, 21, tzinfo=TZ)
        assert [e.id for e in store.entries("alice", day, day + timedelta(days=1))] == ["a", "c"]
        assert any("2026-11-21.yaml:5" in p for p in store.backend.user("alice").problems)

    def test_cache_is_reused_and_rebuilt(self, months, embedder, tmp_path):
        months.close()
        cache = tmp_path / "agents/xiaoyue/.cache"
        assert (cache / "users/alice/diary/index.npz").is_file()
        reopened = make_store(tmp_path, embedder)
        assert reopened.backend.user("alice").index.dirty is False  # nothing re-parsed
        want = turns_of(ask(months, embedder, "昨天我们聊了什么"))
        assert turns_of(ask(reopened, embedder, "昨天我们聊了什么")) == want
        # Deleted the way a user deletes it, with nothing running: an open store's index thread
        # may still be writing its term vectors there (rmtree then met a new file: "Directory not
        # empty", 1 run in 3 on a fresh clone).
        reopened.close()
        shutil.rmtree(cache)
        rebuilt = make_store(tmp_path, embedder)
        assert turns_of(ask(rebuilt, embedder, "昨天我们聊了什么")) == want
        rebuilt.close()

    def test_touched_but_unchanged_file_is_not_reparsed(self, months, tmp_path, embedder):
        months.close()
        path = tmp_path / "agents/xiaoyue/users/alice/memorys/2026-11-21.yaml"
        os.utime(path, ns=(1, 1))
        reopened = make_store(tmp_path, embedder)
        diary = reopened.backend.user("alice")
        assert diary.index.files["2026-11-21.yaml"].mtime_ns == 1
        assert "2026-11-21.yaml" not in diary._days  # hashed, not parsed


class TestSemantic:
    def _diary(self, tmp_path, embedder, **config):
        store = make_store(tmp_path, embedder, **config)
        day = datetime(2026, 11, 21, 9, tzinfo=TZ)
        rows = [("hotpot", "吃火锅"), ("movie", "看电影"), ("code", "写代码加班"), ("chat", "日常闲聊")]
        for i, (id_, tag) in enumerate(rows):
            store.append("alice", DiaryEntry(id_, day + timedelta(hours=i), tag, f"{tag}的事", "好"))
        return store

    def test_filter_drops_unrelated_tags(self, tmp_path, embedder):
        store = self._diary(tmp_path, embedder, semantic_filter=True, filter_threshold=0.86)
        got = turns_of(ask(store, embedder, "昨天我吃了什么火锅"))
        assert "hotpot" in got and len(got) < 4

    def test_search_without_time_expression(self, tmp_path, embedder):
        store = self._diary(tmp_path, embedder)
        hits = ask(store, embedder, "我们之前是不是一起聊过吃火锅")
        assert turns_of(hits) == [] and hits[0].meta["kind"] == "search"
        assert hits[0].meta["ids"][0] == "hotpot" and "吃火锅的事" in hits[0].text
        assert "hybrid search" in hits[0].reason

    def test_search_can_be_turned_off(self, tmp_path, embedder):
        store = self._diary(tmp_path, embedder, search=False)
        assert ask(store, embedder, "火锅") == []


@pytest.mark.parametrize(
    "text", ['quote " and \\ backslash', "line\nbreak\ttab", "NEL\x85 LS\u2028 PS\u2029 C1\x9f", "emoji 😀 中文", "- id: fake"],
    ids=["quotes", "newlines", "yaml-breaks", "unicode", "looks-like-an-item"],
)
def test_odd_text_round_trips_through_yaml_and_the_fast_reader(tmp_path, text):
    import yaml

    from engine.stores.diary.dayfile import _parse_fast

    entry = DiaryEntry("odd", datetime(2026, 1, 1, 8, tzinfo=TZ), "tag", text, text)
    written = format_entry(entry)
    assert yaml.safe_load(written)[0]["user"] == text
    assert _parse_fast(written, TZ) == [entry]


@pytest.mark.parametrize(
    "tags, language, expected",
    [
        (["猫", "工作", "猫", "", "日常闲聊"], "zh", "共 5 轮；聊到：猫、工作（2 轮日常闲聊）"),
        (["cats", "work", "cats"], "en", "3 turns; topics: cats, work"),
        (["", "small talk"], "en", "2 turns (2 turns of small talk)"),
    ],
)
def test_a_day_digest_from_tags_counts_topics_and_small_talk(tags, language, expected):
    from engine.stores.diary.writing import fallback_digest, small_talk

    tags = [small_talk(language) if t in ("日常闲聊", "small talk") else t for t in tags]
    assert fallback_digest(tags, language=language) == expected
