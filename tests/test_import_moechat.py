"""`kioku import moechat` against a MoeChat folder written the way MoeChat writes it (appended
`yaml.safe_dump` calls), with the real embedder and real stores in tmp_path."""

from __future__ import annotations

import pathlib
import pickle
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

from engine.adapters.embed_cache import CachedEmbedder
from engine.config import EngineConfig
from engine.importers.moechat import MoeChatImportError, import_moechat
from engine.importers.moechat_format import chunks, parse_core_file, parse_day_file, split_msg
from engine.importers.report import format_report
from engine.orchestrator import MemoryOrchestrator
from engine.stores.worldbook import validate_folder

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 1, 15, 20, 0, tzinfo=TZ)
CHAR = "小月"
USER = "linzhou"

# (local time, tag, user, assistant), written in this (scrambled) order.
TURNS = [
    (datetime(2025, 11, 20, 21, 5, 0), "聊猫咪", "我家的猫今天打翻了花瓶", "它一定很调皮吧，花瓶碎了吗？"),
    (datetime(2025, 7, 3, 9, 30, 0), "早餐", "早上吃了小笼包", "小笼包配醋最好吃了"),
    (datetime(2025, 12, 1, 18, 0, 0), "加班", "今天又要加班到很晚", "辛苦了，记得吃晚饭哦"),
    (datetime(2025, 7, 3, 22, 10, 0), "失眠", "晚上睡不着在数羊", "数到第几只了？"),
    (datetime(2025, 7, 10, 12, 0, 0), "吃火锅", "中午去吃了重庆火锅", "辣不辣？有没有点毛肚"),
    # Same second as the previous one, different text: both must be kept.
    (datetime(2025, 7, 10, 12, 0, 0), "吃火锅", "还点了鸭肠和黄喉", "听起来好丰盛"),
    (datetime(2025, 11, 20, 8, 0, 0), "上班", "地铁上好挤", "早高峰辛苦啦"),
]
DUPLICATE = TURNS[1]  # written twice: the same second and the same text is one turn
DAYS = sorted({t[0].date() for t in TURNS})

FACTS = [
    ("aB3kX9mZwQ", "2025-07-01 14:30:00", "用户讨厌吃香菜"),
    ("pL8nR2vYcD", "2025-07-05 20:15:30", "用户住在重庆"),
    ("Zz0Yy1Xx2W", "2025-08-09 08:00:00", "用户养了一只橘猫叫年糕"),
]
LORE = {"星见镇": "小月居住的海边小镇，夏天有烟火大会。", "月光石": "能储存回忆的蓝色宝石。"}
HISTORY = [
    [{"role": "user", "content": "你好呀"}, {"role": "assistant", "content": "你好，今天过得怎么样？"}],
    [{"role": "user", "content": "还行，有点累"}, {"role": "assistant", "content": "那早点休息吧"}],
    [{"role": "user", "content": "明天要去爬山"}, {"role": "assistant", "content": "记得带水"}],
    [{"role": "user", "content": "好的晚安"}, {"role": "assistant", "content": "晚安，做个好梦"}],
]


