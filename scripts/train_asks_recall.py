"""Train whether a message that names a past day asks to recall our talk of it
(engine/stores/diary/asking.py, `asks_recall`): a logistic regression per packaged embedding model
over the residual's embedding (the message without its time words and names), written with its
threshold (`flip_at`) to engine/stores/diary/asks_recall.json.

    PYTHONPATH=. .venv/bin/python scripts/train_asks_recall.py [--held-out]

The model backs the word rules of `recall.py` up: where they find no cue it fires at p >= `flip_at`;
where they fire it is not asked (a question about a day's facts, "5月4号的天气怎么样？", is answered
from that day whatever it asks; a veto below p 0.1 chosen the same way took such questions away).

Rows: asking (1) are tests/data/time_questions/ (minus the paraphrase set's held-out third),
tests/data/diary_recall.txt and the range and content templates of the trained blind sets
(`TRAINED_SETS`); not asking (0) are tests/data/diary_ordinary.txt and those sets' statements.
Training rows that are near copies of a held-out set's message, or of a recall bench's question, are
left out. The regularisation and the threshold are chosen by leaving one blind set out at a time
(trained on the rest, scored on it): a new set is what the threshold must hold on. `flip_at` is the
lowest that turns at most `STATEMENT_BUDGET` of the left-out statements the rules pass over into
recalls. `--held-out` also prints the held-out sets' rates (look once, at the end:
tests/test_asks_recall.py bounds them).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from engine.stores.diary.asking import RECALL_WEIGHTS
from engine.testing.time_questions import HELD_OUT_SETS, TRAINED_SETS, blind_set, corpus, load, residual_of, rules_answer

from train_ask_kind import NEAR_BENCH, NEAR_COPY, SCALE, bench_questions, embedders, fit, write_weights

LAMBDAS = (1e-4, 1e-3)
FLIP_GRID = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99)
STATEMENT_BUDGET = 0.005
"""Of the statements the rules rightly pass over, at most this share may the model turn into recalls:
the rules alone fire on ~3 % of the left-out sets' statements, the issue's bar."""


RULES_ALONE = 1.01
"""A threshold no probability reaches: the rules' own rates."""


def prob(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ w + b)))


def fired(p: np.ndarray, rules: np.ndarray, flip_at: float) -> np.ndarray:
    """The decision: the rules, and the model where they find no cue."""
    return rules | (p >= flip_at)


def rates(p: np.ndarray, asks: np.ndarray, ranged: np.ndarray, rules: np.ndarray, flip_at: float) -> tuple[float, float]:
    """(fired on messages that ask, fired on statements), over messages naming a range."""
    got = fired(p, rules, flip_at)
    return float(got[asks & ranged].mean()), float(got[~asks & ranged].mean())


