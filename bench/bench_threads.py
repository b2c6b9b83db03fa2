"""Why `configure_threads()` gives BLAS one thread: the embedding call right after a diary search.

    .venv/bin/python bench/bench_threads.py [--diary-turns 100000] [--repeat 30]

A user with that many diary turns (day files and a search index with synthetic vectors, as in
bench_prompt.py); the real default embedder embeds the two texts a prompt embeds. Timed: the
embedding call after another embedding call, and right after a diary search, first with BLAS's
default thread count (one per core), then with one BLAS thread (`threadpoolctl`, as
`engine.runtime.configure_threads()` sets it). After a small matrix product OpenBLAS's idle workers
spin on every core for a while, and the embedding model needs those cores. Prints numbers and
ratios; asserts nothing.
"""

from __future__ import annotations

from datetime import timedelta

from bench_prompt import write_diary
from harness import NOW, character_folder, offline_config, options, report, timed

from engine.orchestrator import MemoryOrchestrator
from engine.search.base import SearchRequest


def main() -> None:
    args = options(__doc__, diary_turns=100_000, repeat=30)
    import faiss
    from threadpoolctl import threadpool_info, threadpool_limits

    faiss.omp_set_num_threads(1)  # FAISS as configure_threads() sets it; BLAS is what is compared
    now = NOW
    with character_folder() as data:
        write_diary(data, "bench", args.diary_turns, end=now - timedelta(days=1))
        config = offline_config(data)
        with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
            message = "我想坐缆车去上城看看"
            batch = [f"{message}\n上一轮：今天天气怎么样，我们去哪里玩比较好呢？", message]
            vector = orch.embedder.embed([message], role="query")[0]
            index = orch.store("diary").backend.user("bench").search
            request = SearchRequest(text=message, vector=vector, k=80)
            blas = sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
            print(f"{args.diary_turns} diary turns; BLAS threads by default: {blas}")

            def embed_after(before) -> list[float]:
                samples = []
                for _ in range(args.repeat):
                    before()
                    samples += timed(lambda: orch.embedder.embed(batch, role="query"), 1)
                return samples

            results = {}
            for label, limit in (("default BLAS threads", None), ("one BLAS thread", 1)):
                with threadpool_limits(limits=limit, user_api="blas"):
                    alone = embed_after(lambda: None)
                    after = embed_after(lambda: index.search(request))
                base = sorted(alone)[len(alone) // 2]
                report(f"{label}: embedding call after an embedding call", alone)
                report(f"{label}: embedding call right after a diary search", after, baseline_ms=base)
                results[label] = sorted(after)[len(after) // 2]
            print(f"embedding after a search, one BLAS thread against the default: "
                  f"{results['one BLAS thread'] / results['default BLAS threads']:.2f}x")


if __name__ == "__main__":
    main()
