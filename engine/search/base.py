"""What the diary asks of the turn search and what it gets back: typed frozen values.

The index (`engine.search.files.FileTurnIndex`) keeps everything in a `.cache/` folder; the
ranking (`engine.search.rank`) runs over it on every backend: the files backend keeps one per
user from its day files, the Postgres backend a copy per worker fed from its tables.

Search works on *halves*: a turn's user text and assistant text are scored separately (a
question usually matches one of them) and together (the exchange as a whole), and a result names
the half that matched, so the diary can show only what is relevant.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from engine.tokens import count_tokens

Side = Literal["user", "assistant"]
SIDES: tuple[Side, Side] = ("user", "assistant")


@dataclass(frozen=True)
class TurnDoc:
    """One turn as the index sees it."""

    id: str
    ts: int
    """Epoch seconds."""
    user: str
    assistant: str
    dates: tuple[tuple[str, str], ...] = ()
    """Resolved relative time expressions, kept with the texts (shown with them)."""

    @property
    def digest(self) -> str:
        """Content hash: an edited turn (same id, new text) is re-indexed."""
        return turn_digest(self.user, self.assistant, self.dates)


def turn_digest(user: str, assistant: str, dates: tuple[tuple[str, str], ...] = ()) -> str:
    notes = "\x01".join(f"{a}\x02{b}" for a, b in dates)
    return hashlib.sha256(f"{user}\x00{assistant}\x00{notes}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SearchRequest:
    text: str
    """The words to match lexically (the message, usually without its time words)."""
    vector: np.ndarray | None
    """The query embedding (query role, L2-normalised), or None for lexical only."""
    k: int = 40
    start: int | None = None
    """With `end`: a time range (epoch seconds, half-open). Turns in it rank first."""
    end: int | None = None
    only_range: bool = False
    """Rank only the range's turns, every one of them eligible; otherwise the range's hits (at
    most `range_k`) lead and the other days' follow (a content question about a range too long
    to show whole: its best turns, then what else matches, from one search)."""
    range_k: int | None = None
    """With a range: at most this many of the hits are the range's (default `k`)."""
    range_tokens: int | None = None
    """With `range_k`: the tokens the range's turns may take when shown as lines. `range_k` is
    then at most how many of the range's turns could fit, counted by their cheapest (each turn
    costs at least its halves' `SearchHit.tokens`, a half at most `half_tokens`), and `k` is
    smaller by what that takes off: the range's turns past that many are never shown, and
    ranking them was most of what a long range added to a search."""
    half_tokens: int | None = None
    """With `range_tokens`: the most one half costs in a turn's line (longer halves are cut)."""
    side: Side | None = None
    """The participant the question is about (it names them): their lines rank first."""
    exclude: frozenset[str] = frozenset()
    """Turn ids not to return (already in the prompt window)."""
    asks_memory: bool = False
    """The text is about us or asks for memory outright (a message that names the user or us, or
    has a recall cue, "还记得我的猫叫什么吗"; a person searching the diary): in the relevance gate
    the language's common words (学, 记得, 喜欢) count in full, where other messages' count only
    `lexical.COMMON_WORD_AGREEMENT` of their IDF."""
    about_participant: bool = False
    """The text is a question that names the user or the character in the third person ("What
    attributes describe John?", "林舟养了什么宠物？"): it asks about their life, so when no line
    clears the relevance gate (its words are not the diary's: "attributes", "console") the best
    lines by score still answer it instead of nothing."""


@dataclass(frozen=True)
class SearchHit:
    """One half of one turn, with the evidence for its rank."""

    turn_id: str
    ts: int
    side: Side
    score: float
    """Fused score (reciprocal-rank fusion of the signals, context-smoothed); higher is better."""
    lexical: float
    """BM25 of this half (0 when no query word occurs in it)."""
    dense: float
    """Cosine of this half with the query vector."""
    terms: tuple[str, ...] = ()
    """The query's content words, when this half matched lexically."""
    why: str = ""
    """"words", "meaning", "context" (a neighbour of a hit) or "range"."""
    in_range: bool = False
    text: str = ""
    """This half's text."""
    dates: tuple[tuple[str, str], ...] = ()
    tokens: int = -1
    """What the half costs as a prompt line after a speaker's "Name:" (`line_tokens`), counted
    when it was indexed; -1 when not known."""