def report_held_out(held: list, p: np.ndarray, ranged: np.ndarray, rules: np.ndarray, flip_at: float) -> None:
    """The held-out sets' rates before and after the model, per language, and each message it gets wrong."""
    asks = np.array([m.asks for m in held])
    before, after = rates(p, asks, ranged, rules, RULES_ALONE), rates(p, asks, ranged, rules, flip_at)
    print(f"  held-out sets {HELD_OUT_SETS}: questions fired {before[0]:.3f} -> {after[0]:.3f}, "
          f"statements fired {before[1]:.3f} -> {after[1]:.3f} ({len(held)} messages)")
    got = fired(p, rules, flip_at)
    by = defaultdict(list)
    for m, pm, r, f, g in zip(held, p, ranged, rules, got):
        if not r:
            continue
        by[(m.lang, "questions" if m.asks else "statements")].append(g)
        if g != m.asks:
            print(f"    {'missed' if m.asks else 'fired on'} p={pm:.2f} rules={'yes' if f else 'no'} {m.source}: {m.text}")
    for (lang, what), oks in sorted(by.items()):
        print(f"    {lang} {what}: fired {np.mean(oks):.3f} of {len(oks)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--held-out", action="store_true", help="also report the held-out sets")
    parser.add_argument("--out", type=Path, default=RECALL_WEIGHTS)
    args = parser.parse_args()
    fixed = [(q.text, True, q.source) for q in load() if not q.held_out]
    fixed += [(t, asks, at) for name, asks in (("diary_recall.txt", True), ("diary_ordinary.txt", False))
              for t, at in corpus(name)]
    sets = {n: blind_set(n) for n in TRAINED_SETS}
    held = [m for n in HELD_OUT_SETS for m in blind_set(n, fills=3)]
    rows = fixed + [(m.text, m.asks, m.source) for n in TRAINED_SETS for m in sets[n]]
    group = np.array([0] * len(fixed) + [n for n in TRAINED_SETS for _ in sets[n]])
    y = np.array([a for _, a, _ in rows], dtype=np.float64)
    ranged, rules = np.array([rules_answer(t) for t, _, _ in rows]).reshape(-1, 2).T
    held_ranged, held_rules = np.array([rules_answer(m.text) for m in held]).reshape(-1, 2).T
    benches = bench_questions()
    models = {}
    for embedder in embedders():
        x = embedder.embed([residual_of(t) or t for t, _, _ in rows], role="query").astype(np.float64)
        h = embedder.embed([residual_of(m.text) or m.text for m in held], role="query").astype(np.float64)
        near = (x @ h.T).max(axis=1) >= NEAR_COPY if len(held) else np.zeros(len(rows), bool)
        if benches:
            b = embedder.embed([residual_of(q) for q in benches], role="query").astype(np.float64)
            near |= (x @ b.T).max(axis=1) >= NEAR_BENCH
        keep = ~near
        xs = x * SCALE
        # Each trained set scored by a model that never saw it.
        out_of_set = {lam: np.full(len(rows), np.nan) for lam in LAMBDAS}
        for lam in LAMBDAS:
            for n in TRAINED_SETS:
                train = keep & (group != n)
                w, b0 = fit(xs[train], y[train], lam)
                part = group == n
                out_of_set[lam][part] = prob(xs[part], w, b0)
        scored = group > 0
        accuracy = {lam: float(((out_of_set[lam][scored] >= 0.5) == (y[scored] > 0.5)).mean()) for lam in LAMBDAS}
        lam = max(accuracy, key=lambda k: (accuracy[k], k))
        p, asks = out_of_set[lam][scored], y[scored] > 0.5
        rg, ru = ranged[scored], rules[scored]
        passed_over = ~asks & rg & ~ru
        flip_at = min((t for t in FLIP_GRID if (p[passed_over] >= t).mean() <= STATEMENT_BUDGET), default=RULES_ALONE)
        before, after = rates(p, asks, rg, ru, RULES_ALONE), rates(p, asks, rg, ru, flip_at)
        for t in FLIP_GRID:
            q, st = rates(p, asks, rg, ru, t)
            print(f"    left-out sets, fire at p >= {t}: questions fired {q:.3f}, statements fired {st:.3f}")
        print(f"{embedder.model_id}: {int(keep.sum())} training rows ({int(near.sum())} near copies left out); "
              "left-out-set accuracy " + ", ".join(f"λ={k:g} {v:.3f}" for k, v in accuracy.items()) + f"; chose λ={lam:g}")
        print(f"  threshold: fire at p >= {flip_at}; on the left-out sets, questions fired "
              f"{before[0]:.3f} -> {after[0]:.3f}, statements fired {before[1]:.3f} -> {after[1]:.3f}")
        w, b0 = fit(xs[keep], y[keep], lam)
        models[embedder.model_id] = {
            "weights": [round(float(v), 6) for v in w], "bias": round(b0, 6), "scale": SCALE, "lambda": lam,
            "thresholds": {"flip_at": flip_at}, "trained_on": int(keep.sum()),
            "left_out_set_accuracy": round(accuracy[lam], 4),
        }
        if args.held_out and held:
            report_held_out(held, prob(h * SCALE, w, b0), held_ranged, held_rules, flip_at)
    write_weights(args.out, models, about="Whether a message naming a past day asks to recall our talk of it "
                  "(engine/stores/diary/asking.py, asks_recall). Written by scripts/train_asks_recall.py; do not edit by hand.")


if __name__ == "__main__":
    main()
