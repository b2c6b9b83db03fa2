"""Diary turns and their search index in a real PostgreSQL, with pgvector and without it."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")  # before the imports below

from datetime import datetime, timedelta, timezone

import numpy as np

from engine.backends.postgres.diary import PgDiaryTurns, StoredTurn
from engine.backends.postgres.owners import NaiveTimeError
from engine.backends.postgres.search import IndexedTurn, PgTurnSearch
from pg_server import pg, pg_db, pg_plain_server, pg_vector_server  # noqa: E402, F401 - fixtures

CST = timezone(timedelta(hours=8))
T0 = datetime(2026, 5, 1, 21, 0, tzinfo=CST)


def turn(i: int, user: str = "u", assistant: str = "a", **kw) -> StoredTurn:
    return StoredTurn(id=f"t{i:04d}", at=T0 + timedelta(hours=i), user=f"{user} {i}" if user == "u" else user,
                      assistant=assistant, **kw)


def unit(rng: np.random.Generator, dim: int = 384) -> np.ndarray:
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class TestDiaryTurns:
    def test_append_is_idempotent_by_turn_id_and_keeps_the_written_offset(self, pg):
        db, _, _ = pg
        diary = PgDiaryTurns(db, "小月")
        t = turn(1, resolved_dates=({"text": "昨天", "start": "2026-04-30", "end": "2026-05-01"},))
        assert diary.append("张三", t) is True
        assert diary.append("张三", t) is False
        assert diary.count("张三") == 1
        back = diary.get("张三", t.id)
        assert back == t
        assert back.at.isoformat() == "2026-05-01T22:00:00+08:00"
        assert back.local_day.isoformat() == "2026-05-01"

    def test_range_is_half_open_chronological_and_per_user(self, pg):
        db, _, _ = pg
        diary = PgDiaryTurns(db, "c")
        assert diary.append_many("alice", [turn(i) for i in range(48)]) == 48
        diary.append_many("bob", [turn(i, user="bob's turn") for i in range(48)])
        got = diary.range("alice", T0 + timedelta(hours=10), T0 + timedelta(hours=20))
        assert [t.id for t in got] == [f"t{i:04d}" for i in range(10, 20)]
        assert all(t.user.startswith("u ") for t in got)
        assert diary.range("nobody", T0, T0 + timedelta(days=9)) == []

    def test_range_is_an_index_range_scan(self, pg):
        db, _, _ = pg
        diary = PgDiaryTurns(db, "c")
        diary.append_many("alice", [turn(i) for i in range(300)])
        with db.tx() as conn:
            conn.execute("ANALYZE diary_turns")
        plan = diary.explain_range("alice", T0 + timedelta(hours=10), T0 + timedelta(hours=20))
        # An index scan or a bitmap index scan, bounded by owner and time in the index condition.
        assert "Index Scan" in plan and "diary_turns_by_time" in plan, plan
        cond = next(line for line in plan.splitlines() if "Index Cond" in line)
        assert "owner_id" in cond and "at >=" in cond and "at <" in cond
        assert "Seq Scan" not in plan

    def test_forget_hides_the_turn_and_a_replay_does_not_bring_it_back(self, pg):
        db, _, _ = pg
        diary = PgDiaryTurns(db, "c")
        t = turn(1)
        diary.append("u1", t)
        assert diary.forget("u1", t.id) == 1
        assert diary.forget("u1", t.id) == 0
        assert diary.append("u1", t) is False
        assert diary.range("u1", T0, T0 + timedelta(days=1)) == []
        assert diary.get("u1", t.id).deleted is True

    def test_edit_changes_texts_and_tag(self, pg):
        db, _, _ = pg
        diary = PgDiaryTurns(db, "c")
        diary.append("u1", turn(1))
        edited = diary.edit("u1", "t0001", assistant="new reply", tag="吃火锅")
        assert (edited.assistant, edited.tag, edited.user) == ("new reply", "吃火锅", "u 1")
        assert diary.edit("u1", "missing", tag="x") is None

    def test_a_naive_time_is_refused(self, pg):
        db, _, _ = pg
        with pytest.raises(NaiveTimeError, match="timezone-aware"):
            PgDiaryTurns(db, "c").append("u1", StoredTurn(id="x", at=datetime(2026, 1, 1), user="a", assistant="b"))

    @pytest.mark.parametrize("bad", ["../etc", "a/b", ""], ids=["dotdot", "slash", "empty"])
    def test_user_ids_follow_the_files_rules(self, pg, bad):
        db, _, _ = pg
        with pytest.raises(ValueError, match="not allowed|must be"):
            PgDiaryTurns(db, "c").append(bad, turn(1))


ZH_TURNS = [
    ("我昨天去了国家博物馆，看了恐龙化石", "听起来很有意思！"),
    ("今天晚上吃了重庆火锅，太辣了", "记得多喝水。"),
    ("我讨厌吃香菜", "好的，我记住了。"),
    ("I went hiking with my cats last weekend", "That sounds lovely."),
    ("我的猫叫阿黄，它很胖", "阿黄好可爱。"),
]


class TestTurnSearch:
    def _index(self, db, state, user="u1", rng=None):
        rng = rng or np.random.default_rng(0)
        diary, search = PgDiaryTurns(db, "c"), PgTurnSearch(db, "c", state=state)
        vecs = {}
        for i, (u, a) in enumerate(ZH_TURNS):
            t = StoredTurn(id=f"z{i}", at=T0 + timedelta(days=i), user=u, assistant=a)
            diary.append(user, t)
            vecs[t.id] = unit(rng)
            search.add(user, [IndexedTurn(t.id, t.at, u, a, vecs[t.id], np.stack([vecs[t.id]] * 2))])
        return diary, search, vecs

    @pytest.mark.parametrize(
        ("query", "expected"),
        [("博物馆", "z0"), ("火锅好吃吗", "z1"), ("香菜", "z2"), ("hiking", "z3"), ("阿黄最近怎么样", "z4"),
         ("恐龙", "z0"), ("cat", "z3")],
        ids=["museum-subword", "hotpot", "coriander", "hiking-en", "cat-name", "dinosaur", "cat-stemmed"],
    )
    def test_lexical_finds_chinese_words_inside_sentences(self, pg, query, expected):
        db, state, _ = pg
        _, search, _ = self._index(db, state)
        hits = search.lexical_search("u1", query, k=3)
        assert hits and hits[0][0] == expected, hits  # "cat" finds "cats": the english config stems

    def test_vector_search_is_exact_per_user_and_respects_the_time_range(self, pg):
        db, state, _ = pg
        _, search, vecs = self._index(db, state, user="u1")
        self._index(db, state, user="u2", rng=np.random.default_rng(1))
        for tid, v in vecs.items():
            got = search.vector_search("u1", v, k=1)
            assert got[0][0] == tid and got[0][1] == pytest.approx(1.0, abs=1e-5)
        ranged = search.vector_search("u1", vecs["z0"], k=5, start=T0 + timedelta(days=2), end=T0 + timedelta(days=4))
        assert sorted(t for t, _ in ranged) == ["z2", "z3"]

    def test_hybrid_fuses_both_sides_and_reports_ranks(self, pg):
        db, state, _ = pg
        _, search, vecs = self._index(db, state)
        hits = search.search("u1", "香菜", vecs["z4"], k=3)
        by_id = {h.turn_id: h for h in hits}
        assert by_id["z2"].lexical_rank == 1 and by_id["z4"].vector_rank == 1
        assert hits[0].turn_id in {"z2", "z4"}

    def test_forget_and_edit_take_a_turn_out_of_the_index_everywhere(self, pg):
        db, state, _ = pg
        diary, search, vecs = self._index(db, state)
        assert search.vector_search("u1", vecs["z2"], k=1)[0][0] == "z2"  # warms a worker cache
        diary.forget("u1", "z2")
        assert "z2" not in [t for t, _ in search.vector_search("u1", vecs["z2"], k=5)]
        assert search.lexical_search("u1", "香菜") == []
        diary.edit("u1", "z1", user="今天晚上吃了烤鱼")
        assert search.lexical_search("u1", "火锅") == []
        assert search.missing("u1") == ["z1"]
        search.add("u1", [IndexedTurn("z1", T0 + timedelta(days=1), "今天晚上吃了烤鱼", "记得多喝水。", vecs["z1"],
                                      np.stack([vecs["z1"]] * 2))])
        assert search.lexical_search("u1", "烤鱼")[0][0] == "z1"
        assert search.vector_search("u1", vecs["z1"], k=1)[0][0] == "z1"
        # Indexing a forgotten turn again is refused (it is not in the diary any more).
        assert search.add("u1", [IndexedTurn("z2", T0, "我讨厌吃香菜", "好的", vecs["z2"])]) == 0

    def test_index_large_users_builds_only_past_the_threshold_and_the_search_reads_only_that_user(self, pg):
        """What `kioku db index` (and the diary's record job, per user) runs: users past
        `hnsw_min_rows` get their own partial HNSW index; their vector search is an index scan of
        it (no filter: no other user's row is read), a small user keeps an exact scan of theirs."""
        db, state, _ = pg
        rng = np.random.default_rng(5)
        diary, search = PgDiaryTurns(db, "sched"), PgTurnSearch(db, "sched", state=state, hnsw_min_rows=150)
        for user, n in (("large", 180), ("other-large", 160), ("small", 20)):
            turns = [turn(i) for i in range(n)]
            diary.append_many(user, turns)
            search.add(user, [IndexedTurn(t.id, t.at, t.user, t.assistant, unit(rng)) for t in turns])
        built = search.index_large_users()
        if state.vector_mode != "pgvector":
            assert built == []
            return
        assert len(built) == 2 and search.index_large_users() == []
        q = unit(rng)
        plan = search.explain_vector("large", q, analyze=True)
        assert search.ensure_owner_index("large") in plan and "Index Scan" in plan, plan
        assert "Seq Scan" not in plan and "Rows Removed by Filter" not in plan, plan
        small = search.explain_vector("small", q, analyze=True)
        assert "hnsw" not in small.lower() and "actual rows=20" in small, small

    def test_a_user_past_the_threshold_gets_an_hnsw_index_and_uses_it(self, pg):
        db, state, _ = pg
        rng = np.random.default_rng(3)
        diary, search = PgDiaryTurns(db, "c"), PgTurnSearch(db, "c", state=state, hnsw_min_rows=200)
        turns = [turn(i) for i in range(250)]
        diary.append_many("big", turns)
        vecs = [unit(rng) for _ in turns]
        search.add("big", [IndexedTurn(t.id, t.at, t.user, t.assistant, v) for t, v in zip(turns, vecs)])
        name = search.ensure_owner_index("big")
        if not state.vector_mode == "pgvector":
            assert name is None
            return
        assert name is not None and search.ensure_owner_index("big") == name
        plan = search.explain_vector("big", vecs[7])
        assert name in plan, plan
        assert search.vector_search("big", vecs[7], k=1)[0][0] == turns[7].id
        # Another user still gets an exact scan of their own rows.
        assert "hnsw" not in search.explain_vector("u-small", vecs[0]).lower()
