"""Core memory's offline fact rules (no LLM configured) on what users tell about themselves.

    .venv/bin/python bench/bench_core_facts.py bench/core_facts/set1.json [--misses]

A set (written blind by someone who saw neither the rules nor this bench) holds, per language,
`disclosure` messages, each with the durable facts about the user it tells and, per fact, the
words of the message a stored fact must hold one of ("allergic to peanuts" -> ["peanuts"]), and
`none` messages that tell nothing durable about the user (today's mood, a question, a friend's
fact, a hypothetical). Through `engine.stores.core.statements`, the function the offline
extractor writes facts from, it counts:

- facts kept: the told facts that some extracted fact holds a word of;
- messages kept whole: disclosures all of whose facts are kept;
- false facts: `none` messages from which any fact was extracted.

Prints the counts per language (and per category with `--misses`, beside each miss and each
false fact); asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from engine.stores.core import statements


def _holds(fact_texts: list[str], words: list[str]) -> bool:
    return any(w.lower() in t.lower() for t in fact_texts for w in words)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set", type=Path)
    ap.add_argument("--misses", action="store_true", help="print each miss, each false fact and the categories")
    args = ap.parse_args()
    data = json.loads(args.set.read_text(encoding="utf-8"))
    for language, kinds in data.items():
        told = kept = whole = 0
        by_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for item in kinds["disclosure"]:
            got = [s.text for s in statements(item["text"])]
            hits = [_holds(got, f["must"]) for f in item["facts"]]
            told += len(hits)
            kept += sum(hits)
            whole += all(hits)
            by_category[item.get("category", "?")][0] += sum(hits)
            by_category[item.get("category", "?")][1] += len(hits)
            if args.misses and not all(hits):
                missed = [f["fact"] for f, hit in zip(item["facts"], hits) if not hit]
                print(f"  miss {language}: {item['text']}  ->  {got}  (missed: {missed})")
        false = 0
        for item in kinds["none"]:
            got = [s.text for s in statements(item["text"])]
            false += bool(got)
            if args.misses and got:
                print(f"  false {language}: {item['text']}  ->  {got}")
        if args.misses:
            for category, (hit, n) in sorted(by_category.items()):
                print(f"  {language} {category}: {hit}/{n}")
        n_msgs, n_none = len(kinds["disclosure"]), len(kinds["none"])
        print(f"{language}: facts kept {kept}/{told} ({kept / told:.3f}); messages kept whole {whole}/{n_msgs} "
              f"({whole / n_msgs:.3f}); false facts {false}/{n_none} ({false / n_none:.3f})")


if __name__ == "__main__":
    main()
