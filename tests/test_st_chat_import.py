"""`import_sillytavern_chat`: a SillyTavern chat log comes into a character's memory of a user at
its real times (every `send_date` form SillyTavern has written), the chosen swipe only, system and
narrator lines kept out of the turns; the diary then answers "what did we talk about on <day>"
from that day; importing again adds nothing; a bad line stops the import before anything is
written, naming the file and the line. Real stores, the real embedder, files in tmp_path."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.config import EngineConfig
from engine.formats.sillytavern.chatlog import ChatLog, ChatMessage, parse_send_date, read_chat
from engine.formats.sillytavern.errors import FormatError
from engine.importers.report import format_report
from engine.importers.sillytavern_chat import (
    SillyTavernChatImportError, chat_id_for, chat_turns, import_sillytavern_chat,
)
from engine.orchestrator import MemoryOrchestrator

TZ = ZoneInfo("Asia/Shanghai")
UTC = timezone.utc
CHAR, USER = "xiaoyue", "linzhou"
FIXTURE = Path(__file__).parent / "fixtures" / "sillytavern" / "chats" / "xiaoyue - 2024-06-05@20h31m07s.jsonl"
OLD_SWIPE = "加班好辛苦……要不要我给你讲个笑话？"
NEW_SWIPE = "辛苦啦！重庆的雨季确实烦人，记得带伞哦。"


def make_character(data: Path, char_id: str = CHAR) -> None:
    folder = data / "agents" / char_id
    folder.mkdir(parents=True)
    (folder / "character.yaml").write_text(
        "name: 小月\nuser_name: 林舟\nconfig:\n  timezone: Asia/Shanghai\n", encoding="utf-8")


def run_import(path: Path, data: Path, embedder, **kw):
    return import_sillytavern_chat(path, user_id=USER, character=CHAR, config=EngineConfig(data_dir=data),
                                   embedder=embedder, **kw)


def open_orch(data: Path, embedder) -> MemoryOrchestrator:
    return MemoryOrchestrator.from_config(CHAR, config=EngineConfig(data_dir=data), embedder=embedder)


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def memory_files(data: Path) -> dict[str, bytes]:
    """The user's memory as files (derived caches left out)."""
    return files_of(data / "agents" / CHAR / "users" / USER)


# -- send_date ------------------------------------------------------------------------------------