class Evil:
    """Unpickling this touches the marker file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def moechat_memory(folder: Path, at: datetime, tag: str, user: str, assistant: str) -> None:
    """What MoeChat does after a turn: append one `{epoch: {text_tag, msg}}` dump to the day file."""
    key = int(at.replace(tzinfo=TZ).timestamp())
    msg = f"时间：{at:%Y-%m-%d %H:%M:%S}\n{{{{user}}}}：{user}\n{{{{char}}}}：{assistant}"
    with open(folder / f"{at.year}-{at.month}-{at.day}.yaml", "a", encoding="utf-8") as f:
        f.write(yaml.safe_dump({key: {"text_tag": tag, "msg": msg}}, allow_unicode=True))


@pytest.fixture
def moechat(tmp_path: Path) -> tuple[Path, Path]:
    return write_moechat(tmp_path)


def write_moechat(tmp_path: Path) -> tuple[Path, Path]:
    """A MoeChat root and the marker path its pickles would create."""
    root = tmp_path / "MoeChat"
    agent = root / "data" / "agents" / CHAR
    mem = agent / "memorys"
    mem.mkdir(parents=True)
    marker = tmp_path / "PWNED"
    (root / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "LLM": {"api": "http://127.0.0.1:1/v1", "model": "x"},
                "Agent": {
                    "is_up": True, "char": CHAR, "user": "林舟",
                    "char_settings": "{{char}}是住在星见镇的少女。", "char_personalities": "温柔、爱笑",
                    "mask": "{{user}}是她的老朋友", "message_example": "{{char}}：今天也要加油哦！",
                    "prompt": "用口语回答", "start_with": ["在吗", "在的，{{user}}！"], "context_length": 6,
                    "long_memory": True, "is_check_memorys": True, "mem_thresholds": 0.39,
                    "is_core_mem": True, "lore_books": True, "books_thresholds": 0.5, "scan_depth": 4,
                },
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    for at, tag, user, assistant in TURNS:
        moechat_memory(mem, at, tag, user, assistant)
    moechat_memory(mem, *DUPLICATE)
    # A broken day file: a good entry, a torn one in the middle (hand edit / crash), a good one.
    broken = mem / "2025-8-2.yaml"
    moechat_memory(mem, datetime(2025, 8, 2, 10, 0, 0), "逛街", "去商场买了新鞋", "是什么颜色的？")
    broken_line = broken.read_text(encoding="utf-8").count("\n") + 1
    with open(broken, "a", encoding="utf-8") as f:
        f.write('1754103600:\n  msg: "时间：2025-08-02 11:00:00\\n{{user}}：坏掉\n  text_tag: [oops\n')
    moechat_memory(mem, datetime(2025, 8, 2, 15, 0, 0), "看电影", "下午看了一场电影", "好看吗？")
    for day in DAYS:
        (mem / f"{day.year}-{day.month}-{day.day}.pkl").write_bytes(pickle.dumps(Evil(marker)))
    core = agent / "core_mem.yml"
    core.write_text("# 核心记忆文件，请勿自行修改！否侧会丢失索引！\n\n", encoding="utf-8")
    for fid, when, text in FACTS:
        with open(core, "a", encoding="utf-8") as f:
            f.write(yaml.safe_dump({fid: {"time": when, "text": text}}, allow_unicode=True))
    book = agent / "data_base"
    (book / "tmp").mkdir(parents=True)
    (book / "地点.yaml").write_text(yaml.safe_dump(LORE, allow_unicode=True), encoding="utf-8")
    (book / "坏的.yaml").write_text("钥匙: 一把旧钥匙\n钥匙: 重复的键\n", encoding="utf-8")
    (book / "tmp" / "md5.yaml").write_text("- 0123456789abcdef\n", encoding="utf-8")
    (book / "tmp" / "地点.pkl").write_bytes(pickle.dumps(Evil(marker)))
    for dump in HISTORY:
        with open(agent / "history.yaml", "a", encoding="utf-8") as f:
            f.write(yaml.safe_dump(dump, allow_unicode=True))
    (root / "broken_line").write_text(str(broken_line))
    return root, marker


def run_import(root: Path, data: Path, embedder, **kw):
    """Import with the real embedder behind the on-disk cache, as `from_config` builds it."""
    cached = CachedEmbedder(embedder, data / "embeddings.sqlite3")
    try:
        return import_moechat(
            root, user_id=USER, tz="Asia/Shanghai", config=EngineConfig(data_dir=data), embedder=cached, **kw
        )
    finally:
        cached.close()


def open_orch(data: Path, embedder) -> MemoryOrchestrator:
    return MemoryOrchestrator.from_config(CHAR, config=EngineConfig(data_dir=data), embedder=embedder)


def diary_texts(result) -> list[str]:
    return [h.text for h in result.hits if h.store == "diary" and h.meta.get("kind") == "turn"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory, embedder):
    """One import shared by the tests of `TestImport`: (root, marker, data dir, report)."""
    tmp_path = tmp_path_factory.mktemp("moechat")
    root, marker = write_moechat(tmp_path)
    data = tmp_path / "kioku"
    report = run_import(root, data, embedder)
    return root, marker, data, report


class TestImport:
    """One import, then everything asked through the orchestrator."""


    def test_every_diary_turn_answers_its_day(self, imported, embedder):
        root, _, data, report = imported
        with open_orch(data, embedder) as orch:
            for day in DAYS:
                result = orch.build_prompt(f"{day.month}月{day.day}日我们聊了什么", user_id=USER, now=NOW)
                texts = diary_texts(result)
                expected = [t for t in TURNS if t[0].date() == day]
                assert len(texts) == len(expected), (day, texts)
                for _, _, user, assistant in expected:
                    assert any(user in t and assistant in t for t in texts), (day, user, texts)
            # The broken file's good entries survive; the torn one is reported with its line.
            texts = diary_texts(orch.build_prompt("8月2日我们聊了什么", user_id=USER, now=NOW))
            assert len(texts) == 2 and any("新鞋" in t for t in texts) and any("电影" in t for t in texts)
        assert report.counts["diary"].imported == len(TURNS) + 2
        assert report.counts["diary"].present == 1  # the duplicate written twice by MoeChat
        assert report.counts["diary"].skipped == 1
        bad = [s for s in report.skipped if s.store == "diary"]
        line = (root / "broken_line").read_text()
        assert len(bad) == 1 and bad[0].where.endswith(f"2025-8-2.yaml:{line}"), bad

    def test_times_and_tags_are_kept(self, imported, embedder):
        _, _, data, _ = imported
        with open_orch(data, embedder) as orch:
            day = datetime(2025, 7, 10, tzinfo=TZ)
            entries = orch.store("diary").entries(USER, day, day.replace(day=11))
        assert [(e.at, e.tag, e.user) for e in entries] == [
            (datetime(2025, 7, 10, 12, 0, tzinfo=TZ), "吃火锅", "中午去吃了重庆火锅"),
            (datetime(2025, 7, 10, 12, 0, tzinfo=TZ), "吃火锅", "还点了鸭肠和黄喉"),
        ]

    def test_facts_with_learned_time(self, imported, embedder):
        _, _, data, report = imported
        with open_orch(data, embedder) as orch:
            facts = {f.text: f for f in orch.store("core").facts(USER)}
            result = orch.build_prompt("我能吃香菜吗", user_id=USER, now=NOW)
        for _, when, text in FACTS:
            assert facts[text].learned_at == datetime.strptime(when, "%Y-%m-%d %H:%M:%S").replace(tzinfo=TZ)
        assert any("香菜" in h.text for h in result.hits if h.store == "core")
        assert report.counts["core"].imported == len(FACTS)

    def test_lore_copied_and_triggered(self, imported, embedder):
        _, _, data, report = imported
        folder = data / "agents" / CHAR / "data_base"
        assert sorted(p.name for p in folder.iterdir()) == ["地点.yaml"]
        assert validate_folder(folder) == []
        with open_orch(data, embedder) as orch:
            assert orch.store("world_book").status().entries == len(LORE)
            for key, text in LORE.items():
                result = orch.build_prompt(f"给我讲讲{key}", user_id=USER, now=NOW)
                assert any(text in h.text for h in result.hits if h.store == "world_book"), key
        bad = [s for s in report.skipped if s.store == "world_book"]
        assert len(bad) == 1 and "坏的.yaml:2" in bad[0].where

    def test_persona_window_and_switches(self, imported, embedder):
        _, _, data, report = imported
        with open_orch(data, embedder) as orch:
            c = orch.character
            assert (c.name, c.user_name, c.personality) == (CHAR, "林舟", "温柔、爱笑")
            assert c.settings == "{{char}}是住在星见镇的少女。" and c.opening_lines == ["在吗", "在的，{{user}}！"]
            assert orch.config.short_term.max_messages == 6 and orch.config.diary.semantic_filter is True
            assert orch.config.world_book.top_k == 4
            # Model-specific thresholds are noted, not copied.
            assert orch.config.diary.filter_threshold is None and orch.config.world_book.threshold is None
            window = [m.content for m in orch.short_term.window(USER)]
        flat = [m["content"] for dump in HISTORY for m in dump]
        assert window == flat[-6:]
        text = (data / "agents" / CHAR / "character.yaml").read_text(encoding="utf-8")
        assert "# MoeChat mem_thresholds=0.39" in text
        assert any("mem_thresholds" in n for n in report.notes)

    def test_second_import_adds_nothing(self, imported, embedder):
        root, _, data, _ = imported
        user_dir = data / "agents" / CHAR / "users" / USER
        before = {p: p.read_bytes() for p in user_dir.rglob("*") if p.is_file()}
        again = run_import(root, data, embedder)
        for name in ("world_book", "core", "diary", "window", "persona"):
            assert again.counts[name].imported == 0, (name, again.counts[name])
        assert again.counts["diary"].present == len(TURNS) + 3
        after = {p: p.read_bytes() for p in user_dir.rglob("*") if p.is_file()}
        assert after == before

    def test_pickles_are_never_loaded(self, imported):
        _, marker, _, report = imported
        assert not marker.exists()
        assert any(".pkl" in n for n in report.notes)
        for module in ("moechat.py", "moechat_format.py", "report.py"):
            source = (Path(__file__).parents[1] / "engine" / "importers" / module).read_text(encoding="utf-8")
            assert "import pickle" not in source and "pickle.load" not in source

    def test_report_renders(self, imported):
        *_, report = imported
        text = format_report(report)
        assert "diary" in text and "2025-8-2.yaml:" in text


def test_keep_thresholds_copies_them(moechat, tmp_path, embedder):
    root, _ = moechat
    run_import(root, tmp_path / "k", embedder, keep_thresholds=True)
    with open_orch(tmp_path / "k", embedder) as orch:
        assert orch.config.diary.filter_threshold == pytest.approx(0.39)
        assert orch.config.world_book.threshold == pytest.approx(0.5)


def test_existing_character_config_is_kept(moechat, tmp_path, embedder):
    root, _ = moechat
    char_file = tmp_path / "k" / "agents" / CHAR / "character.yaml"
    char_file.parent.mkdir(parents=True)
    char_file.write_text(f"name: {CHAR}\nconfig:\n  language: en\n  short_term:\n    max_tokens: 900\n", encoding="utf-8")
    run_import(root, tmp_path / "k", embedder)
    with open_orch(tmp_path / "k", embedder) as orch:
        assert orch.config.language == "en"
        assert orch.config.short_term.max_tokens == 900 and orch.config.short_term.max_messages == 6


def test_cli_import(moechat, tmp_path, capsys):
    from engine.cli import main

    root, marker = moechat
    code = main(["import", "moechat", str(root), "--data-dir", str(tmp_path / "k"), "--user", USER, "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "diary" in out and "skipped" in out
    assert (tmp_path / "k" / "agents" / CHAR / "users" / USER / "core_mem.yml").is_file()
    assert not marker.exists()


class TestFormat:
    """The MoeChat file parsers on their own."""

    @pytest.mark.parametrize(
        "msg, expected",
        [
            pytest.param("时间：2025-07-03 09:30:00\n{{user}}：早\n{{char}}：早呀", ("2025-07-03 09:30:00", "早", "早呀"), id="full-width"),
            pytest.param("时间:2025-07-03 09:30:00\n{{user}}:早\n{{char}}:早呀", ("2025-07-03 09:30:00", "早", "早呀"), id="ascii-colon"),
            pytest.param("时间：2025-07-03 09:30:00\n林舟：早\n第二行\n小月：早呀", ("2025-07-03 09:30:00", "早\n第二行", "早呀"), id="names-multiline"),
            pytest.param("{{user}}：早\n{{char}}：早呀", (None, "早", "早呀"), id="no-time"),
        ],
    )
    def test_split_msg(self, msg, expected):
        assert split_msg(msg, user_names=("林舟",), char_names=("小月",)) == expected

    def test_chunks_keep_duplicate_keys_and_skip_empty_dumps(self):
        text = "# c\n1: {a: 1}\n1:\n  a: 2\n[]\n2: x\n"
        assert [(c.line, c.text) for c in chunks(text)] == [(2, "1: {a: 1}\n"), (3, "1:\n  a: 2\n"), (6, "2: x\n")]

    def test_epoch_key_when_no_time_line(self, tmp_path):
        path = tmp_path / "2025-7-3.yaml"
        path.write_text(yaml.safe_dump({1751506200: {"text_tag": "t", "msg": "{{user}}：a\n{{char}}：b"}}), encoding="utf-8")
        turns, problems = parse_day_file(path, tz=TZ, user_names=(), char_names=())
        assert problems == [] and turns[0].at == datetime(2025, 7, 3, 9, 30, tzinfo=TZ)

    def test_unreadable_day_file_is_reported(self, tmp_path):
        path = tmp_path / "2025-7-4.yaml"
        path.write_bytes(b"1751506200:\n  msg: \xff\xfe\n")
        turns, problems = parse_day_file(path, tz=TZ, user_names=(), char_names=())
        assert turns == [] and "line 2" in problems[0].reason and "invalid UTF-8" in problems[0].reason

    def test_core_file_with_a_broken_item(self, tmp_path):
        path = tmp_path / "core_mem.yml"
        path.write_text("# 注释\n\na1: {time: '2025-07-01 14:30:00', text: 喜欢猫}\nb2: {time: [oops, text: x\n"
                        "c3:\n  time: 2025-07-02 08:00:00\n  text: 住在重庆\n", encoding="utf-8")
        facts, problems = parse_core_file(path, tz=TZ)
        assert [f.text for f in facts] == ["喜欢猫", "住在重庆"]
        assert facts[1].learned_at == datetime(2025, 7, 2, 8, 0, tzinfo=TZ)
        assert [p.where for p in problems] == [f"{path}:4"]


def test_several_characters_need_char(moechat, tmp_path, embedder):
    root, _ = moechat
    (root / "data" / "agents" / "另一个").mkdir()
    (root / "config.yaml").write_text("Agent: {char: 不存在}\n", encoding="utf-8")
    with pytest.raises(MoeChatImportError, match="--char"):
        run_import(root, tmp_path / "k", embedder)


# -- the active fork's SQLite memory (data/agents/<name>/memory_v2.db) -----------------------------

V2_SCHEMA = """
CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, category TEXT NOT NULL, content TEXT NOT NULL,
    importance REAL NOT NULL DEFAULT 0.5, memory_type TEXT NOT NULL DEFAULT 'normal', created_at TEXT NOT NULL,
    last_accessed TEXT, access_count INTEGER DEFAULT 0, decay_rate REAL NOT NULL DEFAULT 0.001,
    archived INTEGER DEFAULT 0);
