"""Hybrid ranking of turn halves: candidates from BM25, the vector graph and a time range;
reciprocal-rank fusion of seven signals; context from neighbouring lines; a relevance gate.

Signals per half ("unit"): its vector's cosine, its BM25, its whole turn's cosine, its whole
turn's BM25 (a question often matches a question and its answer together), its exchange's
cosine: a user line with the reply before it (a reply to "what did you eat?" says only "ramen"),
an assistant line with its turn; its BM25 over the diary's terms nearest the query's vector
(`expand.py`: "activities" finds "camping" and "pottery"); and its BM25 over the rarer terms whose
lines, on average, are nearest it (`contexts.py`: "hikes" finds "campfire" and "marshmallow").
Fused by reciprocal rank (k=10, see `Tuning.rrf_k`), so no signal's scale matters. A line then
gains a share of its neighbours' scores in the same conversation (an answer right after the
matching question), and the participant a question names ranks first.

The gate keeps unrelated small talk out without one absolute cosine: a line passes it when it
holds a fifth of the query's content-word IDF (lexical agreement), or its turn's cosine stands
well above the query's own top turns' (a margin over its score distribution), or it is next to
such a line. A query none of whose lines pass finds nothing ("How are you?", "晚安") but the lines
of a time range it asks about, unless it is a question about a participant named in the third
person (`SearchRequest.about_participant`); otherwise lines past the gate gain a bonus, and the
rest may follow by score (a multi-part question's other parts rarely share its words).
"""

from __future__ import annotations

import bisect
from concurrent import futures
from dataclasses import replace

import numpy as np

from engine.runtime import configure_this_thread
from engine.search.base import SIDES, SearchHit, SearchRequest
from engine.search.lexical import COMMON_WORD_AGREEMENT
from engine.search.ranked import RankedIndex
from engine.search.select import Units, select
from engine.search.text import is_content, terms

RANGE_EXACT = 5000
"""A time range with at most this many turns is scored whole; a longer one through candidates."""
RANGE_PER_HIT = 8
"""Within a range (`only_range`), at most this many turns per hit asked for are scored whole."""


def search(ix: RankedIndex, req: SearchRequest) -> list[SearchHit]:
    if len(ix) == 0:
        return []
    q_terms = terms(req.text)  # segmenting is the costly part: once per search
    content = {t for t in q_terms if is_content(t)}
    vector = None if req.vector is None else np.asarray(req.vector, dtype=np.float32).reshape(-1)
    pending: list[futures.Future] = []
    try:
        return _rank(ix, req, q_terms, content, vector, pending)
    finally:
        futures.wait(pending)  # they read the index: done before the caller may let anyone change it