class TestSendDate:
    """Every form SillyTavern writes, each to its instant; a zone-less time is local in the given zone."""

    @pytest.mark.parametrize("value, want", [
        pytest.param(1717591500000, datetime(2024, 6, 5, 12, 45, tzinfo=UTC), id="epoch-ms-number"),
        pytest.param("1717591500000", datetime(2024, 6, 5, 12, 45, tzinfo=UTC), id="epoch-ms-digits"),
        pytest.param(1717591500123.0, datetime(2024, 6, 5, 12, 45, 0, 123000, tzinfo=UTC), id="epoch-ms-float"),
        pytest.param("June 19, 2023 2:20pm", datetime(2023, 6, 19, 14, 20, tzinfo=TZ), id="meridiem-pm"),
        pytest.param("November 28, 2026 12:05am", datetime(2026, 11, 28, 0, 5, tzinfo=TZ), id="meridiem-midnight"),
        pytest.param("March 1, 2024 12:30pm", datetime(2024, 3, 1, 12, 30, tzinfo=TZ), id="meridiem-noon"),
        pytest.param("Sep 3, 2024 9:07AM", datetime(2024, 9, 3, 9, 7, tzinfo=TZ), id="meridiem-short-month"),
        pytest.param("2024-6-5 @14h 56m 50s 682ms", datetime(2024, 6, 5, 14, 56, 50, 682000, tzinfo=TZ),
                     id="humanized-server"),
        pytest.param("2024-6-5 @14h 56m 50s 05ms", datetime(2024, 6, 5, 14, 56, 50, 5000, tzinfo=TZ),
                     id="humanized-unpadded-ms"),
        pytest.param("2024-07-12@01h31m37s", datetime(2024, 7, 12, 1, 31, 37, tzinfo=TZ), id="humanized-client"),
        pytest.param("2025-11-23@14h05m09s123ms", datetime(2025, 11, 23, 14, 5, 9, 123000, tzinfo=TZ),
                     id="humanized-no-spaces-ms"),
        pytest.param("2025-11-23T14:05:09.123Z", datetime(2025, 11, 23, 14, 5, 9, 123000, tzinfo=UTC), id="iso-z"),
        pytest.param("2024-06-05T14:56:50+08:00", datetime(2024, 6, 5, 6, 56, 50, tzinfo=UTC), id="iso-offset"),
        pytest.param("2024-06-05T14:56:50.1234567-0500", datetime(2024, 6, 5, 19, 56, 50, 123456, tzinfo=UTC),
                     id="iso-long-fraction"),
        pytest.param("2024-06-05T14:56:50", datetime(2024, 6, 5, 14, 56, 50, tzinfo=TZ), id="iso-naive-is-local"),
        pytest.param("2024-06-05 14:56", datetime(2024, 6, 5, 14, 56, tzinfo=TZ), id="iso-space-minutes"),
    ])
    def test_parses_to_the_instant(self, value, want):
        got = parse_send_date(value, TZ)
        assert got == want and got.tzinfo is not None

    def test_a_local_time_follows_the_zone_rules(self):
        new_york = ZoneInfo("America/New_York")
        assert parse_send_date("July 4, 2024 9:00pm", new_york).astimezone(UTC) == datetime(2024, 7, 5, 1, tzinfo=UTC)
        assert parse_send_date("2024-1-4 @21h 00m 00s 0ms", new_york).astimezone(UTC) == datetime(2024, 1, 5, 2, tzinfo=UTC)

    @pytest.mark.parametrize("value", [
        pytest.param("yesterday", id="words"),
        pytest.param("", id="empty"),
        pytest.param(None, id="null"),
        pytest.param(True, id="bool"),
        pytest.param([1], id="list"),
        pytest.param(-5, id="negative"),
        pytest.param("February 30, 2024 1:00pm", id="no-such-day"),
        pytest.param("Smarch 3, 2024 1:00pm", id="no-such-month"),
        pytest.param("2024-13-01T00:00:00", id="month-13"),
        pytest.param("2024-6-5 @25h 00m 00s 0ms", id="hour-25"),
        pytest.param("99999999999999999999", id="epoch-too-long"),
        pytest.param("June 19, 2023 14:20", id="no-meridiem"),
    ])
    def test_anything_else_is_refused(self, value):
        with pytest.raises(ValueError, match="send_date"):
            parse_send_date(value, TZ)


# -- the parser -----------------------------------------------------------------------------------


def line(**fields) -> str:
    return json.dumps(fields, ensure_ascii=False)


HEADER = line(user_name="林舟", character_name="小月", create_date="2024-06-05@20h31m07s", chat_metadata={})


@pytest.fixture(scope="module")
def log() -> ChatLog:
    return read_chat(FIXTURE.read_bytes(), file=str(FIXTURE), tz=TZ)


