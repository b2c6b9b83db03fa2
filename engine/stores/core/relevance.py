"""Which facts are relevant to a message (placeholder: top-k over one cosine threshold)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.stores.core.index import FactIndex


@dataclass(frozen=True)
class Pick:
    fact_id: str
    score: float
    reason: str


class Relevance:
    def __init__(self, *, threshold: float, top_k: int) -> None:
        self.threshold = threshold
        self.top_k = top_k

    def pick(self, index: FactIndex, vector: np.ndarray, message: str) -> list[Pick]:
        found = index.search(vector, self.top_k)[0]
        return [Pick(fid, s, f"cosine {s:.3f} ≥ {self.threshold:.2f}") for fid, s in found if s >= self.threshold]
