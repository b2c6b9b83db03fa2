"""The labelled time-question sets (tests/data/time_questions/): what `engine.stores.diary.asking`
is trained on (scripts/train_ask_kind.py) and checked against (tests/test_ask_kind.py).

`en.tsv` / `zh.tsv` are the paraphrase set; a third of it, chosen by a hash of each question
(`held_out`), is never trained on. `train_*.tsv` are training only. Rows: kind, family, question.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
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

    @property
    def asks(self) -> bool:
        """About our talk of that day (range, content), or a statement (only in the blind sets)."""
        return self.kind != "statement"


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


# -- the blind sets of bench/time_probe/ -----------------------------------------------------------

PROBE = Path(__file__).resolve().parents[2] / "bench" / "time_probe"
TRAINED_SETS = tuple(range(1, 14))
"""The blind sets `engine/stores/diary/asks_recall.json` is trained on; every later set is held out
(a measure of phrasings neither the rules nor the model saw)."""
HELD_OUT_SETS = (14,)
PAST_DAYS = {
    "en": (("yesterday", "Yesterday"), ("the day before yesterday", "The day before yesterday"), ("two days ago", "Two days ago"),
           ("last Tuesday", "Last Tuesday"), ("on Sunday", "On Sunday"), ("on March 3", "On March 3"),
           ("on the 18th", "On the 18th"), ("last night", "Last night")),
    "zh": (("昨天", "昨天"), ("前天", "前天"), ("大前天", "大前天"), ("上周二", "上周二"), ("上星期五", "上星期五"),
           ("3月3日", "3月3日"), ("18号", "18号"), ("昨晚", "昨晚")),
}
"""Names of a past day at `SPAN_NOW` that fill a template's {t} / {T} (mid-sentence, opening it)."""
TOPICS = {
    "en": ("pizza", "my sister", "the job interview", "hiking", "the new phone", "my cat", "that movie", "the trip",
           "my boss", "the guitar"),
    "zh": ("猫", "我姐", "面试", "爬山", "新手机", "那部电影", "旅行", "老板", "吉他", "火锅"),
}


def blind_set(n: int, *, fills: int = 2, folder: Path = PROBE) -> list[Question]:
    """Set `n`'s templates, each filled `fills` times with past days and topics (the same every run)."""
    path = folder / f"set{n}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    rng = random.Random(n)
    out = []
    for lang in ("en", "zh"):
        for kind in ("range", "content", "statement"):
            for i, row in enumerate(data.get(lang, {}).get(kind, [])):
                if not isinstance(row, dict) or not str(row.get("text", "")).strip():
                    raise ValueError(f"{path}: {lang}.{kind}[{i}]: expected {{family, text}}, got {row!r}")
                for _ in range(fills):
                    mid, lead = rng.choice(PAST_DAYS[lang])
                    text = row["text"].replace("{t}", mid).replace("{T}", lead).replace("{topic}", rng.choice(TOPICS[lang]))
                    out.append(Question(lang, kind, str(row.get("family", "")), text, f"{path.name}: {lang}.{kind}[{i}]"))
    return out


def _read_with_ranges(text: str, now: datetime) -> tuple[str, list]:
    """The message as the diary's rules read it (`as_tables_read`: Traditional characters, written
    Cantonese) and the ranges it answers from (`named_days` of `past_ranges`)."""
    from engine.stores.diary.ranges import named_days, past_ranges
    from engine.timeparse import parse_time_ranges
    from engine.timeparse.script import as_tables_read

    said = as_tables_read(text)
    return said, named_days(past_ranges(said, parse_time_ranges(said, now=now), now))


def rules_answer(text: str, *, now: datetime = SPAN_NOW, require_cue: bool = True) -> tuple[bool, bool]:
    """(the message names a past range at `now`, the word rules of `recall.py` answer from it)."""
    from engine.stores.diary.recall import decide_for

    said, ranges = _read_with_ranges(text, now)
    return bool(ranges), bool(ranges) and decide_for(said, ranges, now, require_cue=require_cue).use


def engine_answer(text: str, vector: Sequence[float], model_id: str, *, now: datetime = SPAN_NOW) -> tuple[bool, bool]:
    """(the message names a past range at `now`, the diary answers from it): the rules and, where they
    neither fire nor settle it, the learned model over `vector` (`recall.decide_with_model`), as
    `build_prompt` decides."""
    from engine.stores.diary.recall import decide_with_model

    said, ranges = _read_with_ranges(text, now)
    return bool(ranges), bool(ranges) and decide_with_model(said, ranges, now, vector, model_id).use


CORPORA = DATA.parent
"""tests/data/: the decision corpora (diary_recall.txt, diary_ordinary.txt), one message per line."""


def corpus(name: str) -> list[tuple[str, str]]:
    """A corpus's messages, each with its file:line ('#' lines are comments)."""
    lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
    return [(line.strip(), f"{name}:{n}") for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]
