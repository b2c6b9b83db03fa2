"""A search that names a time range (engine/search/rank.py), on a real index and the packaged
embedder: the range's best turns lead, the other days' follow, from one search; a range much
longer than the hits asked for is narrowed to its nearest turns first, and still answers."""

from __future__ import annotations

import pytest

from engine.search.base import SearchRequest, TurnDoc, line_tokens
from engine.search.files import FileTurnIndex
from engine.search.rank import RANGE_PER_HIT

from demo_data import errands

DAY = 86_400
T0 = 1_700_000_000
IN_RANGE = "My sister's wedding cake was lemon with raspberry filling."
ELSEWHERE = "The cake at Tom's birthday party was chocolate."
QUESTION = "What flavour was the cake?"


@pytest.fixture(scope="module")
def index(tmp_path_factory, embedder):
    lines = errands(400)
    lines[230] = IN_RANGE  # inside days 100-299
    lines[20] = ELSEWHERE
    ix = FileTurnIndex(tmp_path_factory.mktemp("range") / "ix", embedder)
    ix.add([TurnDoc(f"t{i}", T0 + DAY * i, line, "") for i, line in enumerate(lines)])
    ix.catch_up_terms()
    return ix


def _search(ix, embedder, **range_args):
    vector = embedder.embed([QUESTION], role="query")[0]
    return ix.search(SearchRequest(text=QUESTION, vector=vector, start=T0 + 100 * DAY, end=T0 + 300 * DAY, **range_args))


@pytest.mark.parametrize("range_k", [3, 8, None])
def test_the_ranges_best_turns_lead_and_the_other_days_follow(index, embedder, range_k):
    assert 200 > RANGE_PER_HIT * 3  # the range is narrowed to its nearest turns at range_k=3
    hits = _search(index, embedder, k=12, range_k=range_k)
    flags = [h.in_range for h in hits]
    lead = flags.index(False) if False in flags else len(flags)
    assert all(flags[:lead]) and not any(flags[lead:])  # the range first, then the rest
    assert lead == (12 if range_k is None else range_k)
    assert hits[0].turn_id == "t230"
    if range_k is not None:
        assert ELSEWHERE in [h.text for h in hits[lead:]]  # the other days follow


def test_only_the_range_answers_a_search_restricted_to_it(index, embedder):
    hits = _search(index, embedder, k=5, only_range=True)
    assert hits and all(h.in_range for h in hits)
    assert hits[0].text == IN_RANGE


def _fit(costs: list[int], tokens: int) -> int:
    """How many of the cheapest turns fit `tokens` (at least one)."""
    n, spent = 0, 0
    for c in sorted(costs):
        if spent + c > tokens:
            break
        n, spent = n + 1, spent + c
    return max(1, n)


@pytest.mark.parametrize("range_k, lines, half", [(8, 100, None), (8, 3, None), (8, 3, 6), (8, 0.5, None)])
def test_the_range_gives_up_the_hits_its_lines_cannot_fit(index, embedder, range_k, lines, half):
    """A range whose cheapest turns fit `lines` turns' worth of tokens returns at most that many of
    them, and the search returns as many fewer hits in all (the other days do not take their place)."""
    costs = [
        min(line_tokens(u), half or 10**9) + min(line_tokens(a), half or 10**9)
        for u, a, _ in index.records([r for r in range(len(index)) if 100 * DAY <= index.ts.view[r] - T0 < 300 * DAY])
    ]
    tokens = int(sorted(costs)[0] * lines) if lines < 1 else sum(sorted(costs)[:lines]) + 1
    want = min(range_k, _fit(costs, tokens))
    hits = _search(index, embedder, k=12, range_k=range_k, range_tokens=tokens, half_tokens=half)
    flags = [h.in_range for h in hits]
    assert flags[:want] == [True] * want and not any(flags[want:])
    assert len(hits) == 12 - (range_k - want)
    assert hits[0].turn_id == "t230"
