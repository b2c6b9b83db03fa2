"""Traditional Chinese, as users in Taiwan and Hong Kong write it, read by tables written in
Simplified characters: the time words, the recall cues and the write-time dates, end to end
through `record_turn` / `build_prompt`, with what is shown left in the user's own characters."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.timeparse import parse_time_ranges
from engine.timeparse.script import as_tables_read

from demo_data import diary_only_orchestrator

TZ = ZoneInfo("Asia/Shanghai")  # the default zone (Taipei keeps the same clock)
NOW = datetime(2026, 11, 25, 15, 30, tzinfo=TZ)  # a Wednesday


@pytest.mark.parametrize(
    "text, expression, first, last",
    [
        ("上個月我們聊了什麼", "上個月", "2026-10-01", "2026-10-31"),
        ("兩天前我跟你說過什麼？", "兩天前", "2026-11-23", "2026-11-23"),
        ("禮拜天聊了啥", "禮拜天", "2026-11-22", "2026-11-22"),
        ("上個禮拜五你推薦的那本書", "上個禮拜五", "2026-11-20", "2026-11-20"),
        ("這個週末要去哪裡玩", "這個週末", "2026-11-28", "2026-11-29"),
        ("上禮拜好忙", "上禮拜", "2026-11-16", "2026-11-22"),
        ("6月3號那天", "6月3號", "2026-06-03", "2026-06-03"),
        ("幾天前", "幾天前", "2026-11-18", "2026-11-24"),
        ("去年春節回老家", "去年春節", "2025-01-29", "2025-01-29"),
        # written Cantonese
        ("琴日我哋傾咗乜嘢", "琴日", "2026-11-24", "2026-11-24"),
        ("尋日好攰", "尋日", "2026-11-24", "2026-11-24"),
        ("前日你話過", "前日", "2026-11-23", "2026-11-23"),
        ("大前日見過佢", "大前日", "2026-11-22", "2026-11-22"),
        ("聽日記得打俾我", "聽日", "2026-11-26", "2026-11-26"),
    ],
)
def test_traditional_time_words_resolve_as_their_simplified_ones(text, expression, first, last):
    (found,) = parse_time_ranges(text, now=NOW)
    assert found.text == expression  # the user's own characters
    assert (f"{found.start:%Y-%m-%d}", f"{found.end - timedelta(seconds=1):%Y-%m-%d}") == (first, last)


def test_reading_keeps_every_span():
    every = "".join(chr(c) for r in (range(0x3400, 0x4DC0), range(0x4E00, 0xA000)) for c in r)
    read = as_tables_read(every)
    assert len(read) == len(every)
    assert as_tables_read(read) == read  # nothing read twice changes again
    plain = "上个月我们聊了什么？覆盖, 藉口, 关系, 倾诉, 电话 and English stay as they are"
    assert as_tables_read(plain) == plain


@pytest.fixture(scope="module")
def orch(tmp_path_factory, embedder):
    orch = diary_only_orchestrator(tmp_path_factory.mktemp("traditional"), embedder)
    days = {  # a few turns on each of these days, in Traditional characters
        "d1020": (datetime(2026, 10, 20, 20, 0, tzinfo=TZ), ["我今天去看了牙醫，補了兩顆牙", "晚餐吃了牛肉麵"]),
        "d1123": (datetime(2026, 11, 23, 21, 0, tzinfo=TZ), ["下個月要搬家，好煩", "新房子在淡水那邊"]),
        "d1124": (datetime(2026, 11, 24, 19, 0, tzinfo=TZ), ["公司尾牙抽到一台咖啡機", "同事說我手氣超好"]),
    }
    for key, (at, lines) in days.items():
        for i, line in enumerate(lines):
            orch.record_turn(line, "聽起來不錯喔", user_id="amy", at=at + timedelta(minutes=5 * i), turn_id=f"{key}-{i}")
    asked = datetime(2026, 11, 24, 22, 0, tzinfo=TZ)
    orch.record_turn("昨天我們聊了什麼？", "我們聊了搬家的事", user_id="amy", at=asked, turn_id="q-1124")
    orch.record_turn("我兩天前把鑰匙忘在公司了", "下次記得帶", user_id="amy", at=asked + timedelta(minutes=1),
                     turn_id="s-1124")
    orch.record_turn("我琴日去咗睇牙醫", "痛唔痛呀", user_id="amy", at=asked + timedelta(minutes=2), turn_id="c-1124")
    assert orch.flush(120)
    assert not orch.background_errors
    yield orch
    orch.close()


def _day_ids(result, prefix: str) -> set[str]:
    ids = {str(i) for h in result.hits if h.store == "diary" for i in (h.meta.get("ids") or [h.meta.get("id")]) if i}
    return {i for i in ids if i.startswith(prefix)}


@pytest.mark.parametrize(
    "message, words, day",
    [
        ("前天我們聊了什麼？", "前天", "d1123"),
        ("兩天前我跟你說過什麼，你還記得嗎", "兩天前", "d1123"),
        ("禮拜一的聊天是關於什麼的？", "禮拜一", "d1123"),
        ("幫我回憶一下昨天我們說了啥", "昨天", "d1124"),
        ("昨天我跟你講過尾牙的事，我抽到什麼？", "昨天", "d1124"),
        ("上個月我們都聊了些什麼", "上個月", "d1020"),
        # written Cantonese
        ("琴日我哋傾咗乜嘢呀？", "琴日", "d1124"),
        ("你記唔記得前日我同你講過啲乜", "前日", "d1123"),
        ("幫我執返前日傾嘅嘢個重點得唔得", "前日", "d1123"),
        ("尋日我話抽到咗咩嚟㗎？", "尋日", "d1124"),
    ],
)
def test_a_question_in_traditional_characters_brings_its_day(orch, message, words, day):
    result = orch.build_prompt(message, user_id="amy", now=NOW)
    assert _day_ids(result, day) == {f"{day}-0", f"{day}-1"}
    ranged = [h for h in result.hits if h.store == "diary" and str(h.reason).startswith("expression")]
    assert ranged and all(h.reason.startswith(f'expression "{words}"') for h in ranged)  # the user's own words


@pytest.mark.parametrize("message", ["前天好累喔，睡了一整天。", "上個月我去了日本玩", "琴日好攰，瞓咗成日", "前日同屋企人去咗飲茶"])
def test_a_statement_in_traditional_characters_brings_no_day(orch, message):
    result = orch.build_prompt(message, user_id="amy", now=NOW)
    assert not [h for h in result.hits if h.store == "diary" and str(h.reason).startswith("expression")]


def test_write_time_dates_skip_a_question_and_keep_the_users_words(orch):
    entries = {e.id: e for e in orch.admin.diary("amy", datetime(2026, 11, 24, tzinfo=TZ), datetime(2026, 11, 25, tzinfo=TZ))}
    assert entries["q-1124"].dates == ()  # a question about yesterday is no event of it
    assert entries["s-1124"].dates == (("兩天前", "2026-11-22"),)  # as the user wrote it
    assert entries["c-1124"].dates == (("琴日", "2026-11-23"),)
