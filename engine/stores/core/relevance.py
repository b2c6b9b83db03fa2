"""Which facts a message should bring into the prompt: those that stand out for *this* message.

One absolute cosine does not separate relevant from unrelated facts: multilingual-e5 scores almost
any two short Chinese texts above 0.8, and a vague message ("昨天我们聊了什么？") sits close to
everything, so at the old 0.86 threshold 21 % of everyday messages injected a fact. Instead each
message is measured against its own baseline: `mu`, its mean cosine with a fixed set of reference
facts about nobody in particular (`background.FACTS`). A fact's *lift* is how much of the
distance from that baseline to a perfect match its cosine covers:

    lift = (cosine - mu) / (1 - mu)

and the `top_k` facts with lift >= `min_lift` are injected. Dividing by `1 - mu` keeps one
`min_lift` right for embedders with different cosine ranges (calibrated: 0.30-0.37 best for both
multilingual-e5-small and all-MiniLM-L6-v2). Measured on labelled messages x facts in zh and en
(hand-written users and the LoCoMo dev conversations' facts and questions; `bench/bench_core.py
--relevance`), see `DEFAULT_MIN_LIFT`.

The reference vectors are embedded once per embedder (about 70 short texts), kept in the
character's `.cache/` and shared by the stores of one process.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.adapters.embedder import Embedder
from engine.fileio import atomic_write_bytes
from engine.stores.core.background import FACTS
from engine.stores.core.index import FactIndex

log = logging.getLogger(__name__)

DEFAULT_MIN_LIFT = 0.37
"""On the labelled set with the default embedder: 2 % of unrelated messages inject a fact (was
21 % at cosine 0.86) and 73 % of messages that need a fact get one (hand-written users; LoCoMo
dev: 0.8 % / 73 %)."""
MAX_MESSAGE_CHARS = 1000
"""The message text embedded for this decision is cut here: a fact is about what a message opens with."""

_SHARED: dict[str, np.ndarray] = {}
_SHARED_LOCK = threading.Lock()


@dataclass(frozen=True)
class Pick:
    """A fact chosen for the prompt."""

    fact_id: str
    score: float
    """Its cosine with the message."""
    lift: float
    reason: str


class Relevance:
    def __init__(
        self, embedder: Embedder, *, min_lift: float, top_k: int, floor: float | None, cache_dir: Path
    ) -> None:
        self.embedder = embedder
        self.min_lift = min_lift
        self.top_k = top_k
        self.floor = floor
        """An optional absolute cosine every injected fact must also reach (`core.threshold`)."""
        self.cache_dir = Path(cache_dir)
        self._key = hashlib.sha256("\n".join((embedder.model_id, str(embedder.dim), *FACTS)).encode()).hexdigest()[:16]

    def pick(self, index: FactIndex, vector: np.ndarray) -> list[Pick]:
        if not len(index):
            return []
        mu = float(np.mean(self.reference() @ np.asarray(vector, dtype=np.float32)))
        rows, scores = index.live_scores(vector)
        lifts = (scores - mu) / max(1.0 - mu, 1e-6)
        keep = lifts >= self.min_lift
        if self.floor is not None:
            keep &= scores >= self.floor
        chosen = np.flatnonzero(keep)
        chosen = chosen[np.argsort(-scores[chosen], kind="stable")][: self.top_k]
        return [
            Pick(
                index.row_fact[int(rows[i])],  # type: ignore[arg-type]
                float(scores[i]),
                float(lifts[i]),
                f"cosine {scores[i]:.3f}: lift {lifts[i]:.2f} ≥ {self.min_lift:.2f} over this message's "
                f"baseline {mu:.3f}",
            )
            for i in chosen.tolist()
        ]

    def reference(self) -> np.ndarray:
        """The reference facts' vectors: from this process, else the cache, else embedded now."""
        with _SHARED_LOCK:
            found = _SHARED.get(self._key)
            if found is None:
                found = self._load()
                if found is None:
                    found = self._embed()
                _SHARED[self._key] = found
        return found

    def _load(self) -> np.ndarray | None:
        path = self._path()
        try:
            vectors = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        if vectors.shape != (len(FACTS), int(self.embedder.dim)) or vectors.dtype != np.float32:
            log.warning("core memory: reference vectors in %s do not fit this embedder; embedding them again", path)
            return None
        return vectors

    def _embed(self) -> np.ndarray:
        vectors = np.ascontiguousarray(self.embedder.embed(list(FACTS), role="passage"), dtype=np.float32)
        try:
            import io

            buffer = io.BytesIO()
            np.save(buffer, vectors, allow_pickle=False)
            atomic_write_bytes(self._path(), buffer.getvalue())
        except OSError as exc:  # a read-only data folder still answers, it only embeds again next time
            log.info("core memory: reference vectors not cached (%s)", exc)
        return vectors

    def _path(self) -> Path:
        return self.cache_dir / f"core_reference-{self._key}.npy"
