"""Query expansion by the diary's own words (engine/search/expand.py): a vector per vocabulary
term, kept with the search index, and BM25 over the terms nearest a query."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from engine.adapters.embed_cache import CachedEmbedder
from engine.orchestrator import MemoryOrchestrator
from engine.search.base import SearchRequest, Tuning, TurnDoc
from engine.search.files import FileTurnIndex
from engine.search.lexical import Bm25
from engine.search.text import is_content, terms
from engine.testing.serve import copy_demo

from demo_data import diary_only_config, errands

TZ = ZoneInfo("Europe/London")
LINES = [
    "We went camping by the lake and slept in a tent.",
    "I signed up for a pottery class on Thursdays.",
    "The quarterly report is due next week, my boss keeps asking.",
    "My cat knocked the plant over again.",
    "Painting watercolours on Sunday mornings relaxes me.",
    "I had ramen for lunch, the broth was great.",
    "下周要交季度报告，老板天天催。",
    "周末去爬山了，山顶的风景很美。",
]


def _bm25(texts: list[str]) -> Bm25:
    bm = Bm25()
    for i, text in enumerate(texts):
        bm.add(2 * i, terms(text))
        bm.add(2 * i + 1, [])
    return bm


@pytest.mark.parametrize("query", ["camping tent lake", "report boss", "季度 报告", "ramen", "cat plant painting", "unknownword"])
@pytest.mark.parametrize("merged", [False, True])
@pytest.mark.parametrize("dead", [(), (2,), (0, 6)])
def test_bm25_of_a_few_units_is_the_score_of_the_full_pass(query, merged, dead):
    """`score_units` (the expansion's BM25 over candidate halves) gives each unit what `score`
    gives it, over postings still in the delta or merged, with removed rows masked."""
    bm = _bm25(LINES[:4])
    if merged:
        bm.merge()
    for i, text in enumerate(LINES[4:], start=4):  # these stay in the delta
        bm.add(2 * i, terms(text))
        bm.add(2 * i + 1, [])
    alive = np.ones(len(LINES), dtype=bool)
    alive[list(dead)] = False
    q = terms(query)
    full = bm.score(q, set(q), alive)
    units = np.arange(2 * len(LINES))
    ids = [bm.vocab[t] for t in dict.fromkeys(q) if t in bm.vocab]
    got = bm.score_units(ids, units, alive)
    want = np.zeros(units.size, dtype=np.float32)
    want[full.units] = full.unit_scores
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert all(got[2 * d] == 0 for d in dead)


def _docs(lines: list[str], start: int = 0) -> list[TurnDoc]:
    return [TurnDoc(f"t{i}", 1_700_000_000 + 60 * i, line, "") for i, line in enumerate(lines, start=start)]


def test_terms_have_vectors_aligned_with_the_vocabulary_and_survive_a_reopen(tmp_path, embedder):
    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add(_docs(LINES))
    assert ix.terms.rows == 0 and ix.terms_behind()[1] == ix.bm25.names
    assert ix.catch_up_terms() == len(ix.bm25.names)
    assert ix.terms_behind()[1] == []
    ix.save(force=True)
    again = FileTurnIndex(tmp_path / "ix", embedder)
    assert again.terms.rows == len(again.bm25.names) == len(ix.bm25.names)
    vectors = again.terms.file.take(np.arange(again.terms.rows), kind=0)
    for name, vec in zip(again.bm25.names, vectors):
        # A stop word is never offered: it has no vector to be near to.
        assert (np.linalg.norm(vec) > 0.9) == is_content(name), name
    stem = terms("camping")[0]
    near = again.terms.nearest(embedder.embed(["camping"], role="query")[0], again.bm25.names, set(), 3)
    assert stem in [again.bm25.names[i] for i in near]
    # The query's own words are not expansion: they are matched already.
    skipped = again.terms.nearest(embedder.embed(["camping"], role="query")[0], again.bm25.names, {stem}, 3)
    assert stem not in [again.bm25.names[i] for i in skipped] and len(skipped) == 3


def test_a_term_file_longer_than_the_saved_vocabulary_is_cut_back(tmp_path, embedder):
    """A crash after new terms' vectors were appended but before the index was saved: the saved
    vocabulary is a prefix of the lost one, so its vectors are the file's first rows."""
    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add(_docs(LINES[:4]))
    ix.catch_up_terms()
    ix.save(force=True)
    saved = list(ix.bm25.names)
    ix.add(_docs(LINES[4:], start=4))
    ix.catch_up_terms()
    assert ix.terms.rows > len(saved)  # on disk, with no saved vocabulary to match them yet
    again = FileTurnIndex(tmp_path / "ix", embedder)
    assert again.bm25.names == saved and again.terms.rows == len(saved)
    assert (tmp_path / "ix" / "terms.f16").stat().st_size == len(saved) * embedder.dim * 2
    # The terms of the lost rows come back with those rows, and get their vectors again.
    again.add(_docs(LINES[4:], start=4))
    assert again.catch_up_terms() == len(again.bm25.names) - len(saved)


def test_a_vector_for_a_term_someone_else_added_first_is_dropped(tmp_path, embedder):
    from engine.search.expand import embed_terms

    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add(_docs(LINES[:2]))
    first, names = ix.terms_behind()
    late = embed_terms(embedder, names)
    ix.catch_up_terms()
    assert not ix.add_term_vectors(first, late)
    assert ix.terms.rows == len(ix.bm25.names)


def _orchestrator(data_dir, embedder) -> MemoryOrchestrator:
    cached = CachedEmbedder(embedder, data_dir / "vectors.sqlite3")
    return MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(data_dir), embedder=cached)


