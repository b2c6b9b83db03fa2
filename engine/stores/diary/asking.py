"""What a time question asks for: the whole range ("what did we talk about yesterday", "那天都说了啥",
"remind me what I told you on Sunday") or something within it ("what book did I mention yesterday",
"6月3号我推荐的电影叫什么", "why was I upset on Monday").

The answer differs: a whole range is shown whole (digests when long) and nothing competes with it;
content ranks the range's turns first and lets other days fill what is left.

The decision is learned, not written as phrasings: a logistic regression over the embedding of the
question with its time words and the participants' names removed (`residual`), one row of weights
per embedding model in `ask_kind.json`, trained by `scripts/train_ask_kind.py` on the labelled
paraphrase sets in tests/data/time_questions/ (a third of the first set held out; the test suite
checks the decision on it). The residual is embedded in the prompt's one embedding call (the diary
asks for it as a query piece). An embedder with no trained row (a hosted model) falls back to
words: a question with content words beyond its recall cue asks for content.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

WEIGHTS = Path(__file__).with_name("ask_kind.json")
RECALL_WEIGHTS = Path(__file__).with_name("asks_recall.json")

AskKind = Literal["range", "content"]


SURE_OF_RANGE = 0.97
"""A range that does not fit as turns is answered by digests only when the model is this sure the
whole range is asked: digests of a content question lose its answer, while a whole-range question
answered by its best turns still shows most of it (LoCoMo's third-person questions, "What did Nate
undergo in April 2022?", read as recaps at p 0.9-0.95)."""


@dataclass(frozen=True)
class Asked:
    kind: AskKind
    how: str
    """Why, for the hit's reason: the model's probability, or the words' rule."""
    sure: bool = False
    """The whole range is asked beyond doubt (`SURE_OF_RANGE`; by the words' rule, a range without
    content words)."""


@dataclass(frozen=True)
class Model:
    model_id: str
    weights: np.ndarray
    bias: float
    scale: float
    thresholds: dict[str, float] = field(default_factory=dict)
    """Where its probability decides, by name (`asks_recall.json`: flip_at)."""


@lru_cache(maxsize=8)
def model_for(model_id: str, path: Path = WEIGHTS) -> Model | None:
    """The trained row for an embedding model, or None (no row: the words decide)."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    row = rows.get("models", {}).get(model_id)
    if row is None:
        return None
    weights = np.asarray(row["weights"], dtype=np.float32)
    if weights.ndim != 1 or not weights.size:
        raise ValueError(f"{path}: models.{model_id}.weights must be a list of numbers")
    thresholds = {str(k): float(v) for k, v in row.get("thresholds", {}).items()}
    return Model(model_id, weights, float(row["bias"]), float(row["scale"]), thresholds)


def probability(model: Model, vector: np.ndarray) -> float:
    z = float(np.dot(np.asarray(vector, dtype=np.float32).ravel() * model.scale, model.weights)) + model.bias
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def asks_recall(vector: np.ndarray | None, model_id: str, *, path: Path = RECALL_WEIGHTS) -> str:
    """Why a message naming a past day that no word rule of `recall.py` answers still asks to
    recall our talk of it: a model of the residual's embedding says so at p >= its `flip_at`
    (chosen on blind sets left out of training). "" when it does not, or cannot (no vector, no row
    for this embedder). It backs the rules up and never overrules one that fires: a question about
    a day's facts ("5月4号的天气怎么样？") is answered from that day whatever it asks."""
    model = model_for(model_id, path) if vector is not None else None
    if model is None or model.weights.size != np.asarray(vector).size:
        return ""
    flip_at = model.thresholds.get("flip_at")
    if flip_at is None:
        raise ValueError(f"{path}: models.{model_id}.thresholds.flip_at is missing")
    p = probability(model, vector)
    return f"asks to recall that day: p={p:.2f}" if p >= flip_at else ""


def has_content_words(text: str, cue: str) -> bool:
    """The fallback's rule: words beyond the time expression and the recall cue ("what BOOK did I
    mention"); `text`: the message without its time words."""
    from engine.search.text import content_terms

    rest = text.replace(cue, " ") if cue else text
    return bool(content_terms(rest))


def ask_kind(vector: np.ndarray | None, model_id: str, *, has_content: bool) -> Asked:
    """`vector`: the residual's embedding (None when the embedder failed); `has_content`: the
    residual holds words beyond the recall cue (the fallback's rule)."""
    model = model_for(model_id) if vector is not None else None
    if model is not None and model.weights.size == np.asarray(vector).size:
        p = probability(model, vector)
        return Asked("range" if p >= 0.5 else "content", f"asks for the whole range: p={p:.2f}", p >= SURE_OF_RANGE)
    # the words' rule is as sure as the design before the model (a range without content words
    # was digested when it did not fit)
    return Asked("content" if has_content else "range", "content words" if has_content else "no content words",
                 not has_content)


__all__ = ["AskKind", "Asked", "Model", "RECALL_WEIGHTS", "WEIGHTS", "ask_kind", "asks_recall", "has_content_words", "model_for", "probability"]