CREATE TABLE chat_turns (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp_sec INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL);
CREATE TABLE diary_days (day TEXT PRIMARY KEY, event_summary TEXT NOT NULL, content TEXT NOT NULL,
    created_at TEXT NOT NULL);
"""
"""The three tables the fork's services/memory_v2.py keeps (as its source shows them), with the
columns it writes; written here with sqlite3 alone."""


def _v2_rows() -> tuple[list, list, list]:
    def ts(day: int, hour: int, minute: int = 0) -> int:
        return int(datetime(2025, 10, day, hour, minute, tzinfo=TZ).timestamp())

    turns = [
        (ts(3, 20, 0), "assistant", "晚上好呀！"),  # a greeting before any question: a turn of its own
        (ts(3, 20, 1), "user", "今天在天台看到了流星雨"),
        (ts(3, 20, 2), "assistant", "好浪漫！许愿了吗？"),
        (ts(3, 20, 5), "user", "许了，希望明年能去冰岛看极光"),
        (ts(3, 20, 6), "assistant", "一定可以的"),
        (ts(3, 20, 6), "assistant", "到时候给我看照片哦"),  # a reply in two messages: one turn
        (ts(3, 20, 9), "narrator", "（系统消息）"),  # not a side of the conversation: reported
        (ts(5, 9, 0), "user", "早上喝了一杯桂花拿铁"),
        (ts(5, 9, 1), "assistant", "听起来好香"),
        (ts(5, 9, 30), "user", "你还在吗"),  # a question without a reply: a turn with an empty reply
    ]
    memories = [
        ("about_user", "用户说他对花生过敏", "2025-10-03T20:30:00", 0),
        ("about_us", "我们一起聊了流星雨和冰岛的极光", "2025-10-03T20:40:00", 0),
        ("about_self", "我发现自己很喜欢听他讲星星", "2025-10-03T20:41:00", 0),
        ("about_world", "冰岛的极光季是九月到四月", "2025-10-03T20:42:00", 0),
        ("about_user", "用户以前住在大连", "2025-10-01T10:00:00", 1),
        ("about_us", "[日记] 今天我们聊了流星雨。", "2025-10-04T00:10:00", 0),
    ]
    diaries = [("2025-10-03", "流星雨", "今天他在天台看到了流星雨，许愿明年去冰岛看极光。", "2025-10-04T00:10:00"),
               ("2025-10-09", "空", "这天没有聊天。", "2025-10-10T00:10:00")]
    return turns, memories, diaries


def write_moechat_v2(tmp_path: Path) -> Path:
    import sqlite3

    root = tmp_path / "MoeChatFork"
    agent = root / "data" / "agents" / CHAR
    agent.mkdir(parents=True)
    (root / "config.yaml").write_text(yaml.safe_dump({"Agent": {"char": CHAR, "user": "林舟"}}, allow_unicode=True),
                                      encoding="utf-8")
    turns, memories, diaries = _v2_rows()
    conn = sqlite3.connect(agent / "memory_v2.db")
    conn.executescript(V2_SCHEMA)
    conn.executemany("INSERT INTO chat_turns (timestamp_sec, role, content) VALUES (?, ?, ?)", turns)
    conn.executemany("INSERT INTO memories (category, content, created_at, archived) VALUES (?, ?, ?, ?)", memories)
    conn.executemany("INSERT INTO diary_days (day, event_summary, content, created_at) VALUES (?, ?, ?, ?)", diaries)
    conn.commit()
    conn.close()
    return root


def test_the_forks_sqlite_memory_comes_in_turns_facts_and_diaries(tmp_path, embedder):
    root = write_moechat_v2(tmp_path)
    data = tmp_path / "kioku"
    report = run_import(root, data, embedder)
    assert (report.counts["diary"].imported, report.counts["core"].imported) == (5, 2)
    reasons = "\n".join(str(s) for s in report.skipped)
    for says in ("chat_turns id 7", "'about_self'", "'about_world'", "archived", "diary_days '2025-10-09'"):
        assert says in reasons, reasons
    with open_orch(data, embedder) as orch:
        facts = {f.text for f in orch.admin.facts.list(USER)}
        assert facts == {"用户说他对花生过敏", "我们一起聊了流星雨和冰岛的极光"}
        asked = orch.build_prompt("10月3号我们都聊了什么？", user_id=USER, now=datetime(2025, 10, 20, 12, 0, tzinfo=TZ))
        lines = "\n".join(diary_texts(asked))
        for said in ("晚上好呀", "今天在天台看到了流星雨", "希望明年能去冰岛看极光", "一定可以的", "到时候给我看照片哦"):
            assert said in lines, lines
        assert "桂花拿铁" not in lines  # another day
        window = [m.content for m in orch.short_term.window(USER)]
        assert window[-3:] == ["早上喝了一杯桂花拿铁", "听起来好香", "你还在吗"]  # the fork keeps no history file
        day = orch.store("diary")
        assert day.backend.digest(USER, datetime(2025, 10, 3).date(), 3) == "今天他在天台看到了流星雨，许愿明年去冰岛看极光。"
    again = run_import(root, data, embedder)
    assert (again.counts["diary"].imported, again.counts["core"].imported) == (0, 0)
    assert again.counts["diary"].present == 5 and again.counts["core"].present == 2
    assert again.counts["window"].imported == 0


def test_a_damaged_sqlite_memory_is_named_and_the_rest_comes_in(tmp_path, embedder):
    root = write_moechat_v2(tmp_path)
    db = root / "data" / "agents" / CHAR / "memory_v2.db"
    db.write_bytes(b"this is not a database" * 100)
    (root / "data" / "agents" / CHAR / "memorys").mkdir()
    moechat_memory(root / "data" / "agents" / CHAR / "memorys", datetime(2025, 10, 3, 8, 0), "早餐", "早上吃了油条", "好吃吗")
    report = run_import(root, tmp_path / "kioku", embedder)
    assert report.counts["diary"].imported == 1
    assert any("memory_v2.db" in s.where and "not a readable SQLite database" in s.reason for s in report.skipped)