def test_recorded_turns_give_every_new_word_a_vector_and_an_old_index_catches_up(tmp_path, embedder):
    data_dir = tmp_path / "data"
    copy_demo(data_dir)
    at = datetime(2026, 5, 1, 20, 0, tzinfo=TZ)
    with _orchestrator(data_dir, embedder) as orch:
        for i, line in enumerate(LINES):
            orch.record_turn(line, "好的" if i % 2 else "Nice!", user_id="amy", at=at + timedelta(minutes=i), turn_id=f"t{i}")
        assert orch.flush(300) and not orch.background_errors
        search = orch.store("diary").backend.user("amy").search
        assert search.terms_behind()[1] == [] and search.terms.rows == len(search.bm25.names) > 20
        folder = search.folder
    # As an index made before term vectors were kept: opening it catches them up off the caller's thread.
    for name in ("terms.f16", "terms.faiss"):
        (folder / name).unlink()
    with _orchestrator(data_dir, embedder) as orch:
        diary = orch.store("diary").backend.user("amy")
        assert diary.terms.wait(120)
        assert diary.search.terms_behind()[1] == [] and diary.search.terms.rows == len(diary.search.bm25.names)
    assert (folder / "terms.faiss").is_file()


def test_expansion_ranks_up_a_line_that_shares_no_word_with_the_question(tmp_path, embedder):
    """"What outdoor activities do I do with Tom?" shares no word with "We pitched a tent by the
    lake": among a long stretch of errands asked about as a range (ranked by relevance: it does
    not fit), the diary's words nearest the question ("hike", "kayak", "tent", "lake") lift it."""
    filler = [line + (" Tom said so too." if i % 10 == 0 else "") for i, line in enumerate(errands(300))]
    tent = "We pitched a tent by the lake and hiked up the ridge at dawn."
    kayak = "Kayaking down the river with Tom was the best part of the trip."
    lines = filler[:150] + [tent] + filler[150:] + [kayak]
    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add([TurnDoc(f"t{i}", 1_700_000_000 + 86_400 * i, line, "") for i, line in enumerate(lines)])
    ix.catch_up_terms()
    question = "What outdoor activities do I do with Tom?"
    request = SearchRequest(text=question, vector=embedder.embed([question], role="query")[0], k=6,
                            start=1_690_000_000, end=1_800_000_000, only_range=True)

    def shown(weight: float) -> list[str]:
        ix.tuning = Tuning(expansion_weight=weight)
        return [h.text for h in ix.search(request)]

    assert tent in shown(2.0) and kayak in shown(2.0)
    assert tent not in shown(0.0)  # without expansion the errands crowd it out


def test_closing_while_terms_are_caught_up_waits_for_the_embedding_under_way(tmp_path, embedder, monkeypatch):
    """The orchestrator closes its embedder (and its cache database) after the stores: the term
    thread must be done with it by then, not fail in the background on a closed database."""
    import threading

    failures = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    data_dir = tmp_path / "data"
    copy_demo(data_dir)
    at = datetime(2026, 5, 1, 20, 0, tzinfo=TZ)
    with _orchestrator(data_dir, embedder) as orch:
        for i, line in enumerate(LINES):
            orch.record_turn(line, "Nice!", user_id="amy", at=at + timedelta(minutes=i), turn_id=f"t{i}")
        assert orch.flush(300)
        folder = orch.store("diary").backend.user("amy").search.folder
    for name in ("terms.f16", "terms.faiss"):
        (folder / name).unlink()
    cached = CachedEmbedder(embedder, tmp_path / "fresh-cache.sqlite3")  # misses: it writes to its database
    with MemoryOrchestrator.from_config("xiaoyue", config=diary_only_config(data_dir), embedder=cached) as orch:
        terms = orch.store("diary").backend.user("amy").terms
        assert terms.running  # closed at once, while it embeds
    still_running = terms.running
    terms.wait(60)
    assert failures == [] and not still_running
