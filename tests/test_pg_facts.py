"""Core facts with history in a real PostgreSQL, including two writer processes on one user."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")  # before the imports below

import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path


from engine.backends.postgres.facts import FactMissingError, PgFacts
from pg_server import pg, pg_db, pg_plain_server, pg_vector_server  # noqa: E402, F401 - fixtures

CST = timezone(timedelta(hours=8))
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=CST)
REPO = Path(__file__).resolve().parents[1]


class TestFacts:
    def test_add_update_delete_keep_history(self, pg):
        db, _, _ = pg
        facts = PgFacts(db, "c")
        f, new = facts.add("u1", "住在重庆", at=T0, source_turns=["t-1"])
        assert new
        facts.update("u1", f.id, "住在成都", at=T0 + timedelta(days=3), by_turn="t-9")
        gone = facts.delete("u1", f.id, at=T0 + timedelta(days=7))
        assert gone.deleted_at is not None and gone.text == "住在成都"
        assert [(r.text, r.change) for r in gone.history] == [("住在重庆", "update"), ("住在成都", "delete")]
        assert gone.history[0].until.isoformat() == "2026-11-05T10:00:00+08:00"
        assert facts.list("u1") == []
        assert facts.list("u1", include_deleted=True) == [gone]
        with pytest.raises(FactMissingError):
            facts.update("u1", f.id, "x", at=T0)

    def test_the_same_text_twice_is_one_fact_with_both_sources(self, pg):
        db, _, _ = pg
        facts = PgFacts(db, "c")
        a, _ = facts.add("u1", "讨厌吃香菜", at=T0, source_turns=["t1"])
        b, new = facts.add("u1", "讨厌吃香菜。", at=T0, source_turns=["t2"])
        assert not new and b.id == a.id and b.source_turns == ("t1", "t2")
        assert len(facts.list("u1")) == 1

    def test_forget_turn_deletes_what_it_taught_and_reverts_what_it_changed(self, pg):
        db, _, _ = pg
        facts = PgFacts(db, "c")
        keep, _ = facts.add("u1", "养了一只猫", at=T0, source_turns=["t1"])
        taught, _ = facts.add("u1", "喜欢爬山", at=T0, source_turns=["t5"])
        both, _ = facts.add("u1", "会说日语", at=T0, source_turns=["t2"])
        facts.add("u1", "会说日语", at=T0, source_turns=["t5"])
        facts.update("u1", keep.id, "养了两只猫", at=T0 + timedelta(hours=1), by_turn="t5")
        assert facts.forget_turn("u1", "t5", at=T0 + timedelta(hours=2)) == 2
        live = {f.id: f for f in facts.list("u1")}
        assert taught.id not in live
        assert live[keep.id].text == "养了一只猫"
        assert live[both.id].source_turns == ("t2",)
        assert facts.forget_turn("u1", "t5", at=T0 + timedelta(hours=3)) == 0  # idempotent

    def test_put_imports_facts_exactly_and_idempotently(self, pg):
        db, _, _ = pg
        facts = PgFacts(db, "c")
        f, _ = facts.add("u1", "a", at=T0)
        facts.update("u1", f.id, "b", at=T0 + timedelta(days=1))
        exported = facts.list("u1", include_deleted=True)
        assert facts.put("u2", exported) == 1
        assert facts.put("u2", exported) == 0
        assert facts.list("u2", include_deleted=True) == exported


WRITER = textwrap.dedent("""
    import sys
    from datetime import datetime, timedelta, timezone
    from engine.backends.postgres import Database, PgSettings
    from engine.backends.postgres.facts import PgFacts
    conninfo, name, n, shared_id = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    db = Database(PgSettings(url=conninfo, max_connections=2), environ={}).open()
    facts = PgFacts(db, "c")
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for i in range(n):
        facts.add("u1", f"{name} fact {i}", at=at + timedelta(seconds=i), source_turns=[f"{name}-{i}"])
        facts.add("u1", f"both say {i}", at=at, source_turns=[f"{name}-{i}"])   # the same fact from two writers
        facts.update("u1", shared_id, f"{name} update {i}", at=at + timedelta(seconds=i))
    db.close()
""")


def test_two_writer_processes_lose_nothing_and_write_nothing_twice(pg):
    """Two real processes add, dedupe and update facts of one user at the same time."""
    db, _, info = pg
    n = 40
    shared, _ = PgFacts(db, "c").add("u1", "shared counter 0", at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, info.conninfo, name, str(n), shared.id], env=env,
                              stderr=subprocess.PIPE, text=True) for name in ("A", "B")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    facts = PgFacts(db, "c").list("u1", include_deleted=True)
    texts = [f.text for f in facts]
    for name in ("A", "B"):
        assert all(f"{name} fact {i}" in texts for i in range(n))
    assert sorted(t for t in texts if t.startswith("both say")) == sorted(f"both say {i}" for i in range(n))
    merged = {f.text: f.source_turns for f in facts}
    assert all(set(merged[f"both say {i}"]) == {f"A-{i}", f"B-{i}"} for i in range(n))
    counters = [f for f in facts if "update" in f.text or "counter" in f.text]
    assert [f.id for f in counters] == [shared.id]
    assert len(counters[0].history) == 2 * n  # every update kept in history, none overwritten
    assert len(facts) == 2 * n + n + 1
