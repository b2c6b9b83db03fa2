"""`kioku db import` / `export`: a files data folder -> PostgreSQL -> files, with the real readers."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")  # before the imports below

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from engine.fileio import atomic_write_text, atomic_write_yaml
from engine.paths import character_paths
from engine.shortterm.backend import Brain, FileBackend, WindowMessage
from engine.backends.postgres.search import PgTurnSearch
from engine.backends.postgres.transfer import export_character, import_character
from engine.stores.core.facts import Fact, Revision, dump_facts, parse_facts
from engine.stores.diary.dayfile import append_entry, day_file_name, load_day
from engine.stores.diary.entry import DiaryEntry
from pg_server import pg, pg_db, pg_plain_server, pg_vector_server  # noqa: E402, F401 - fixtures

TZ = ZoneInfo("Asia/Shanghai")
CST = timezone(timedelta(hours=8))
T0 = datetime(2026, 5, 1, 21, 30, tzinfo=CST)


def make_files(data: Path) -> None:
    """A character with two users, written by the files backend's own writers."""
    paths = character_paths(data, "小月")
    for user, n in (("张三", 30), ("bob", 5)):
        up = paths.user(user)
        for i in range(n):
            at = T0 + timedelta(hours=7 * i)
            if i == 3:
                at = at.astimezone(timezone(timedelta(hours=-4)))  # a turn written in another offset
            entry = DiaryEntry(id=f"t{i:03d}", at=at, tag=f"标签{i}",
                               user=f"第{i}句：我昨天去了博物馆\u2028真好" if i % 2 else f"turn {i} \"quoted\"",
                               assistant="好的" if i else "")
            append_entry(up.diary_dir / day_file_name(entry.local_day(TZ)), entry)
        atomic_write_yaml(up.diary_dir / "digests" / "2026-05-01.yaml",
                          {"date": "2026-05-01", "turns": 1, "by": "llm", "digest": "聊了博物馆"})
        facts = [
            Fact(id="f1", text="住在成都", learned_at=T0, updated_at=T0 + timedelta(days=2), source_turns=("t001", "t004"),
                 history=(Revision("住在重庆", T0 + timedelta(days=2), "update"),)),
            Fact(id="f2", text="讨厌香菜", learned_at=T0, updated_at=T0, source_turns=("manual",),
                 history=(Revision("讨厌香菜", T0 + timedelta(days=3), "delete"),), deleted_at=T0 + timedelta(days=3)),
            Fact(id="f3", text="养了一只猫叫阿黄", learned_at=T0, updated_at=T0),
        ]
        atomic_write_text(up.core_file, dump_facts(facts))
        backend = FileBackend(paths)
        msgs = [WindowMessage(f"m{i}", "user" if i % 2 == 0 else "assistant", f"消息 {i}", T0.isoformat(), 3)
                for i in range(6)]
        backend.append(user, msgs, Brain())
        backend.replace(user, msgs[2:], Brain(historical_summary="之前聊了天气", summarized_through="m1",
                                              updated_at=T0.isoformat(), is_dirty=True))


def read_back(data: Path, user: str):
    """Everything a user has, through the files backend's readers."""
    paths = character_paths(data, "小月")
    up = paths.user(user)
    entries = sorted((e for p in sorted(up.diary_dir.glob("*.yaml")) for e in load_day(p, tz=TZ, repair=False).entries),
                     key=lambda e: (e.at, e.id))
    day_files = sorted(p.name for p in up.diary_dir.glob("*.yaml"))
    digests = sorted(p.read_text(encoding="utf-8") for p in (up.diary_dir / "digests").glob("*.yaml"))
    facts = parse_facts(up.core_file.read_text(encoding="utf-8"), path=up.core_file, tz=TZ, default_time=T0)
    state = FileBackend(paths).load(user)
    return {"entries": entries, "offsets": [e.at.isoformat() for e in entries], "day_files": day_files,
            "digests": digests, "facts": facts, "window": state.messages,
            "summary": (state.brain.historical_summary, state.brain.summarized_through)}


def test_export_import_round_trip_keeps_every_turn_fact_and_history(pg, tmp_path, embedder):
    db, state, _ = pg
    src, out = tmp_path / "src", tmp_path / "out"
    make_files(src)
    embed = lambda texts: embedder.embed(texts, role="passage")  # noqa: E731 - the real packaged model
    report = import_character(db, src, "小月", tz=TZ, state=state, embed=embed, progress=False)
    assert (report.users, report.turns_added, report.facts_added, report.problems) == (2, 35, 6, [])
    assert report.indexed == 35 and report.window_messages_added == 8
    again = import_character(db, src, "小月", tz=TZ, state=state, embed=embed, progress=False)
    assert (again.turns_added, again.facts_added, again.window_messages_added) == (0, 0, 0)  # idempotent

    exported = export_character(db, out, "小月", progress=False)
    assert (exported.users, exported.turns, exported.facts) == (2, 35, 6)
    for user in ("张三", "bob"):
        assert read_back(out, user) == read_back(src, user)
    # The diary day files come back byte for byte (same writer, same order, same offsets).
    up_src, up_out = character_paths(src, "小月").user("张三"), character_paths(out, "小月").user("张三")
    for p in up_src.diary_dir.glob("*.yaml"):
        assert (up_out.diary_dir / p.name).read_bytes() == p.read_bytes()
    # The imported turns are searchable at once, by meaning and by words.
    search = PgTurnSearch(db, "小月", state=state)
    query = embedder.embed(["博物馆"], role="query")[0]
    assert search.search("张三", "博物馆", query, k=3)[0].turn_id in {f"t{i:03d}" for i in range(1, 30, 2)}
    assert search.missing("张三") == []


def test_import_reports_a_broken_day_file_and_imports_the_rest(pg, tmp_path):
    db, state, _ = pg
    src = tmp_path / "src"
    make_files(src)
    up = character_paths(src, "小月").user("bob")
    broken = sorted(up.diary_dir.glob("*.yaml"))[0]
    broken.write_bytes(broken.read_bytes() + b'- id: "torn"\n  time: "2026-05-0')
    report = import_character(db, src, "小月", tz=TZ, state=state, progress=False)
    assert report.turns_added == 35
    assert len(report.problems) == 1 and str(broken) in report.problems[0] and ":" in report.problems[0]
    assert broken.read_bytes().endswith(b"2026-05-0")  # the reader did not repair (readers never write)
