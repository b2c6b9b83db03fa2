"""The worker's copy of a user's search index (engine/backends/postgres/mirror.py): it ranks
exactly as the files index does over the same turns, and follows adds, edits and forgets made
through any worker (both paths: pgvector and vectors in the table)."""

from __future__ import annotations

import pytest  # noqa: I001

pytest.importorskip("psycopg", reason="the Postgres backend needs kioku[postgres]")

from datetime import datetime, timedelta, timezone

import numpy as np

from engine.testing.fake_openai import hashed_embedding
from engine.paths import CharacterPaths
from engine.search.base import SearchRequest, TurnDoc
from engine.search.files import FileTurnIndex
from engine.backends.postgres.diary import PgDiaryTurns, StoredTurn
from engine.backends.postgres.mirror import PgSearchMirror, turn_vectors
from engine.backends.postgres.search import IndexedTurn, PgTurnSearch
from engine.backends.postgres.terms import PgTermVectors
from pg_server import pg, pg_db, pg_plain_server, pg_vector_server  # noqa: F401 - fixtures

TZ = timezone(timedelta(hours=8))
T0 = datetime(2024, 3, 1, 20, 0, tzinfo=TZ)
TURNS = [
    ("我昨天去了国家博物馆，看了恐龙化石", "听起来很有意思！你最喜欢哪一块？"),
    ("霸王龙的头骨", "那个头骨真的很震撼。"),
    ("今天晚上吃了重庆火锅，太辣了", "记得多喝水。"),
    ("我讨厌吃香菜", "好的，我记住了。"),
    ("I went hiking with my cats last weekend", "That sounds lovely. Where did you go?"),
    ("Up the hill behind the lake", "Cats on a hike, that is rare!"),
    ("我的猫叫阿黄，它很胖", "阿黄好可爱。"),
    ("", "早上好！今天有什么计划？"),
]
QUERIES = ["博物馆里看了什么", "火锅", "where did I go hiking", "我的猫叫什么", "香菜", "霸王龙"]


class Hashed:
    model_id = "test/hashed-384"
    dim = 384
    default_thresholds = {}

    def embed(self, texts, *, role="passage"):
        return np.array([hashed_embedding(t, self.dim) for t in texts], dtype=np.float32).reshape(-1, self.dim)


def _stored(i: int, user: str, assistant: str) -> StoredTurn:
    return StoredTurn(id=f"m{i}", at=T0 + timedelta(minutes=3 * i), user=user, assistant=assistant)


def _write(db, state, embedder, turns: list[StoredTurn], user: str = "u1", *, words: bool = True) -> PgTurnSearch:
    """What the diary's background job writes for new turns (`PgDiary._index`): rows, vectors,
    and (unless `words` is False, as before schema v4) the vectors of their new words."""
    diary, search = PgDiaryTurns(db, "mirror"), PgTurnSearch(db, "mirror", state=state)
    diary.append_many(user, turns)
    if words:
        PgTermVectors(db, embedder).ensure(text for t in turns for text in (t.user, t.assistant))
    vecs = turn_vectors(lambda t: embedder.embed(t), [(t.user, t.assistant) for t in turns], dim=embedder.dim)
    search.add(user, [IndexedTurn(t.id, t.at, t.user, t.assistant, v[2], v[:2]) for t, v in zip(turns, vecs)])
    return search


def _ids(hits) -> list[tuple[str, str]]:
    return [(h.turn_id, h.side) for h in hits]


def test_the_copy_ranks_as_the_files_index_does(pg, tmp_path):
    db, state, _ = pg
    embedder = Hashed()
    turns = [_stored(i, u, a) for i, (u, a) in enumerate(TURNS)]
    search = _write(db, state, embedder, turns)
    mirror = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "worker" / "mirror"))
    files = FileTurnIndex(tmp_path / "files", embedder)
    files.add([TurnDoc(t.id, int(t.at.timestamp()), t.user, t.assistant) for t in turns])
    # Term vectors (query expansion) are the copy's own: made in the background as it opens, or now.
    assert mirror.catch_up("u1") == files.catch_up_terms() == len(files.bm25.names)
    for q in QUERIES:
        for side in (None, "user"):
            request = SearchRequest(text=q, vector=embedder.embed([q])[0], k=10, side=side)
            got, want = mirror.search("u1", request), files.search(request)
            assert _ids(got) == _ids(want), q
            assert [round(h.score, 6) for h in got] == [round(h.score, 6) for h in want], q
    mirror.close()


