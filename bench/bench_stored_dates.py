"""The dates the diary stores with each turn (write time), over the dev conversations and the zh set.

    .venv/bin/python bench/bench_stored_dates.py [--show 20]

Every turn as bench_recall.py records it, its relative time expressions resolved against its own
time (`engine.stores.diary.dates.resolve_dates`). Prints how many turns carry dates, how many dates,
and how many of those sit in a sentence that asks about that time (a time question, read as the
diary reads one: `recall.decide_for`): those come back as events of the day they ask about. Run it on two
trees to compare designs. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_recall import EVAL, language_of, turns_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=15, help="print this many dates stored in questions")
    args = parser.parse_args()
    from engine.stores.diary.dates import resolve_dates
    from engine.stores.diary.ranges import past_ranges
    from engine.stores.diary.recall import decide_for
    from engine.timeparse import parse_time_ranges

    samples = json.loads(EVAL.read_text(encoding="utf-8"))
    for path in sorted((ROOT / "bench" / "zh_eval").glob("*.json")):
        samples += json.loads(path.read_text(encoding="utf-8"))
    turns = dated = dates = in_questions = 0
    shown = []
    for sample in samples:
        tz = ZoneInfo(sample.get("timezone", language_of(sample)[1]))
        for at, user, reply in turns_of(sample["conversation"], tz):
            turns += 1
            found = resolve_dates([user, reply], at, tz)
            dated += bool(found)
            dates += len(found)
            now = at.astimezone(tz)
            for text in (user, reply):
                for sentence in re.findall(r"[^。！？!?.\n；;]+[。！？!?.\n；;]*", text):
                    ranges = past_ranges(sentence, parse_time_ranges(sentence, now=now), now)
                    if ranges and decide_for(sentence, ranges, now).use:
                        asked = {expr.text.strip() for expr, _ in ranges}
                        hit = [(p, label) for p, label in found if p in asked]
                        in_questions += len(hit)
                        shown += [f"{label}  {sentence[:100]}" for _, label in hit]
    print(f"turns {turns}  with dates {dated}  dates {dates}  dates of a time the turn asks about {in_questions}")
    for line in shown[: args.show]:
        print("   ", line)


if __name__ == "__main__":
    main()
