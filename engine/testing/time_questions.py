"""The labelled time-question sets (tests/data/time_questions/): what `engine.stores.diary.asking`
is trained on (scripts/train_ask_kind.py) and checked against (tests/test_ask_kind.py).

`en.tsv` / `zh.tsv` are the paraphrase set; a third of it, chosen by a hash of each question
(`held_out`), is never trained on. `train_*.tsv` are training only. Rows: kind, family, question.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "time_questions"
KINDS = ("range", "content")
SPAN_NOW = datetime(2026, 11, 25, 15, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
"""Where the time words are is found at this `now` (their spans do not depend on it)."""


@dataclass(frozen=True)
class Question:
    lang: str
    kind: str
    family: str
    text: str
    source: str
    """file:line."""

    @property
    def held_out(self) -> bool:
        return self.source.split(":")[0] in ("en.tsv", "zh.tsv") and held_out(self.text)


def held_out(text: str) -> bool:
    """A third of the paraphrase set, fixed by the question's own text."""
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 3 == 0


def load(folder: Path = DATA) -> list[Question]:
    out = []
    for path in sorted(folder.glob("*.tsv")):
        lang = path.stem.split("_")[-1]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or parts[0] not in KINDS or not parts[2].strip():
                raise ValueError(f"{path}:{n}: expected kind<TAB>family<TAB>question with kind in {KINDS}: {line!r}")
            out.append(Question(lang, parts[0], parts[1], parts[2].strip(), f"{path.name}:{n}"))
    return out


def residual_of(text: str) -> str:
    """The text the decision reads, as the diary makes it (no participants' names here)."""
    from engine.stores.diary.question import Names, residual
    from engine.timeparse import parse_time_ranges

    return residual(text, [e.span for e in parse_time_ranges(text, now=SPAN_NOW)], Names("", ""))