class TestReadChat:
    """The fixture chat (a swipe, a narrator line, a comment, a hidden line, five date forms)."""

    def test_header(self, log):
        assert (log.user_name, log.character_name) == ("林舟", "小月")
        assert log.create_date == datetime(2024, 6, 5, 20, 31, 7, tzinfo=TZ)
        assert log.chat_metadata["note_depth"] == 4 and len(log.messages) == 12

    @pytest.mark.parametrize("line_no, role, at, starts", [
        pytest.param(2, "character", datetime(2024, 6, 5, 20, 31, tzinfo=TZ), "你好呀", id="greeting"),
        pytest.param(3, "user", datetime(2024, 6, 5, 20, 32, tzinfo=TZ), "今天在公司加班", id="meridiem"),
        pytest.param(4, "character", datetime(2024, 6, 5, 20, 33, tzinfo=TZ), NEW_SWIPE, id="chosen-swipe"),
        pytest.param(5, "system", datetime(2024, 6, 5, 20, 40, tzinfo=TZ), "*窗外", id="narrator"),
        pytest.param(6, "user", datetime(2024, 6, 5, 20, 45, tzinfo=TZ), "By the way", id="epoch-ms"),
        pytest.param(7, "character", datetime(2024, 6, 5, 20, 46, 2, 57000, tzinfo=TZ), "Noted", id="humanized"),
        pytest.param(8, "system", datetime(2024, 6, 6, 9, 0, tzinfo=TZ), "（作者注", id="comment"),
        pytest.param(9, "user", datetime(2024, 6, 6, 9, 15, 30, tzinfo=TZ), "早上好", id="iso-z"),
        pytest.param(10, "character", datetime(2024, 6, 6, 9, 16, 2, tzinfo=TZ), "早安", id="iso-offset"),
        pytest.param(11, "user", datetime(2024, 6, 6, 9, 20, 11, tzinfo=TZ), "（OOC", id="hidden-user"),
        pytest.param(13, "system", datetime(2024, 6, 6, 9, 21, tzinfo=TZ), "", id="system-bias"),
    ])
    def test_each_line(self, log, line_no, role, at, starts):
        m = next(m for m in log.messages if m.line == line_no)
        assert (m.role, m.at) == (role, at) and m.text.startswith(starts)

    def test_kinds(self, log):
        by_line = {m.line: m for m in log.messages}
        assert by_line[5].is_narrator and by_line[5].system_kind == "narrator"
        assert by_line[8].system_kind == "comment" and not by_line[8].is_narrator
        assert by_line[11].hidden and by_line[11].role == "user"
        assert (by_line[4].swipe_id, by_line[4].swipes) == (1, 2)
        assert all(OLD_SWIPE not in m.text for m in log.messages)

    @pytest.mark.parametrize("fields, text", [
        pytest.param(dict(mes="edited", swipes=["a", "b"], swipe_id=1), "b", id="swipe-wins-over-mes"),
        pytest.param(dict(mes="kept", swipes=["a"], swipe_id=3), "kept", id="swipe-id-out-of-range"),
        pytest.param(dict(mes="kept", swipes=["a", "b"], swipe_id=True), "kept", id="swipe-id-not-int"),
        pytest.param(dict(mes="only"), "only", id="no-swipes"),
    ])
    def test_the_chosen_swipe(self, fields, text):
        data = "\n".join([HEADER, line(name="小月", is_user=False, send_date="June 5, 2024 8:31pm", **fields)])
        assert read_chat(data.encode(), file="c.jsonl", tz=TZ).messages[0].text == text

    def test_a_missing_send_date_takes_the_swipes(self):
        data = "\n".join([HEADER, line(name="小月", mes="b", swipes=["a", "b"], swipe_id=1,
                                       swipe_info=[{"send_date": "x"}, {"send_date": "June 5, 2024 8:33pm"}]),
                          line(name="林舟", is_user=True, mes="hi")])
        messages = read_chat(data.encode(), file="c.jsonl", tz=TZ).messages
        assert [m.at for m in messages] == [datetime(2024, 6, 5, 20, 33, tzinfo=TZ), None]

    def test_is_small_sys_alone_is_not_system(self):
        data = "\n".join([HEADER, line(name="林舟", is_user=True, is_system=False, mes="compact",
                                       send_date="June 5, 2024 8:31pm", extra={"isSmallSys": True})])
        assert read_chat(data.encode(), file="c.jsonl", tz=TZ).messages[0].role == "user"

    @pytest.mark.parametrize("bad, where, what", [
        pytest.param('{"mes": ', 2, "not valid JSON", id="torn-json"),
        pytest.param("[1, 2]", 2, "JSON object", id="array"),
        pytest.param(line(name="a", mes="x", send_date="Marchtember 1, 2024 1:00pm"), 2, "send_date", id="bad-date"),
        pytest.param(line(name="a", mes=["x"], send_date="June 5, 2024 8:31pm"), 2, "no text", id="mes-not-text"),
        pytest.param("[" * 100_000, 2, "JSON", id="deep-nesting"),
    ])
    def test_a_bad_line_names_file_and_line(self, bad, where, what):
        data = "\n".join([HEADER, bad, line(name="a", mes="y", send_date="June 5, 2024 8:31pm")]).encode()
        with pytest.raises(FormatError, match=rf"chat\.jsonl: line {where}: .*{what}") as info:
            read_chat(data, file="chat.jsonl", tz=TZ)
        assert isinstance(info.value, ValueError)

    def test_bounds(self, monkeypatch):
        import engine.formats.sillytavern.chatlog as chatlog

        monkeypatch.setattr(chatlog, "MAX_LINE_BYTES", 100)
        data = "\n".join([line(user_name="u"), line(name="a", mes="y" * 200, send_date="June 5, 2024 8:31pm")]).encode()
        with pytest.raises(FormatError, match=r"c\.jsonl: line 2: .*over the limit"):
            read_chat(data, file="c.jsonl", tz=TZ)
        monkeypatch.setattr(chatlog, "MAX_FILE_BYTES", 10)
        with pytest.raises(FormatError, match=r"c\.jsonl: .*over the limit"):
            read_chat(data, file="c.jsonl", tz=TZ)


