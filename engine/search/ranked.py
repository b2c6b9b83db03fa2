"""What the ranking (`rank.py`, `select.py`) reads of a turn index: the index's columns per row and its
lexical, vector and term parts (`files.FileTurnIndex` has them; on Postgres, each worker's copy)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from engine.search.base import Tuning
from engine.search.contexts import TermContexts
from engine.search.expand import TermVectors
from engine.search.grow import Grow
from engine.search.lexical import Bm25
from engine.search.vectors import TurnGraph, VectorFile


class RankedIndex(Protocol):
    """What the ranking reads of a turn index (`files.FileTurnIndex`): its columns per row, and
    its lexical, vector and term parts."""

    tuning: Tuning
    ids: list[str]
    ts: Grow
    alive: Grow
    has_text: Grow
    line_tokens: Grow
    bm25: Bm25
    vectors: VectorFile
    graph: TurnGraph
    terms: TermVectors
    contexts: TermContexts
    version: int

    def __len__(self) -> int:
        """Live turns."""

    @property
    def rows(self) -> int: ...

    def order(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows sorted by time, position of each row in that order)."""

    def records(self, rows: list[int]) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
        """(user, assistant, dates) of each row."""