def _rank(ix: RankedIndex, req: SearchRequest, q_terms: list[str], content: set[str], vector: np.ndarray | None,
          pending: list[futures.Future]) -> list[SearchHit]:
    t = ix.tuning
    # The diary's terms nearest the query's vector that it does not hold (`expand.py`), looked up
    # while this thread scores BM25 and the turn graph.
    near = _look_up(ix, vector, t.expansion_weight, pending,
                    ix.terms.nearest, vector, ix.bm25.names, content, t.expansion_terms)
    lex = ix.bm25.score(q_terms, content, ix.alive.view, ix.version,
                        common_weight=1.0 if req.asks_memory else COMMON_WORD_AGREEMENT)
    in_range = _range_rows(ix, req.start, req.end)
    req = _fitted(ix, req, in_range)
    # Excluded turns (shown already) are dropped from the candidates: take as many more, or a
    # search that excludes the best turns is left with only their neighbours.
    dense_rows, dense_sims = _dense_candidates(ix, vector, t.candidates + len(req.exclude))
    cand, base = _candidates(ix, req, lex, dense_rows, in_range, vector)
    if cand.size == 0:
        return []
    halves = np.stack([2 * cand, 2 * cand + 1], axis=1)
    # The rarer terms of the candidate lines whose context vectors are nearest the query's vector
    # (`contexts.py`), looked up while this thread reads the candidates' vectors.
    near_contexts = _look_up(ix, vector, t.context_weight, pending,
                             ix.contexts.nearest, ix, vector, content, t.expansion_terms, halves.reshape(-1))

    # Per candidate row: the three cosines and the lexical scores of both halves and the turn.
    # Rows that are only neighbours of a candidate lend context; their vectors are not read.
    vecs = Units(ix.vectors.take(cand[base]), base)
    has = ix.has_text.view[cand]
    du, dt = np.full((cand.size, 2), -np.inf, np.float32), np.full(cand.size, -np.inf, np.float32)
    dx = np.full((cand.size, 2), -np.inf, np.float32)
    if vector is not None:
        du[base] = vecs.base[:, :2] @ vector
        dt[base] = vecs.base[:, 2] @ vector
        dx[base, 0] = _exchange(ix, cand[base], vecs.base, du[base, 0], vector)
        dx[:, 1] = dt  # a reply's exchange is its turn
    lu = _lookup(lex.units, lex.unit_scores, halves)
    lt = _lookup(lex.turns, lex.turn_scores, cand)
    agree_u = _lookup(lex.units, lex.unit_idf, halves)
    lx = _expanded(ix, near, halves)
    lc = _expanded(ix, near_contexts, halves)

    k, w = t.rrf_k, t.weights
    fused = (
        w[0] * _rrf(np.where(has, du, -np.inf), k)
        + w[1] * _rrf(lu, k, positive_only=True)
        + w[2] * _rrf(dt, k)[:, None]
        + w[3] * _rrf(lt, k, positive_only=True)[:, None]
        + w[4] * _rrf(np.where(has, dx, -np.inf), k)
        + t.expansion_weight * _rrf(lx, k, positive_only=True)
        + t.context_weight * _rrf(lc, k, positive_only=True)
    )
    fused = np.where(has, fused, 0.0)
    nb = _Neighbours(ix, cand)
    score = np.where(has, nb.smooth(fused, t.context), 0.0)
    if req.side is not None and score.size:
        score[:, SIDES.index(req.side)] += t.side_bonus * float(score.max())

    # The gate. Lines that pass it (or sit next to one) gain a bonus; when some line passes, every
    # line may follow by score to fill the budget; when none does, the query is unrelated unless it
    # asks about a named participant.
    if req.only_range:
        core = has.copy()
    else:
        core = _eligible(lex.query_idf, agree_u, dt, dense_sims, has, t, bool(content))
    strong = (core | nb.near(core, len(t.context))) & has
    passed = bool(core.any())
    # A question about a named participant is about their life even when no line shares its words:
    # it opens the gate as a passing line would.
    opened = passed or req.about_participant
    eligible = has & opened if t.gate == "query" or not passed else strong
    range_mask = _among(cand, in_range)[:, None] & np.ones((1, 2), dtype=bool) if in_range.size else np.zeros_like(has)
    # A range comes only with a question that asks about it ("where did I travel in July"): its
    # lines are what was asked for even when none shares a word or stands out by meaning.
    eligible = eligible | (range_mask & has)
    if score.size:
        score = score + t.gate_bonus * float(score.max()) * (strong | range_mask)
    # A range comes first: its lines lead, whatever follows.
    first = range_mask & has
    return select(ix, req, cand, score, eligible, first, core, range_mask, lu, du, vecs, q_terms, content)


_NEAR_TERMS = futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="kioku-near-terms",
                                         initializer=configure_this_thread)
"""The nearest-term lookups of query expansion run here while the search's own thread scores
BM25 and the turn graph (the word expansion's) or reads the candidates' vectors (the context
expansion's, which needs the candidates): FAISS and numpy leave the GIL, and on a cold CPU cache
(the embedding call just ran) each costs ~0.6-0.9 ms at 100,000 turns, most of what expansion
would add to a prompt."""


def _look_up(ix: RankedIndex, vector: np.ndarray | None, weight: float, pending: list[futures.Future],
             lookup, *args) -> "futures.Future[list[int]] | None":
    """An expansion's nearest-term lookup, submitted to the helper thread and added to `pending`
    (the search waits for all of them); None when that expansion is off."""
    if vector is None or ix.tuning.expansion_terms <= 0 or weight <= 0 or ix.terms.rows == 0:
        return None
    future = _NEAR_TERMS.submit(lookup, *args)
    pending.append(future)
    return future


def _expanded(ix: RankedIndex, near: "futures.Future[list[int]] | None", halves: np.ndarray) -> np.ndarray:
    """Per candidate half, its BM25 over a query's expansion terms (0 where none of them occurs)."""
    if near is None:
        return np.zeros(halves.shape, dtype=np.float32)
    ids = near.result()
    # Candidate rows are sorted and unique, so their halves in row order are too.
    return ix.bm25.score_units(ids, halves.reshape(-1), ix.alive.view, ix.version).reshape(halves.shape)