class TestTurns:
    """How messages pair into turns."""

    def _turns(self, *messages: tuple[str, str]):
        lines = [HEADER] + [line(name=name, is_user=name == "林舟", mes=text,
                                 send_date=f"June 5, 2024 8:{10 + i:02d}pm") for i, (name, text) in enumerate(messages)]
        return chat_turns(read_chat("\n".join(lines).encode(), file="c.jsonl", tz=TZ)).turns

    def test_user_messages_before_a_reply_join_it(self):
        turns = self._turns(("小月", "你好"), ("林舟", "一"), ("林舟", "二"), ("小月", "好"), ("小月", "还有"), ("林舟", "三"))
        assert [(t.user, t.assistant) for t in turns] == [("", "你好"), ("一\n二", "好\n还有"), ("三", "")]
        assert turns[1].at == datetime(2024, 6, 5, 20, 11, tzinfo=TZ)
        assert turns[1].reply_at == datetime(2024, 6, 5, 20, 13, tzinfo=TZ)

    def test_a_group_chat_names_each_speaker(self):
        turns = self._turns(("林舟", "大家好"), ("小月", "你好"), ("阿星", "嗨"))
        assert turns[0].assistant == "小月: 你好\n阿星: 嗨"

    @pytest.mark.parametrize("name, want", [
        pytest.param("xiaoyue - 2024-06-05@20h31m07s.jsonl", "xiaoyue_-_2024-06-05_20h31m07s", id="sillytavern-name"),
        pytest.param("小月 - 2024-6-5@20h31m07s.jsonl", "小月_-_2024-6-5_20h31m07s", id="chinese"),
        pytest.param("Branch #12 - 2024-6-5@20h31m07s.jsonl", "Branch_12_-_2024-6-5_20h31m07s", id="branch"),
    ])
    def test_chat_id_from_the_file_name(self, name, want):
        assert chat_id_for(Path("/x") / name) == want

    def test_a_chat_id_that_cannot_be_an_id_is_a_digest(self):
        chat = chat_id_for("a..b.jsonl")
        assert chat.startswith("c-") and chat == chat_id_for("/elsewhere/a..b.jsonl")


# -- importing the fixture ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imported(tmp_path_factory, embedder):
    """The fixture chat imported once: (data dir, report)."""
    data = tmp_path_factory.mktemp("st-small") / "data"
    make_character(data)
    return data, run_import(FIXTURE, data, embedder)


