"""Core memory: retrieval latency beyond the query embedding, opening a big user with a warm cache,
and adding facts one by one.

    .venv/bin/python bench/bench_core.py [--sizes 10000 100000] [--queries 500] [--opens 5]
    .venv/bin/python bench/bench_core.py --growth 20000 [--marks 2000 8000 20000]

`--growth N` adds N distinct facts one by one through `add_fact` (near-duplicate guard on, each add
its own locked, fsynced write) and prints the cumulative time at each mark and the time per fact
between marks: with amortised growth those stay flat.

Fact vectors come from a fast deterministic 384-d embedder (the dimension of the default
multilingual-e5-small), because what is measured here is the store's own work: the FAISS scan,
the threshold, the hit rendering, the cache, the file writes. The query embedding is computed once
per call by the orchestrator and is not part of these numbers; the real embedder would add a
constant ~10-20 ms per added fact and dominate the growth numbers without changing their shape.

Opening is timed two ways, each on a fresh store over the same warm cache, `--opens` times (p50):
"open→retrieve" is what a chat turn pays (load the cache, answer one query); "open→list" also
builds every `Fact` object, as `facts()` does for the API and the CLI.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from engine.adapters.embedder import normalise
from engine.config import CoreConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Query
from engine.stores.core import CoreMemoryStore

TZ = ZoneInfo("Asia/Shanghai")


class HashEmbedder:
    model_id = "bench/hash-384"
    dim = 384
    default_thresholds = {"core": 0.2, "core_duplicate": 0.99}

    def embed(self, texts, *, role="passage"):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[row] = np.random.default_rng(seed).standard_normal(self.dim)
        return normalise(out)


def make_store(root: Path) -> CoreMemoryStore:
    return CoreMemoryStore(paths=CharacterPaths(root), config=CoreConfig(), embedder=HashEmbedder(), llm=None,
                           prompts=Prompts("zh"), tz=TZ)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def open_ms(root: Path, size: int, vector: np.ndarray, *, listing: bool) -> float:
    t = time.perf_counter()
    store = make_store(root)
    if listing:
        assert len(store.facts("u")) == size
    else:
        store.retrieve(Query(message="?", user_id="u", now=datetime(2026, 1, 1, tzinfo=TZ), recent=(), text="?",
                             vector=vector))
    return (time.perf_counter() - t) * 1000


def run(size: int, queries: int, opens: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        start = datetime(2026, 1, 1, tzinfo=TZ)
        make_store(root).import_facts("u", ((f"事实{i}：用户喜欢第{i}号东西", start + timedelta(minutes=i)) for i in range(size)))
        build_s = time.perf_counter() - t

        rng = np.random.default_rng(0)
        vectors = normalise(rng.standard_normal((queries, 384)))
        to_retrieve = [open_ms(root, size, vectors[0], listing=False) for _ in range(opens)]
        to_list = [open_ms(root, size, vectors[0], listing=True) for _ in range(opens)]

        store = make_store(root)
        assert len(store.facts("u")) == size
        times = []
        for v in vectors:
            q = Query(message="?", user_id="u", now=start, recent=(), text="?", vector=v)
            t = time.perf_counter()
            store.retrieve(q)
            times.append((time.perf_counter() - t) * 1000)
        file_mb = (root / "users/u/core_mem.yml").stat().st_size / 1e6
        print(f"{size:>7} facts  retrieve p50 {pct(times, 50):6.2f} ms  p95 {pct(times, 95):6.2f} ms  "
              f"mean {statistics.mean(times):6.2f} ms | warm open→retrieve p50 {pct(to_retrieve, 50):5.0f} ms, "
              f"open→list p50 {pct(to_list, 50):5.0f} ms (max {max(to_list):5.0f}) | "
              f"first build {build_s:5.1f} s | core_mem.yml {file_mb:.1f} MB")


def growth(total: int, marks: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp))
        start = datetime(2026, 1, 1, tzinfo=TZ)
        t0 = time.perf_counter()
        last_n, last_t = 0, 0.0
        for i in range(total):
            store.add_fact("u", f"事实{i}：用户喜欢第{i}号东西", at=start + timedelta(seconds=i))
            n = i + 1
            if n in marks or n == total:
                elapsed = time.perf_counter() - t0
                per = (elapsed - last_t) / (n - last_n) * 1000
                print(f"{n:>7} facts added one by one: {elapsed:7.1f} s total, {per:5.2f} ms per fact since {last_n}",
                      flush=True)
                last_n, last_t = n, elapsed
        store.close()
        assert len(store.facts("u")) == total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--opens", type=int, default=5, help="warm opens timed per size and way (p50 reported)")
    parser.add_argument("--growth", type=int, default=0, help="add this many facts one by one instead")
    parser.add_argument("--marks", type=int, nargs="+", default=[2_000, 8_000, 20_000])
    args = parser.parse_args()
    if args.growth:
        growth(args.growth, args.marks)
        return
    for size in args.sizes:
        run(size, args.queries, args.opens)


if __name__ == "__main__":
    main()
