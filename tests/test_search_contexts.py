"""The rare terms' context vectors (engine/search/contexts.py): what the diary says with a word,
as the second query expansion, through the search index that owns them and its background thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine.search.base import SearchRequest, Tuning, TurnDoc
from engine.search.contexts import LOOKUP_LIMIT, MAX_LINES
from engine.search.expand import BackgroundTerms
from engine.search.files import FileTurnIndex
from engine.search.text import content_terms, terms

from demo_data import errands

FILLER = errands(300)


def _docs(lines: list[str], start: int = 0) -> list[TurnDoc]:
    return [TurnDoc(f"t{i}", 1_700_000_000 + 86_400 * i, line, "") for i, line in enumerate(lines, start=start)]


def _index(tmp_path, embedder, lines: list[str]) -> FileTurnIndex:
    ix = FileTurnIndex(tmp_path / "ix", embedder)
    ix.add(_docs(lines))
    ix.catch_up_terms()
    return ix


def _offered(ix: FileTurnIndex, embedder, text: str, m: int = 16) -> list[str]:
    vector = embedder.embed([text], role="query")[0]
    every_line = np.arange(2 * ix.rows)
    return [ix.bm25.names[i] for i in ix.contexts.nearest(ix, vector, set(content_terms(text)), m, every_line)]


def _expected(ix: FileTurnIndex, term: str) -> np.ndarray:
    """normalise(normalise(sum of the live lines' vectors) + the word's vector), from the index's files."""
    tid = ix.bm25.vocab[term]
    units = [int(u) for u in ix.bm25._postings(tid)[0] if ix.alive.view[int(u) >> 1]]
    lines = np.stack([ix.vectors.take(np.array([u >> 1]), kind=u & 1)[0] for u in units])
    mean = lines.sum(axis=0) / np.linalg.norm(lines.sum(axis=0))
    vec = mean + ix.terms.file.take(np.array([tid]), kind=0)[0]
    return vec / np.linalg.norm(vec)


def test_the_context_expansion_ranks_up_a_line_the_word_vectors_do_not_reach(tmp_path, embedder):
    """"What hobby did my grandfather teach me?" is near "Grandpa taught me to whittle ... cedar";
    the words that line shares with another ("whittl", "cedar") are not near the question by
    their own vectors, but their lines are: the second line comes with them."""
    taught = "Grandpa taught me to whittle small birds from cedar when I was eight."
    sparrow = "I finished another cedar sparrow this weekend; whittling calms me down."
    ix = _index(tmp_path, embedder, FILLER[:100] + [taught] + FILLER[100:200] + [sparrow] + FILLER[200:])
    question = "What hobby did my grandfather teach me?"
    vector = embedder.embed([question], role="query")[0]
    words = [ix.bm25.names[i] for i in ix.terms.nearest(vector, ix.bm25.names, set(content_terms(question)), 16)]
    assert terms("cedar")[0] not in words and terms("whittling")[0] not in words
    assert {terms("cedar")[0], terms("whittling")[0]} <= set(_offered(ix, embedder, question))
    request = SearchRequest(text=question, vector=vector, k=3, start=1_690_000_000, end=1_800_000_000, only_range=True)

    def shown(weight: float) -> list[str]:
        ix.tuning = Tuning(context_weight=weight)
        return [h.text for h in ix.search(request)]

    assert taught in shown(1.0) and sparrow in shown(1.0)
    assert sparrow not in shown(0.0)  # the errands crowd it out


def test_a_terms_context_vector_is_its_lines_mean_plus_its_word(tmp_path, embedder):
    ix = _index(tmp_path, embedder, ["We went camping by the lake.", "The lake was cold but the camping was fun.",
                                     "I signed up for a pottery class.", "My cat knocked the plant over."])
    ix.contexts.refresh(ix)
    for word in ("lake", "camping", "pottery", "cat"):
        term = terms(word)[0]
        got = ix.contexts.matrix.view[ix.contexts.row_of.view[ix.bm25.vocab[term]]]
        assert np.allclose(got, _expected(ix, term), atol=2e-3), word
    # A stop word has no vector to be near to.
    assert ix.contexts.row_of.view[ix.bm25.vocab["the"]] == -1


@pytest.mark.parametrize("lines, offered", [(1, True), (MAX_LINES, True), (MAX_LINES + 1, False)])
def test_a_word_said_in_more_than_max_lines_is_not_offered(tmp_path, embedder, lines, offered):
    zebra = [f"A zebra walked past the fence on day {i}." for i in range(lines)]
    ix = _index(tmp_path, embedder, FILLER[:60] + zebra)
    assert (terms("zebra")[0] in _offered(ix, embedder, "Which striped animals did I see?")) == offered


def test_a_new_line_remakes_its_words_vectors_and_a_removed_line_unmakes_them(tmp_path, embedder):
    ix = _index(tmp_path, embedder, FILLER[:40] + ["Grandpa taught me to whittle small birds from cedar."])
    cedar = terms("cedar")[0]
    _offered(ix, embedder, "grandfather")
    before = ix.contexts.matrix.view[ix.contexts.row_of.view[ix.bm25.vocab[cedar]]].copy()
    ix.add(_docs(["The cedar chest in the attic smells of my grandmother."], start=41))
    ix.catch_up_terms()  # the new words' vectors (the diary's worker does this after a turn)
    assert ix.contexts.behind(ix) == 0
    after = ix.contexts.matrix.view[ix.contexts.row_of.view[ix.bm25.vocab[cedar]]]
    assert not np.allclose(before, after) and np.allclose(after, _expected(ix, cedar), atol=2e-3)
    ix.remove(["t40", "t41"])
    assert cedar not in _offered(ix, embedder, "What is made of cedar wood?", m=40)
    assert ix.contexts.behind(ix) == 0  # the lookup remade what was left (a small index)


def test_an_opened_index_makes_them_in_the_background_and_searches_meanwhile(tmp_path, embedder):
    lines = [f"{FILLER[i]} Also word{i} and term{i} came up." for i in range(300)]
    ix = _index(tmp_path, embedder, lines)
    ix.save(force=True)
    again = FileTurnIndex(tmp_path / "ix", embedder)
    assert again.contexts.rows == 0 and again.contexts.behind(again) > LOOKUP_LIMIT
    lock = threading.RLock()
    background = BackgroundTerms(again, lock, "t")
    with lock:
        background.start()
        assert background.running
        # A search while it waits for the lock uses what the lookup itself makes, a bounded few.
        assert again.search(SearchRequest(text="word7", vector=embedder.embed(["word7"], role="query")[0], k=3))
        assert 0 < again.contexts.rows <= LOOKUP_LIMIT
    assert background.wait(60)
    assert again.contexts.behind(again) == 0 and again.contexts.rows == ix.contexts.rows


def test_a_lookup_weighs_only_the_words_of_its_candidate_lines(tmp_path, embedder):
    ix = _index(tmp_path, embedder, ["Grandpa taught me to whittle birds from cedar.", "We went kayaking on the river."])
    vector = embedder.embed(["outdoor water sports"], role="query")[0]
    names = ix.bm25.names

    def offered(rows: list[int]) -> set[str]:
        units = np.array(sorted(2 * r + s for r in rows for s in (0, 1)))
        return {names[i] for i in ix.contexts.nearest(ix, vector, set(), 16, units)}

    assert terms("kayaking")[0] in offered([1]) and terms("cedar")[0] not in offered([1])
    assert terms("cedar")[0] in offered([0]) and terms("kayaking")[0] not in offered([0])


def test_the_line_pairs_stay_right_through_remakes_and_their_compaction(tmp_path, embedder, monkeypatch):
    import engine.search.contexts as contexts

    monkeypatch.setattr(contexts, "GATHER", 4)  # compact the pairs after a few dropped ones
    compactions = []
    real = contexts.TermContexts._compact_pairs
    monkeypatch.setattr(contexts.TermContexts, "_compact_pairs", lambda self: (compactions.append(1), real(self)))
    ix = _index(tmp_path, embedder, FILLER[:5])
    for i in range(12):  # each line remakes "zebra" (and the words it shares with earlier lines)
        ix.add(_docs([f"A zebra and a giraffe on day {i}."], start=100 + i))
        ix.catch_up_terms()
    c = ix.contexts
    assert compactions and c._dropped <= max(4, len(c.pair_unit) // 2)
    _assert_pairs_are_the_live_lines(ix)


def _assert_pairs_are_the_live_lines(ix: FileTurnIndex) -> None:
    """Every made term's pairs are exactly its live lines; no pair is outside a term's span."""
    c = ix.contexts
    made = np.flatnonzero(c.made_at.view >= 0)
    for tid in made[c.row_of.view[made] >= 0].tolist():
        a, b = c.span.view[tid]
        assert set(c.pair_term.view[a:b].tolist()) <= {tid}
        live = [int(u) for u in ix.bm25._postings(tid)[0] if ix.alive.view[int(u) >> 1]]
        assert sorted(c.pair_unit.view[a:b].tolist()) == sorted(live), ix.bm25.names[tid]
    assert int((c.pair_term.view >= 0).sum()) == sum(int(b - a) for a, b in c.span.view.tolist())


def test_removing_a_line_remakes_only_its_words_and_a_compaction_keeps_the_rest(tmp_path, embedder):
    lines = [f"{line} Then word{i} and term{i} came up." for i, line in enumerate(errands(40))]
    ix = _index(tmp_path, embedder, lines)
    c = ix.contexts
    kept_words = [ix.bm25.vocab[terms(f"word{i}")[0]] for i in range(10, 40)]
    before = c.matrix.view[c.row_of.view[kept_words]].copy()
    gone_word = ix.bm25.vocab[terms("word3")[0]]
    ix.remove(["t3"])
    # Only the removed line's rare words wait to be remade, and are not offered meanwhile.
    assert 0 < c.behind(ix) <= len(set(terms(lines[3])))
    assert gone_word not in c.nearest(ix, c.matrix.view[c.row_of.view[gone_word]], set(), 40, np.arange(2 * ix.rows))
    ix.remove([f"t{i}" for i in range(4, 10)])
    ix.compact()  # renumbers every line
    assert ix.rows == 33 and np.array_equal(c.matrix.view[c.row_of.view[kept_words]], before)
    c.refresh(ix)
    _assert_pairs_are_the_live_lines(ix)
    assert gone_word not in c.nearest(ix, embedder.embed(["word3"], role="query")[0], set(), 40, np.arange(2 * ix.rows))