class TestImportFixture:
    def test_report(self, imported):
        _, report = imported
        assert report.counts["diary"].imported == 5 and report.counts["diary"].skipped == 3
        assert [s.where.rsplit(":", 1)[1] for s in report.skipped] == ["5", "8", "13"]
        assert "narrator" in report.skipped[0].reason and "comment" in report.skipped[1].reason
        assert report.counts["window"].imported == 9 and report.counts["core"].imported >= 3
        notes = " ".join(report.notes)
        assert "2 system and 1 narrator" in notes and "1 messages hidden" in notes and "chosen one" in notes
        text = format_report(report)
        assert "diary" in text and ":13" in text

    def test_turns_at_their_times_chosen_swipe_no_system_lines(self, imported, embedder):
        data, _ = imported
        with open_orch(data, embedder) as orch:
            entries = orch.store("diary").entries(USER, datetime(2024, 6, 1, tzinfo=TZ), datetime(2024, 6, 8, tzinfo=TZ))
        assert [e.at for e in entries] == [datetime(2024, 6, 5, 20, 31, tzinfo=TZ), datetime(2024, 6, 5, 20, 32, tzinfo=TZ),
                                           datetime(2024, 6, 5, 20, 45, tzinfo=TZ), datetime(2024, 6, 6, 9, 15, 30, tzinfo=TZ),
                                           datetime(2024, 6, 6, 9, 20, 11, tzinfo=TZ)]
        assert entries[0].user == "" and entries[0].assistant.startswith("你好呀")
        assert entries[1].assistant == NEW_SWIPE and entries[4].user.endswith("我明天要去成都出差。")
        # The relative date is resolved against the turn's own day, as a recorded turn's is.
        assert ("明天", "2024-06-07") in entries[4].dates
        stored = b"".join(memory_files(data).values()).decode("utf-8")
        assert OLD_SWIPE not in stored and "窗外的雨" not in stored and "作者注" not in stored

    def test_facts_from_the_users_lines(self, imported, embedder):
        data, _ = imported
        with open_orch(data, embedder) as orch:
            facts = [f.text for f in orch.store("core").facts(USER)]
        assert any("重庆" in f for f in facts) and any("cilantro" in f for f in facts), facts
        assert not any("带伞" in f for f in facts)

    def test_window_of_the_chat(self, imported, embedder):
        data, _ = imported
        with open_orch(data, embedder) as orch:
            stored = orch.short_term.backend.load(USER, chat_id=chat_id_for(FIXTURE)).messages
            default = orch.short_term.backend.load(USER).messages
        assert [m.role for m in stored] == ["assistant"] + ["user", "assistant"] * 4 and default == []
        assert stored[2].content == NEW_SWIPE and stored[2].at == "2024-06-05T20:33:00+08:00"
        assert stored[3].at == "2024-06-05T20:45:00+08:00" and stored[-1].content == "出差顺利！记得带伞。"

    def test_the_diary_answers_the_day(self, imported, embedder):
        data, _ = imported
        with open_orch(data, embedder) as orch:
            result = orch.build_prompt("6月5日我们聊了什么？", user_id=USER, now=datetime(2024, 6, 10, 21, tzinfo=TZ))
        hits = [h for h in result.hits if h.store == "diary" and h.meta.get("kind") == "turn"]
        turns = [h.text for h in hits if h.meta["time"].startswith("2024-06-05")]
        assert len(turns) == 3 and any("cilantro" in t for t in turns) and any("重庆" in t for t in turns), turns
        # A later turn that told of that day ("昨天你说…", said on the 6th) may come along; nothing else.
        assert all("2024-06-05" in h.text for h in hits)

    def test_importing_again_adds_nothing(self, imported, embedder):
        data, _ = imported
        before = memory_files(data)
        again = run_import(FIXTURE, data, embedder)
        assert {name: c.imported for name, c in again.counts.items()} == {"diary": 0, "core": 0, "window": 0}
        assert again.counts["diary"].present == 5 and again.counts["window"].present == 9
        assert memory_files(data) == before