def test_a_second_worker_sees_adds_edits_and_forgets(pg, tmp_path):
    db, state, _ = pg
    embedder = Hashed()
    search = _write(db, state, embedder, [_stored(i, u, a) for i, (u, a) in enumerate(TURNS[:4])], user="u2")
    a = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "a" / "mirror"))
    b = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "b" / "mirror"))

    def found(mirror, q: str) -> set[str]:
        return {h.turn_id for h in mirror.search("u2", SearchRequest(text=q, vector=embedder.embed([q])[0], k=10))}

    assert "m2" in found(a, "火锅") and "m2" in found(b, "火锅")
    diary = PgDiaryTurns(db, "mirror")
    diary.forget("u2", "m2")
    edited = diary.edit("u2", "m3", user="我最喜欢吃烤鱼")
    vecs = turn_vectors(lambda t: embedder.embed(t), [(edited.user, edited.assistant)], dim=embedder.dim)
    search.add("u2", [IndexedTurn("m3", edited.at, edited.user, edited.assistant, vecs[0][2], vecs[0][:2])])
    _write(db, state, embedder, [_stored(9, "我的猫叫阿黄", "阿黄好可爱。")], user="u2")
    for mirror in (a, b):
        assert "m2" not in found(mirror, "火锅")
        assert "m3" in found(mirror, "烤鱼") and "m3" not in found(mirror, "香菜")
        assert "m9" in found(mirror, "阿黄")
        # The new words got their vectors (query expansion) in the background: nothing is left to do.
        assert mirror.catch_up("u2") == 0
    a.close()
    # A restarted worker reopens its saved copy and only catches up.
    c = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "a" / "mirror"))
    assert "m9" in found(c, "阿黄") and "m2" not in found(c, "火锅")
    b.close()
    c.close()


def test_a_fresh_worker_ranks_as_a_warm_one(pg, tmp_path):
    """One ranking: the first search of a user on a worker with no copy catches its rows up and
    takes its words' vectors from the database (stored when the turns were written), so it ranks
    exactly as a warm worker does, from that first search."""
    db, state, _ = pg
    embedder = Hashed()
    search = _write(db, state, embedder, [_stored(i, u, a) for i, (u, a) in enumerate(TURNS)], user="u3")
    warm = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "warm" / "mirror"))
    warm.catch_up("u3")
    fresh = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "fresh" / "mirror"))
    for q in QUERIES:
        request = SearchRequest(text=q, vector=embedder.embed([q])[0], k=5)
        assert [(h.turn_id, h.side, round(h.score, 6)) for h in fresh.search("u3", request)] == \
            [(h.turn_id, h.side, round(h.score, 6)) for h in warm.search("u3", request)], q
    warm.close()
    fresh.close()


def test_words_written_before_they_had_vectors_are_embedded_once_and_shared(pg, tmp_path):
    """Turns written without their words' vectors (before schema v4): the first worker embeds them
    in the background and stores them, and the next fresh worker ranks as warm from its first search."""
    db, state, _ = pg
    embedder = Hashed()
    search = _write(db, state, embedder, [_stored(i, u, a) for i, (u, a) in enumerate(TURNS)], user="u4", words=False)
    first = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "first" / "mirror"))
    added = first.catch_up("u4")
    assert added > 0 and PgTermVectors(db, embedder).ensure(u for u, _ in TURNS) == 0
    later = PgSearchMirror(search, embedder, CharacterPaths(tmp_path / "later" / "mirror"))
    request = SearchRequest(text="霸王龙", vector=embedder.embed(["霸王龙"])[0], k=5)
    assert [(h.turn_id, round(h.score, 6)) for h in later.search("u4", request)] == \
        [(h.turn_id, round(h.score, 6)) for h in first.search("u4", request)]
    first.close()
    later.close()