def line_tokens(text: str) -> int:
    """Tokens of `" " + text + "\n"` with whitespace runs made single spaces: a line
    `f"{name}: {text}"` followed by a newline costs `count_tokens(f"{name}:")` plus this (the
    tokenizer never joins a word across the space after the colon; a final "." and the newline
    are often one token). 0 for an empty half. A half whose own spacing differs is shown as said
    (`render.one_line`) and counted when it is shown."""
    flat = " ".join(text.split())
    return count_tokens(f" {flat}\n") if flat else 0


@dataclass(frozen=True)
class IndexStats:
    turns: int
    removed: int
    """Turns removed but still occupying rows (reclaimed by the next compaction)."""
    vectors: str
    """The vector index in use (e.g. "HNSW32,SQfp16")."""


Progress = Callable[[int], None]
"""Called with how many turns were just indexed (a progress bar's `update`)."""


@dataclass(frozen=True)
class Tuning:
    """The ranking's constants, in one place (measured on the LoCoMo dev split, bench_recall)."""

    rrf_k: int = 10
    """Reciprocal-rank constant: small, so a signal's top ranks (a rare word matched exactly, a
    line close in meaning) count clearly more than middling ranks in every signal (LoCoMo
    tuning split, 60 -> 10: multi-hop +1.7, open-domain +5.6, single-hop -1.0 points)."""
    candidates: int = 100
    """Per signal, how many top units/turns enter the fused ranking."""
    context: tuple[float, float] = (0.3, 0.15)
    """Share of a neighbour's score (1 and 2 lines away, same session) added to a line."""
    session_gap_s: int = 3600
    """Consecutive turns further apart than this belong to different conversations."""
    side_bonus: float = 0.3
    """Lines of the participant a question names gain this share of the best score."""
    agree: float = 0.2
    """Lexical agreement: a line (or its turn) holding at least this share of the query's content-word IDF."""
    dense_z: float = 3.0
    """Meaning alone: a turn's cosine this many standard deviations above the query's top turns'."""
    dense_min_std: float = 0.015
    """Floor of that standard deviation (cosines of one embedder; e5 spreads its top ~0.02-0.03)."""
    gate_bonus: float = 0.15
    """Lines past the gate (or next to one) gain this share of the best score; they used to rank
    strictly first, which buried a multi-part question's other parts under lines sharing one word."""
    gate: str = "query"
    """"query": once some line passes the gate every line may be shown by rank; "line": only
    lines that pass it (or sit next to one)."""
    duplicate_cosine: float = 0.985
    expansion_terms: int = 16
    """Query expansion: how many of the diary's terms nearest the query's vector (`expand.py`), and
    how many of its rarer terms nearest it by context vector (`contexts.py`)."""
    expansion_weight: float = 2.0
    """RRF weight of a line's BM25 over those terms (LoCoMo dev, weight/terms 2.0/16: multi-hop
    0.671 -> 0.703, on the tuning split and held out alike, single-hop -0.3 points; 1.0/16 and
    3.0/16 gave 0.696 and 0.700, 2.0/8 and 2.0/32 0.698)."""
    context_weight: float = 1.0
    """RRF weight of a line's BM25 over the rarer terms whose context vectors (`contexts.py`) are
    nearest the query (as many as `expansion_terms`). LoCoMo dev, all five conversations, beside
    the word expansion: multi-hop 0.703 -> 0.717 (tuning split 0.701 -> 0.717, held out 0.704 ->
    0.717), single-hop -0.4 points; 2.0 gave 0.722 but single-hop -0.7 (-1.5 on the tuning split);
    in place of the word expansion 0.708. Also measured, none beyond one or two evidence lines of
    the 414: 1.5 -> 0.720 (single-hop -0.3), 24 context terms -> 0.720 (open-domain -1.2), 32 ->
    0.705, 24 terms at 1.5 -> 0.722 (temporal -0.6)."""
    weights: tuple[float, float, float, float, float] = field(default=(1.0, 1.0, 1.0, 1.0, 0.5))
    """RRF weights of: half vector, half BM25, turn vector, turn BM25, exchange vector (a user
    line with the reply before it; LoCoMo dev at 0.5: single-hop +0.5, multi-hop +0.2, open-domain
    +1.2 points, on the tuning split and held out alike, nothing lower; 1.0 lost multi-hop)."""
