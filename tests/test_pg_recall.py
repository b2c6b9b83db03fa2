"""The same turns recorded through the files and the Postgres backends give the same diary lines for
every kind of question (through `build_prompt`, real embedder, real servers): the Postgres store
must follow the files diary's flow exactly, including what it asks the orchestrator to embed.
(A drift here once cost Postgres 5 points of multi-hop recall on LoCoMo while every unit test passed.)"""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")  # before the imports below

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import copy_demo
from pg_server import fresh_database, pg_vector_server  # noqa: F401 - fixture

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 8, 20, 20, 0, tzinfo=TZ)

TOPICS = [
    ("小月，我昨天去重庆吃了火锅，辣得我直冒汗。", "旅人真勇敢！重庆火锅可是出了名的辣。"),
    ("My cat Mochi knocked the plant over again this morning.", "Mochi really loves that plant, doesn't she?"),
    ("我在准备六月的考试，每天背单词到半夜。", "别太累了，记得早点休息。"),
    ("Went hiking on the ridge trail with my sister, saw two deer.", "Two deer! That sounds like a lovely hike."),
    ("最近在读《活着》，余华写得很沉重。", "那本书很有力量，读完可以跟我聊聊。"),
    ("小月你喜欢下雨天吗？今天一直在下雨。", "我喜欢听雨声，旅人呢？"),
    ("I started piano lessons, my teacher is very patient.", "That is wonderful, what piece are you learning?"),
    ("周末和朋友去看了电影，片名叫《流浪地球》。", "好看吗？特效一定很震撼。"),
]
QUESTIONS = [
    "旅人之前说去哪里吃了火锅？",  # names the user: the diary's vector leaves names out
    "小月还记得我的猫叫什么吗？",  # names the character
    "What is my cat called?",
    "上个月我们聊了什么？",  # a past range
    "七月我在读什么书？",  # a content question with a range
    "Did I go hiking with anyone?",
    "今天天气真好",  # small talk: nothing on either
    "上次我们聊到哪了？",  # the previous sitting: found in the diary, no calendar time
]


def _config(data, storage=None):
    raw = {"data_dir": str(data), "core": {"enabled": False}, "world_book": {"enabled": False},
           "retrieval": {"budget_tokens": 900, "caps": {"diary": 700}}}
    if storage:
        raw["storage"] = storage
    return load_config(overrides=raw, env={})


@pytest.fixture(scope="module")
def both(tmp_path_factory, embedder, pg_vector_server):  # noqa: F811 - the fixture imported above
    import psycopg

    from engine.backends.postgres import upgrade

    conninfo = fresh_database(pg_vector_server, vector=True)
    with psycopg.connect(conninfo) as conn:
        upgrade(conn, dim=embedder.dim)
    orchs = []
    for storage in (None, {"backend": "postgres", "url": conninfo}):
        data = tmp_path_factory.mktemp("pg" if storage else "files")
        copy_demo(data)
        orch = MemoryOrchestrator.from_config("xiaoyue", config=_config(data, storage), embedder=embedder)
        for i in range(48):
            user, reply = TOPICS[i % len(TOPICS)]
            at = datetime(2026, 7, 1, 20, 0, tzinfo=TZ) + timedelta(days=i // 2, minutes=7 * i)
            orch.record_turn(f"{user}（{i}）", reply, user_id="amy", at=at, turn_id=f"t{i:03d}")
        assert orch.flush(300)
        # Term vectors (query expansion) are each worker's own on Postgres, made in the background
        # as its copy opens; here both indexes are complete before the first question.
        orch.store("diary").build_search_index("amy", progress=False)
        orchs.append(orch)
    yield orchs
    for orch in orchs:
        orch.close()
    from engine.backends.postgres.backend import close_backends

    close_backends()


@pytest.mark.parametrize("question", QUESTIONS)
def test_files_and_postgres_give_the_same_diary_lines(both, question):
    files, pg = both
    got = [[(h.text, h.reason) for h in orch.build_prompt(question, user_id="amy", now=NOW).hits if h.store == "diary"]
           for orch in (files, pg)]
    assert got[1] == got[0]
    if question != "今天天气真好":
        assert got[0], "the question should find something (else the comparison says little)"


def test_files_and_postgres_read_many_turns_alike(both):
    """The inspector's search reads the found turns in one call (`admin.diary_turns`): the same
    entries, in the order asked, on both backends."""
    files, pg = both
    asked = ["t005", "t001", "no-such-turn", "t047"]
    got = [[(e.id, e.user, e.assistant, e.at) for e in o.admin.diary_turns("amy", asked)] for o in (files, pg)]
    assert [g[0] for g in got[0]] == ["t005", "t001", "t047"]
    assert got[0] == got[1]


def test_an_edited_turn_is_dated_again_alike(both):
    """Editing a turn's text re-resolves its dates against the turn's own time, on both backends."""
    at = datetime(2026, 8, 10, 21, 0, tzinfo=TZ)
    for orch in both:
        orch.record_turn("今天好累", "早点休息吧。", user_id="amy", at=at, turn_id="edit-1")
        assert orch.flush(60)
    edited = [o.admin.edit_turn("amy", "edit-1", user="昨天加班到很晚，周末要去爬山") for o in both]
    read = [o.admin.diary_turns("amy", ["edit-1"])[0] for o in both]
    expected = {"昨天": "2026-08-09", "周末": "2026-08-15–2026-08-16"}
    assert [dict(e.dates) for e in edited + read] == [expected] * 4


def test_reindex_dates_dates_a_stale_turn_again_alike(both):
    """A turn whose stored dates are out of date (as an earlier version wrote them) is dated again by
    `admin.redate` (`kioku reindex --dates`) on both backends, and only that turn."""
    at = datetime(2026, 8, 11, 21, 0, tzinfo=TZ)
    for orch in both:
        orch.record_turn("昨天加班到很晚", "辛苦了，早点睡。", user_id="amy", at=at, turn_id="stale-1")
        assert orch.flush(60)
    files, pg = both
    day = files.paths.user("amy").diary_dir / "2026-08-11.yaml"
    day.write_text(re.sub(r"(?m)^  dates: .*\n", "", day.read_text(encoding="utf-8")), encoding="utf-8")
    files.store("diary").backend.user("amy").refresh(force=True)
    with pg.store("diary").backend.turns.db.tx() as conn:
        conn.execute("UPDATE diary_turns SET resolved_dates = '[]'::jsonb WHERE turn_id = 'stale-1'")
    assert [dict(o.admin.diary_turns("amy", ["stale-1"])[0].dates) for o in both] == [{}, {}]
    assert [o.admin.redate("amy") for o in both] == [1, 1]
    assert [dict(o.admin.diary_turns("amy", ["stale-1"])[0].dates) for o in both] == [{"昨天": "2026-08-10"}] * 2
    assert [o.admin.redate("amy") for o in both] == [0, 0]