def test_an_unknown_character_is_named_with_those_that_exist(tmp_path, embedder):
    data = tmp_path / "data"
    make_character(data, "阿星")
    with pytest.raises(SillyTavernChatImportError, match=r"no character 'xiaoyue' .*have: 阿星"):
        run_import(FIXTURE, data, embedder)


# -- a long chat ------------------------------------------------------------------------------------

START = datetime(2024, 3, 1, 20, 0, tzinfo=TZ)
TOPICS = ["画画", "火锅", "考试", "猫", "电影", "跑步", "下雨", "吉他", "the new job", "a trip to Kyoto", "baking bread"]


def stamp(at: datetime, form: int):
    """`at` as SillyTavern wrote it in one of its forms."""
    if form == 0:
        return f"{at:%B} {at.day}, {at.year} {(at.hour - 1) % 12 + 1}:{at:%M}{'pm' if at.hour >= 12 else 'am'}"
    if form == 1:
        return f"{at.year}-{at.month}-{at.day} @{at:%H}h {at:%M}m {at:%S}s 0ms"
    if form == 2:
        return int(at.timestamp() * 1000)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def write_long_chat(path: Path, *, days: int = 32, per_day: int = 16, bad_line: int | None = None) -> dict[date, list[str]]:
    """A chat of `days` days with `per_day` exchanges each, its dates in every form, a two-swipe
    reply per exchange and a narrator line a day; returns what the user said on each day.
    `bad_line`: that line's send_date is in no known form."""
    lines = [line(user_name="林舟", character_name="小月", create_date="2024-03-01@20h00m00s", chat_metadata={})]
    said: dict[date, list[str]] = {}
    for d in range(days):
        for k in range(per_day):
            at = START + timedelta(days=d, minutes=7 * k)
            topic = TOPICS[(d * 3 + k) % len(TOPICS)]
            text = f"第{d + 1}天的第{k + 1}件事：我们聊了{topic}" if k % 3 else f"Day {d + 1}, item {k + 1}: we talked about {topic}"
            said.setdefault(at.date(), []).append(text)
            lines.append(line(name="林舟", is_user=True, is_system=False, send_date=stamp(at, (d + k) % 4), mes=text,
                              extra={}))
            reply = at + timedelta(minutes=1)
            lines.append(line(name="小月", is_user=False, is_system=False, send_date=stamp(reply, (d + k + 1) % 4),
                              mes=f"好呀，关于{topic}我记住了。", swipes=["（被换掉的回答）", f"好呀，关于{topic}我记住了。"],
                              swipe_id=1, extra={"api": "openai"}))
        lines.append(line(name="System", is_user=False, is_system=False, send_date=stamp(at + timedelta(minutes=3), 0),
                          mes=f"*第{d + 1}天，夜深了。*", extra={"type": "narrator"}, force_avatar="img/five.png"))
    if bad_line is not None:
        item = json.loads(lines[bad_line - 1])
        item["send_date"] = "Marchtember 3, 2024 9:00pm"
        lines[bad_line - 1] = json.dumps(item, ensure_ascii=False)
    path.write_text("\n".join(lines), encoding="utf-8")
    return said


@pytest.fixture(scope="module")
def long_chat(tmp_path_factory, embedder):
    """32 days, 1,056 messages (512 exchanges, 32 narrator lines), imported once."""
    folder = tmp_path_factory.mktemp("st-long")
    data = folder / "data"
    make_character(data)
    path = folder / "小月 - 2024-3-1@20h00m00s.jsonl"
    said = write_long_chat(path)
    return data, path, said, run_import(path, data, embedder)


