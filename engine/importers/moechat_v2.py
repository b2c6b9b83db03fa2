"""MoeChat's newer memory (the active fork's `data/agents/<name>/memory_v2.db`, SQLite), beside the
original YAML files: its raw turns become diary turns, its memories about the user and about "us"
become core facts, its day diaries the digests of those days.

The tables read (the fork's `services/memory_v2.py` writes them):

    chat_turns(id, timestamp_sec, role, content)      one message a row; epoch seconds
    memories(id, category, content, importance, memory_type, created_at, archived, ...)
                                                       category about_user | about_us | about_world
                                                       | about_self; created_at local ISO time
    diary_days(day, event_summary, content, created_at)

The file is opened read-only and never written; a table that is missing is reported, not fatal. Each
refused row is reported with its table and id.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from pathlib import Path

from engine.importers.moechat_format import MoeTurn
from engine.importers.report import Skipped

FILE = "memory_v2.db"
FACT_CATEGORIES = ("about_user", "about_us")
"""What the user told and what the two shared: kioku's core facts. The character's reflections on
itself (`about_self`) and what it learned of the world (`about_world`) belong to the persona and
the world book, which an author edits: they are reported, not imported."""
KEPT_OUT = {"about_self": "the character's reflection on itself", "about_world": "what the character learned of the world"}
DIARY_MARK = "[日记]"
"""The fork also files each day's diary as an about_us memory with this prefix: a copy of
`diary_days`, imported as that day's digest only."""


@dataclass
class MemoryV2:
    turns: list[MoeTurn] = field(default_factory=list)
    facts: list[tuple[str, datetime]] = field(default_factory=list)
    """(text, learned at)."""
    digests: list[tuple[date, str]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def read_memory_v2(path: Path, *, tz: tzinfo) -> MemoryV2:
    """Everything importable in `path`; raises ValueError naming the file when it is no SQLite
    database."""
    out = MemoryV2()
    try:
        conn = sqlite3.connect(f"file:{path.resolve().as_posix()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, store, read in (("chat_turns", "diary", _turns), ("memories", "core", _facts),
                                       ("diary_days", "diary", _digests)):
                if table in tables:
                    read(conn, path, tz, out)
                else:
                    out.skipped.append(Skipped(store, f"{path}", f"no table {table!r}: nothing of it imported"))
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path}: not a readable SQLite database ({exc})") from None
    return out


def _turns(conn: sqlite3.Connection, path: Path, tz: tzinfo, out: MemoryV2) -> None:
    """Messages in time order, each user message with the assistant messages that follow it (a
    reply without a question, or a question without a reply, is a turn with one side empty)."""
    asked: tuple[datetime, str, str] | None = None  # (at, text, where)
    replies: list[tuple[datetime, str, str]] = []

    def close() -> None:
        if asked is not None or replies:
            at, user, where = asked if asked is not None else (replies[0][0], "", replies[0][2])
            out.turns.append(MoeTurn(at, "", user, "\n".join(r[1] for r in replies), where))

    for rid, ts, role, content in conn.execute(
        "SELECT id, timestamp_sec, role, content FROM chat_turns ORDER BY timestamp_sec, id"
    ):
        where = f"{path} chat_turns id {rid}"
        if not isinstance(ts, int) or not isinstance(content, str) or role not in ("user", "assistant"):
            out.skipped.append(Skipped("diary", where, f"unreadable row (timestamp_sec={ts!r}, role={role!r})"))
            continue
        try:
            at = datetime.fromtimestamp(ts, tz)
        except (OverflowError, OSError, ValueError):
            out.skipped.append(Skipped("diary", where, f"timestamp_sec {ts} is no time"))
            continue
        if role == "user":
            close()
            asked, replies = (at, content, where), []
        else:
            replies.append((at, content, where))
    close()


def _facts(conn: sqlite3.Connection, path: Path, tz: tzinfo, out: MemoryV2) -> None:
    for rid, category, content, created_at, archived in conn.execute(
        "SELECT id, category, content, created_at, archived FROM memories ORDER BY id"
    ):
        where = f"{path} memories id {rid}"
        text = content.strip() if isinstance(content, str) else ""
        if not text:
            out.skipped.append(Skipped("core", where, "empty content"))
            continue
        if text.startswith(DIARY_MARK):
            continue  # the day's diary again (imported from diary_days)
        if category not in FACT_CATEGORIES:
            what = KEPT_OUT.get(category, "no category kioku knows")
            out.skipped.append(Skipped("core", where, f"category {category!r} ({what}) is no fact about the user: "
                                       "kept out (add it to the persona or the world book by hand)"))
            continue
        if archived:
            out.skipped.append(Skipped("core", where, "archived by MoeChat's decay (kept out)"))
            continue
        try:
            learned = datetime.fromisoformat(str(created_at))
        except ValueError:
            out.skipped.append(Skipped("core", where, f"created_at {created_at!r} is no ISO time"))
            continue
        out.facts.append((text, learned.replace(tzinfo=tz) if learned.tzinfo is None else learned.astimezone(tz)))


def _digests(conn: sqlite3.Connection, path: Path, tz: tzinfo, out: MemoryV2) -> None:
    for day, summary, content in conn.execute("SELECT day, event_summary, content FROM diary_days ORDER BY day"):
        where = f"{path} diary_days {day!r}"
        try:
            when = date.fromisoformat(str(day))
        except ValueError:
            out.skipped.append(Skipped("diary", where, "day is no YYYY-MM-DD date"))
            continue
        text = (content if isinstance(content, str) and content.strip() else summary) or ""
        if text.strip():
            out.digests.append((when, text.strip()))
