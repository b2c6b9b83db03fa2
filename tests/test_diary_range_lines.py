"""A range too long to show whole is shown by its best turns (`render.raw_hits`): greedily, best
first, as many as the budget holds. Its turns are read from disk a few at a time, and how many
are read per step must never change which are chosen: checked against the greedy choice made
with every turn read, over budgets and line lengths of several kinds."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.render import NOTE_RESERVE, RangeTurns, raw_hits, turn_text
from engine.tokens import count_tokens

TZ = timezone(timedelta(hours=8))
T0 = datetime(2026, 10, 1, 9, 0, tzinfo=TZ)
WORDS = "tea river kitten lantern 茶馆 灯会 码头 书 hiking coffee the a of and 我们 聊了".split()


def _turns(seed: int, n: int, words: tuple[int, int]) -> tuple[list[DiaryEntry], RangeTurns]:
    rnd = random.Random(seed)
    entries = []
    for i in range(n):
        say = lambda: " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(*words)))  # noqa: E731
        entries.append(DiaryEntry(f"t{i:04d}", T0 + timedelta(minutes=14 * i), f"tag{i % 5}", say(), say()))
    turns = RangeTurns.of(np.arange(n), [int(e.at.timestamp()) for e in entries],
                          [e.at.date().isoformat() for e in entries], [e.tag for e in entries], "range")
    # Ties on purpose (several zeros, as turns the search did not rank): ties go in time order.
    scores = [0.0 if rnd.random() < 0.3 else round(rnd.random(), 2) for _ in range(n)]
    return entries, turns.ranked(np.array(scores))


def _greedy(entries: list[DiaryEntry], turns: RangeTurns, budget: int, limit: int, max_turn_tokens: int) -> list[str]:
    """The choice with every turn of the pool read first."""
    order = np.lexsort((-turns.ts, -turns.score))[:limit]
    cost = {i: count_tokens(turn_text(entries[i], TZ, max_tokens=max_turn_tokens)) for i in order.tolist()}
    if len(order) == len(entries) and sum(cost.values()) <= budget:
        return sorted(e.id for e in entries)
    room, chosen = budget - NOTE_RESERVE, []
    for i in np.lexsort((-turns.ts[order], -turns.score[order])).tolist():
        if cost[order[i]] <= room:
            chosen.append(entries[order[i]].id)
            room -= cost[order[i]]
    return sorted(chosen)


@pytest.mark.parametrize("seed, n, words, budget, limit, max_turn_tokens", [
    (1, 3000, (3, 12), 1125, 70, 400),   # a month, ordinary lines
    (2, 200, (1, 3), 1125, 70, 400),     # a weekend of short lines: more fit than the first read
    (3, 200, (40, 90), 1125, 70, 400),   # long lines: a few fit, and they are cut
    (4, 200, (40, 90), 1125, 70, 60),    # long lines cut short by max_turn_tokens
    (5, 500, (2, 40), 300, 400, 400),    # a small budget, mixed lengths: shorter lines fill the rest
    (6, 40, (2, 6), 5000, 400, 400),     # all of them fit
    (7, 40, (30, 60), 700, 400, 400),    # the pool is read whole, then chosen from
])
def test_the_best_turns_are_chosen_greedily_however_they_are_read(seed, n, words, budget, limit, max_turn_tokens):
    entries, turns = _turns(seed, n, words)
    reads: list[int] = []

    def load(rows: np.ndarray) -> list[DiaryEntry]:
        reads.append(len(rows))
        return [entries[r] for r in rows.tolist()]

    hits, left = raw_hits(turns, load, tz=TZ, budget=budget, max_turn_tokens=max_turn_tokens, limit=limit)
    shown = sorted(h.meta["id"] for h in hits)
    assert shown == _greedy(entries, turns, budget, limit, max_turn_tokens)
    assert left == n - len(hits)
    assert sum(h.tokens for h in hits) <= budget
    assert sum(reads) <= min(n, limit)  # each turn read at most once, only from the pool
