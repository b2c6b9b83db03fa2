"""Experiment (not the engine): query expansion by vocabulary vectors, measured with bench_recall.

    PYTHONPATH=$PWD .venv/bin/python bench/exp_query_expansion.py --weight 2.0 --terms 16 -- --zh --data /tmp/rb

Everything after `--` goes to bench/bench_recall.py (use `--data` to reuse recorded users: recording
is most of a run). Each distinct content term of a user's search index (the BM25 vocabulary, its
stems as indexed) is embedded once as a passage, cached next to the recorded data
(`<index folder>.terms.npz`); a query then gains a sixth fused signal: BM25 of each candidate half
over the `--terms` vocabulary terms nearest the query vector that the query does not already
hold, fused by reciprocal rank with weight `--weight`. The rest of the ranking is unchanged.

This patches `engine.search.rank.search` in this process only, to measure the idea before it is
built as a component (term vectors kept with the index, caught up on the background worker, a
nearest-term graph, the Postgres worker's copy); see the closing note of issue 10. With
`--weight 0` it prints the engine's own numbers.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_recall  # noqa: E402

import engine.search.rank as rank  # noqa: E402
from engine.search.text import is_content  # noqa: E402

_TABLES: dict[str, tuple[list[str], np.ndarray]] = {}


def term_table(ix) -> tuple[list[str], np.ndarray]:
    """(content terms, their passage vectors) of one index, built once and cached on disk."""
    key = str(ix.folder)
    if key not in _TABLES:
        path = Path(f"{ix.folder}.terms.npz")
        names = [t for t in ix.bm25.vocab if is_content(t)]
        if path.exists():
            with np.load(path, allow_pickle=False) as npz:
                cached = [str(t) for t in npz["terms"]]
                vectors = npz["vectors"]
            if cached != names:
                path.unlink()
        if not path.exists():
            vectors = ix.embedder.embed(names, role="passage") if names else np.zeros((0, ix.dim), np.float32)
            np.savez(path, terms=np.array(names), vectors=np.asarray(vectors, np.float32))
        _TABLES[key] = (names, np.asarray(vectors, np.float32))
    return _TABLES[key]


def expansion(ix, vector: np.ndarray | None, content: set[str], m: int) -> list[str]:
    if vector is None or m <= 0:
        return []
    names, vectors = term_table(ix)
    out: list[str] = []
    for i in np.argsort(-(vectors @ vector)):
        if names[i] not in content:
            out.append(names[i])
            if len(out) >= m:
                break
    return out


def patch(weight: float, m: int) -> None:
    """A copy of rank.search with the sixth signal added; asserts the lines it edits are still there."""
    src = inspect.getsource(rank.search)
    after_lookup = "    agree_u = _lookup(lex.units, lex.unit_idf, halves)\n"
    after_fusion = "        + w[4] * _rrf(np.where(has, dx, -np.inf), k)\n"
    assert after_lookup in src and after_fusion in src, "engine.search.rank.search changed: update the experiment"
    src = src.replace(after_lookup, after_lookup + (
        "    extra = EXPANSION(ix, vector, content, TERMS)\n"
        "    lex_x = ix.bm25.score(extra, set(extra), ix.alive.view, ix.version) if extra else None\n"
        "    lx = _lookup(lex_x.units, lex_x.unit_scores, halves) if lex_x is not None else np.zeros(halves.shape, np.float32)\n"
    ))
    src = src.replace(after_fusion, after_fusion + "        + WEIGHT * _rrf(lx, k, positive_only=True)\n")
    namespace = dict(rank.__dict__, EXPANSION=expansion, TERMS=m, WEIGHT=weight)
    exec(compile(textwrap.dedent(src), "exp_query_expansion", "exec"), namespace)
    rank.search = namespace["search"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weight", type=float, default=2.0)
    parser.add_argument("--terms", type=int, default=16)
    args, rest = parser.parse_known_args()
    if args.weight > 0:
        patch(args.weight, args.terms)
        # Building a user's term vectors takes longer than a store may take to answer: allow it.
        opened = bench_recall.open_orch

        def open_orch(data, sample):
            orch = opened(data, sample)
            orch._reader.config = orch._reader.config.model_copy(update={"store_timeout_s": 600.0})
            return orch

        bench_recall.open_orch = open_orch
    sys.argv = ["bench_recall.py"] + [a for a in rest if a != "--"]
    bench_recall.main()


if __name__ == "__main__":
    main()