class TestLongChat:
    def test_all_of_it_comes_in(self, long_chat):
        _, path, said, report = long_chat
        log = read_chat(path.read_bytes(), file=str(path), tz=TZ)
        assert len(log.messages) == 1056 and len(said) == 32
        assert (log.messages[-1].at - log.messages[0].at) > timedelta(days=30)
        assert report.counts["diary"].imported == 512 and report.counts["diary"].skipped == 32

    @pytest.mark.parametrize("question", ["3月18日我们聊了什么？", "What did we talk about on March 18?"])
    def test_the_diary_answers_a_day_of_it(self, long_chat, embedder, question):
        data, _, said, _ = long_chat
        day = date(2024, 3, 18)
        with open_orch(data, embedder) as orch:
            result = orch.build_prompt(question, user_id=USER, now=datetime(2024, 4, 10, 21, tzinfo=TZ))
        diary = [h for h in result.hits if h.store == "diary"]
        turns = [h for h in diary if h.meta.get("kind") == "turn"]
        omitted = sum(h.meta.get("omitted", 0) for h in diary if h.meta.get("kind") == "omitted")
        assert {datetime.fromisoformat(h.meta["time"]).astimezone(TZ).date() for h in turns} == {day}
        assert len(turns) + omitted == len(said[day]) and len(turns) >= len(said[day]) // 2
        assert all(any(text in h.text for text in said[day]) for h in turns)
        prompt = "\n".join(m["content"] for m in result.messages if isinstance(m.get("content"), str))
        assert "被换掉的回答" not in prompt and "夜深了" not in prompt

    def test_importing_again_adds_nothing(self, long_chat, embedder):
        data, path, _, _ = long_chat
        before = memory_files(data)
        again = run_import(path, data, embedder)
        assert again.counts["diary"].imported == 0 and again.counts["diary"].present == 512
        assert again.counts["core"].imported == 0 and again.counts["window"].imported == 0
        assert memory_files(data) == before


def test_a_bad_date_stops_the_import_before_anything_is_written(tmp_path, embedder):
    data = tmp_path / "data"
    make_character(data)
    path = tmp_path / "bad.jsonl"
    write_long_chat(path, days=2, per_day=3, bad_line=6)
    before = files_of(data)
    with pytest.raises(FormatError, match=r"bad\.jsonl: line 6: send_date 'Marchtember") as info:
        run_import(path, data, embedder)
    assert (info.value.file, info.value.where) == (str(path), "line 6")
    assert files_of(data) == before


def test_a_parse_only_api_is_pure():
    """read_chat takes bytes, not a path: nothing is opened or written."""
    log = read_chat(b"", file="empty.jsonl", tz=TZ)
    assert log == ChatLog("empty.jsonl", "", "", None, {}, ())
    assert chat_turns(log).turns == ()
    assert ChatMessage(1, "a", "user", "t", None).hidden is False


def test_the_command_line_imports_and_reports(tmp_path, capsys):
    """`kioku import sillytavern-chat` as a user runs it: the report, then nothing new the second time."""
    from engine.cli import main

    data = tmp_path / "data"
    make_character(data)
    args = ["import", "sillytavern-chat", str(FIXTURE), "--char", CHAR, "--user", USER,
            "--tz", "Asia/Shanghai", "--data-dir", str(data), "--no-progress"]
    assert main(args) == 0
    diary = re.compile(r"^  diary\s+(\d+)\s+(\d+)\s+(\d+)", re.M)  # imported, present, skipped
    assert diary.search(capsys.readouterr().out).groups() == ("5", "0", "3")
    after_first = memory_files(data)
    assert main(args) == 0
    assert diary.search(capsys.readouterr().out).groups() == ("0", "5", "3")
    assert memory_files(data) == after_first  # the memory, caches aside
    with pytest.raises(SystemExit) as exc:
        main(["import", "sillytavern-chat", str(FIXTURE), "--user", USER, "--data-dir", str(data)])
    assert exc.value.code == 2 and "needs --char" in capsys.readouterr().err
