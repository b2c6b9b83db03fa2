"""`kioku import sillytavern-chat` (issue 38 item 4): a SillyTavern chat log comes in at its real
times, the chosen swipe only, system lines kept out; the diary then answers a question about a
day of it with that day's messages; importing again records nothing; a bad line stops the import
before anything is written, naming the file and line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from engine.cli import main
from engine.formats.sillytavern.chatlog import parse_send_date, read_chat
from engine.formats.sillytavern.problems import FormatError
from engine.orchestrator import MemoryOrchestrator

TZ = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize("value, want", [
    (1718000000000, datetime(2024, 6, 10, 6, 13, 20, tzinfo=timezone.utc)),
    ("1718000000000", datetime(2024, 6, 10, 6, 13, 20, tzinfo=timezone.utc)),
    ("June 19, 2023 2:20pm", datetime(2023, 6, 19, 14, 20, tzinfo=TZ)),
    ("November 28, 2026 12:05am", datetime(2026, 11, 28, 0, 5, tzinfo=TZ)),
    ("2024-6-5 @14h 56m 50s 682ms", datetime(2024, 6, 5, 14, 56, 50, 682000, tzinfo=TZ)),
    ("2024-7-12@01h31m37s", datetime(2024, 7, 12, 1, 31, 37, tzinfo=TZ)),
    ("2024-06-05T14:56:50.682Z", datetime(2024, 6, 5, 14, 56, 50, 682000, tzinfo=timezone.utc)),
    ("2024-06-05T14:56:50+08:00", datetime(2024, 6, 5, 6, 56, 50, tzinfo=timezone.utc)),
])
def test_every_send_date_sillytavern_writes(value, want):
    assert parse_send_date(value, TZ) == want


@pytest.mark.parametrize("value", ["yesterday", "", None, "February 30, 2024 1:00pm", "2024-13-01T00:00:00", True])
def test_a_send_date_in_no_format_is_refused(value):
    with pytest.raises(ValueError, match="send_date"):
        parse_send_date(value, TZ)


def _line(**kw) -> str:
    return json.dumps(kw, ensure_ascii=False)


def _log(days: int, per_day: int, start=datetime(2024, 3, 1, 20, 0)) -> tuple[str, list[tuple[datetime, str]]]:
    """A chat of `days` days, `per_day` exchanges a day, send_date as SillyTavern 1.12 writes it."""
    lines = [_line(user_name="林舟", character_name="小月", create_date="2024-3-1 @20h 00m 00s 000ms", chat_metadata={})]
    said: list[tuple[datetime, str]] = []
    topics = ["画画", "火锅", "考试", "猫", "电影", "跑步", "下雨", "吉他"]
    for d in range(days):
        for k in range(per_day):
            at = start + timedelta(days=d, minutes=5 * k)
            stamp = f"{at:%B} {at.day}, {at.year} {(at.hour - 1) % 12 + 1}:{at:%M}{'pm' if at.hour >= 12 else 'am'}"
            text = f"第{d}天第{k}次，我们聊{topics[(d + k) % len(topics)]}，代号D{d}K{k}"
            said.append((at, text))
            lines.append(_line(name="林舟", is_user=True, is_system=False, send_date=stamp, mes=text))
            lines.append(_line(name="小月", is_user=False, is_system=False, send_date=stamp, mes="旧的回答",
                               swipes=["旧的回答", f"好的，记住了D{d}K{k}"], swipe_id=1))
        lines.append(_line(name="System", is_user=False, is_system=True, send_date=stamp, mes="[系统：换了场景]"))
    return "\n".join(lines) + "\n", said


def _character(data, name="xiaoyue"):
    folder = data / "agents" / name
    folder.mkdir(parents=True)
    (folder / "character.yaml").write_text(f"name: 小月\nconfig:\n  timezone: Asia/Shanghai\n", encoding="utf-8")


def test_a_long_chat_log_comes_in_and_the_diary_answers_a_day_of_it(tmp_path, capsys):
    data = tmp_path / "data"
    _character(data)
    text, said = _log(days=32, per_day=16)  # 1,024 user/character messages + 32 system lines over 32 days
    log = tmp_path / "小月 - 2024-3-1.jsonl"
    log.write_text(text, encoding="utf-8")
    parsed = read_chat(log.read_bytes(), file=str(log), tz=TZ)
    assert len(parsed.messages) == 32 * 33 and sum(m.role == "system" for m in parsed.messages) == 32
    args = ["import", "sillytavern-chat", str(log), "--char", "xiaoyue", "--user", "linzhou",
            "--tz", "Asia/Shanghai", "--data-dir", str(data), "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "512 turns recorded, 0 already there, 32 system lines left out" in out
    assert main(args) == 0
    assert "0 turns recorded, 512 already there" in capsys.readouterr().out

    orch = MemoryOrchestrator.from_config("xiaoyue", data_dir=data)
    try:
        day = 17
        asked = datetime(2024, 3, 1) + timedelta(days=day)
        result = orch.build_prompt(f"{asked.month}月{asked.day}日我们聊了什么？", user_id="linzhou",
                                   now=datetime(2024, 4, 10, 21, 0, tzinfo=TZ))
        prompt = "\n".join(m["content"] for m in result.messages if isinstance(m.get("content"), str))
        that_day = [t for at, t in said if at.date() == asked.date()]
        assert sum(f"D{day}K" in line and t.split("代号")[1] in line for t in that_day for line in prompt.splitlines()) \
            >= len(that_day) * 0.9
        assert "旧的回答" not in prompt and "换了场景" not in prompt
    finally:
        orch.close()


def test_a_bad_line_stops_the_import_before_anything_is_written(tmp_path, capsys):
    data = tmp_path / "data"
    _character(data)
    text, _ = _log(days=2, per_day=2)
    lines = text.splitlines()
    lines[3] = lines[3].replace('"send_date": "March', '"send_date": "Marchtember')
    log = tmp_path / "bad.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    assert main(["import", "sillytavern-chat", str(log), "--char", "xiaoyue", "--user", "u1",
                 "--data-dir", str(data), "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "bad.jsonl: line 4" in err and "send_date" in err
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


def test_a_line_that_is_not_json_names_its_line(tmp_path):
    with pytest.raises(FormatError, match=r"chat.jsonl: line 2: not a JSON object"):
        read_chat(b'{"user_name": "a"}\n{"mes": \n', file="chat.jsonl", tz=TZ)