def _candidates(ix: RankedIndex, req: SearchRequest, lex, dense_rows: np.ndarray, in_range: np.ndarray,
                vector: np.ndarray | None) -> np.ndarray:
    """(rows to score, which of them are candidates in their own right rather than neighbours):
    the top of each signal and the range's part, with the neighbours of the former."""
    t = ix.tuning
    # A range whole when it is small, else its best turns by meaning (one scan of the range's turn
    # vectors) and those the words and the graph found in it, not the whole range through every signal.
    want = req.k if req.range_k is None else req.range_k
    if in_range.size <= min(RANGE_EXACT, RANGE_PER_HIT * want):
        range_part = in_range
    else:
        near = _nearest_in(ix, vector, in_range, RANGE_PER_HIT * want // 2)
        found = np.unique(np.concatenate([lex.units >> 1, lex.turns, dense_rows]))
        range_part = np.union1d(found[_among(found, in_range)], near)
    if req.only_range:
        cand = core = range_part
    else:
        top_u = lex.units[_top(lex.unit_scores, t.candidates + len(req.exclude))] >> 1
        top_t = lex.turns[_top(lex.turn_scores, t.candidates + len(req.exclude))]
        core = np.unique(np.concatenate([top_u, top_t, dense_rows, range_part]))
        cand = np.union1d(_with_neighbours(ix, np.setdiff1d(core, range_part)), range_part)
    cand = np.unique(cand[ix.alive.view[cand]])
    if req.exclude:
        cand = cand[np.array([ix.ids[r] not in req.exclude for r in cand.tolist()], dtype=bool)]
    return cand, np.isin(cand, core)


class _Neighbours:
    """Lines next to each other in one conversation: candidate halves in time order, with the
    pairs that lie within `dist` lines and the session gap of each other."""

    def __init__(self, ix: RankedIndex, cand: np.ndarray) -> None:
        order, pos = ix.order()
        self.pos = ((2 * pos[cand])[:, None] + np.array([0, 1])).reshape(-1)
        self.by_pos = np.argsort(self.pos)
        self.sorted_pos = self.pos[self.by_pos]
        self.order, self.ts, self.gap = order, ix.ts.view, ix.tuning.session_gap_s

    def pairs(self, offset: int) -> tuple[np.ndarray, np.ndarray]:
        """(mask of halves that have a candidate `offset` lines away, that candidate's index)."""
        other = self.pos + offset
        j, found = _find(self.sorted_pos, other)
        rows_a = self.order[self.pos // 2]
        rows_b = self.order[np.clip(other, 0, 2 * self.order.size - 1) // 2]
        same = np.abs(self.ts[rows_a] - self.ts[rows_b]) <= self.gap * abs(offset)
        return found & same, self.by_pos[j]

    def smooth(self, fused: np.ndarray, shares: tuple[float, ...]) -> np.ndarray:
        """Each line gains `shares[d-1]` of the score of the lines d away (same conversation)."""
        flat = fused.reshape(-1)
        out = flat.copy()
        for dist, share in enumerate(shares, start=1):
            for sign in (-1, 1):
                ok, src = self.pairs(sign * dist)
                out[ok] += share * flat[src[ok]]
        return out.reshape(-1, 2)

    def near(self, mask: np.ndarray, dist: int) -> np.ndarray:
        flat = mask.reshape(-1)
        out = np.zeros(flat.size, dtype=bool)
        for d in range(1, dist + 1):
            for sign in (-1, 1):
                ok, src = self.pairs(sign * d)
                out |= ok & flat[src]
        return out.reshape(-1, 2)


def _exchange(ix: RankedIndex, rows: np.ndarray, vecs: np.ndarray, du_user: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Per row, the cosine of its user line with the reply just before it: the mean of the two
    line vectors, from the stored halves (nothing is embedded). A first line of a sitting, or one
    after an empty reply, is itself."""
    out = du_user.copy()
    order, pos = ix.order()
    p = pos[rows]
    prev = order[np.maximum(p - 1, 0)]
    ok = (p > 0) & (np.abs(ix.ts.view[rows] - ix.ts.view[prev]) <= ix.tuning.session_gap_s)
    ok &= ix.has_text.view[prev, 1] & ix.has_text.view[rows, 0]
    if ok.any():
        u, a = vecs[ok, 0], ix.vectors.take(prev[ok], kind=1)
        # |u + a| for unit vectors is sqrt(2 + 2 u.a).
        out[ok] = (du_user[ok] + a @ vector) / np.sqrt(np.maximum(2 + 2 * np.einsum("ij,ij->i", u, a), 1e-6))
    return out


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores (any order): a partition, not a full sort."""
    if scores.size <= k:
        return np.arange(scores.size)
    return np.argpartition(-scores, k)[:k]


def _nearest_in(ix: RankedIndex, vector: np.ndarray | None, rows: np.ndarray, k: int) -> np.ndarray:
    """The `k` of `rows` whose turn vectors are nearest `vector` (none without a vector)."""
    if vector is None or rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    in_graph = rows < ix.graph.size  # rows appended since the graph last caught up are read here
    found = ix.graph.scan_among(vector, rows[in_graph], k)
    late = rows[~in_graph]
    if late.size:
        sims = ix.vectors.take(late, kind=2) @ np.asarray(vector, dtype=np.float32).reshape(-1)
        found = np.concatenate([found, late[_top(sims, k)]])
    return np.sort(found)


def _fitted(ix: RankedIndex, req: SearchRequest, in_range: np.ndarray) -> SearchRequest:
    """`req` with `range_k` no more than the range's turns that can fit its `range_tokens` (the
    cheapest ones, by their halves' line costs), and `k` smaller by as many."""
    want = req.range_k
    if req.range_tokens is None or want is None or in_range.size <= want:
        return req
    cost = np.maximum(ix.line_tokens.view[in_range], 0)  # -1: not known, counted as free
    if req.half_tokens is not None:
        cost = np.minimum(cost, req.half_tokens)
    cheapest = np.sort(np.partition(cost.sum(axis=1), want - 1)[:want])
    fits = max(1, int(np.searchsorted(np.cumsum(cheapest), req.range_tokens, side="right")))
    if fits >= want:
        return req
    return replace(req, range_k=fits, k=req.k - (want - fits))


def _range_rows(ix: RankedIndex, start: int | None, end: int | None) -> np.ndarray:
    """The rows said in [start, end), sorted."""
    if start is None or end is None:
        return np.zeros(0, dtype=np.int64)
    order, _ = ix.order()
    # A binary search through the time order: gathering every row's time in that order first
    # read the whole column (100,000 turns: ~0.3 ms a search after the embedding call).
    ts = ix.ts.view.__getitem__
    lo, hi = bisect.bisect_left(order, start, key=ts), bisect.bisect_left(order, end, key=ts)
    return np.sort(order[lo:hi])


def _find(keys: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each of `want` is or would be in the sorted `keys`, clipped to an index of them;
    whether it is there): a binary search for each value, not a sort of both (np.isin sorts; a
    month is ~3,000 rows, the values a few hundred)."""
    if keys.size == 0:
        return np.zeros(want.shape, dtype=np.int64), np.zeros(want.shape, dtype=bool)
    j = np.minimum(np.searchsorted(keys, want), keys.size - 1)
    return j, keys[j] == want


def _among(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """np.isin(values, rows) for `rows` sorted and unique (a range's)."""
    return _find(rows, values)[1]


def _dense_candidates(ix: RankedIndex, vector: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    if vector is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    dead = ix.rows - len(ix)
    rows, sims = ix.graph.search(vector, k + min(dead, 4 * k))
    keep = ix.alive.view[rows]
    return rows[keep][:k], sims[keep][:k]


def _with_neighbours(ix: RankedIndex, rows: np.ndarray) -> np.ndarray:
    if rows.size == 0:
        return rows
    order, pos = ix.order()
    p = pos[rows]
    near = np.concatenate([p - 1, p, p + 1])
    near = near[(near >= 0) & (near < order.size)]
    return np.unique(order[near])


def _lookup(keys: np.ndarray, values: np.ndarray, want: np.ndarray) -> np.ndarray:
    """values[keys == want] elementwise (0 where absent); keys sorted."""
    if keys.size == 0:
        return np.zeros(want.shape, dtype=np.float32)
    j, found = _find(keys, want)
    return np.where(found, values[j], 0.0).astype(np.float32)


def _rrf(scores: np.ndarray, k: int, *, positive_only: bool = False) -> np.ndarray:
    """1 / (k + rank) over all entries of `scores` (rank 1 = best); 0 for -inf (and for <= 0
    with `positive_only`)."""
    flat = scores.reshape(-1)
    ranks = np.empty(flat.size, dtype=np.float64)
    ranks[np.argsort(-flat, kind="stable")] = np.arange(1, flat.size + 1)
    out = 1.0 / (k + ranks)
    bad = ~np.isfinite(flat) | ((flat <= 0) if positive_only else False)
    out[bad] = 0.0
    return out.reshape(scores.shape)


def _eligible(query_idf, agree_u, dt, dense_sims, has, t, has_content: bool) -> np.ndarray:
    """Lines past the gate: a line (or its turn) holding enough of the query's content words, or a
    turn whose cosine stands out among the query's top turns (`dense_sims`, whole-turn cosines).
    A half's own cosine is not compared with them: a short line ("真的吗？", "好的") is closer to a
    short message than any whole turn, so against the turns' spread it stood out for any small
    talk (bench_unrelated: English small talk opened the gate on every Chinese diary)."""
    if not has_content or query_idf <= 0:
        return np.zeros(has.shape, dtype=bool)
    turn_agree = np.minimum(agree_u.sum(axis=1), query_idf)
    lexical = (agree_u >= t.agree * query_idf) | (turn_agree >= t.agree * query_idf)[:, None]
    if dense_sims.size < 10:
        return lexical & has
    # A floor on the spread: in a diary of near-identical lines the spread is tiny and any small
    # difference would look like an outlier.
    mean, std = float(dense_sims.mean()), max(float(dense_sims.std()), t.dense_min_std)
    return (lexical | ((dt - mean) / std >= t.dense_z)[:, None]) & has
