"""build_prompt p50 with the Postgres backend against the files backend, on the same data.

One user with `--turns` turns (synthetic, one every 20 minutes, Chinese and English mixed, a
vocabulary of topics) is written with the files backend's bulk import, then copied into Postgres
with `kioku db import`'s code; the same questions (content questions, and time questions that
pull a day) are asked through `MemoryOrchestrator.build_prompt` on each. Embeddings come from the
scripted OpenAI server's hashed 64-dim vectors for both (the embedder is the same cost on both
sides and is not what is compared). Prints p50 / p95 per backend and the ratio.

    .venv/bin/python bench/bench_pg_prompt.py [--turns 100000] [--queries 40] [--install pgserver|debian]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from engine.config import load_config  # noqa: E402
from engine.fake_openai import FakeOpenAIServer  # noqa: E402
from engine.orchestrator import MemoryOrchestrator  # noqa: E402
from engine.service.testing import copy_demo  # noqa: E402
from engine.stores.diary.entry import DiaryEntry  # noqa: E402
from pg_server import PgServer, find_install  # noqa: E402

TOPICS = ["火锅", "猫", "考试", "跑步", "咖啡", "电影", "rain", "piano", "hiking", "pizza", "重庆", "工作", "朋友", "生日"]
TZ = timezone(timedelta(hours=8))
T0 = datetime(2022, 1, 1, 9, 0, tzinfo=TZ)


def turns(n: int, rng: random.Random) -> list[DiaryEntry]:
    out = []
    for i in range(n):
        a, b = rng.sample(TOPICS, 2)
        at = T0 + timedelta(minutes=20 * i)
        out.append(DiaryEntry(f"t{i:07d}", at, a, f"今天聊到{a}和{b}，第{i}次 ({a} {b})", f"好呀，说说{a}吧 #{i}"))
    return out


def questions(n: int, rng: random.Random, last: datetime) -> list[tuple[str, datetime]]:
    out = []
    for i in range(n):
        topic = rng.choice(TOPICS)
        now = last - timedelta(days=rng.randint(0, 30))
        out.append((f"我们上次聊{topic}是什么时候？" if i % 2 else "昨天我们聊了什么？", now))
    return out


def config(data: Path, upstream: str, storage: dict | None) -> object:
    raw = {"data_dir": str(data), "memory_llm": {"backend": "none"},
           "embedder": {"backend": "openai", "base_url": upstream, "model": "fake-embed", "cache": False}}
    if storage:
        raw["storage"] = storage
    return load_config(overrides=raw, env={})


def timed(orch: MemoryOrchestrator, qs: list[tuple[str, datetime]]) -> list[float]:
    orch.build_prompt("warm up", user_id="bench")
    out = []
    for text, now in qs:
        t0 = time.perf_counter()
        orch.build_prompt(text, user_id="bench", now=now)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--install", default="pgserver", choices=["pgserver", "debian"])
    args = parser.parse_args()
    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="kioku-pg-prompt-"))
    server = PgServer(find_install(args.install)).start()
    try:
        with FakeOpenAIServer() as upstream:
            data = copy_demo(tmp / "data")
            files_cfg = config(data, upstream.base_url, None)
            t0 = time.perf_counter()
            with MemoryOrchestrator.from_config("xiaoyue", config=files_cfg) as orch:
                entries = turns(args.turns, rng)
                orch.store("diary").append_many("bench", entries)
            print(f"files: {args.turns} turns written and indexed in {time.perf_counter() - t0:.0f}s")
            conninfo = server.create_database("kioku", vector=args.install == "pgserver")
            pg_cfg = config(tmp / "empty", upstream.base_url, {"backend": "postgres", "url": conninfo})
            copy_demo(tmp / "empty")
            from engine.factory import make_embedder, make_timezone
            from engine.storage.postgres import Database, upgrade
            from engine.storage.postgres.backend import settings_of
            from engine.storage.postgres.transfer import import_character

            embedder = make_embedder(pg_cfg.embedder)
            with psycopg.connect(conninfo) as conn:
                state = upgrade(conn, dim=embedder.dim)
            t0 = time.perf_counter()
            with Database(settings_of(pg_cfg.storage)) as db:
                report = import_character(db, data, "xiaoyue", tz=make_timezone(pg_cfg.timezone), state=state,
                                          embed=lambda texts: embedder.embed(list(texts), role="passage"), progress=False)
            print(f"postgres ({state.describe()}): {report.turns_added} turns imported in {time.perf_counter() - t0:.0f}s")
            qs = questions(args.queries, rng, entries[-1].at)
            with MemoryOrchestrator.from_config("xiaoyue", config=files_cfg) as orch:
                files_ms = timed(orch, qs)
            with MemoryOrchestrator.from_config("xiaoyue", config=pg_cfg) as orch:
                pg_ms = timed(orch, qs)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def p(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]

    print(f"build_prompt, 1 user x {args.turns} turns, {args.queries} questions (half time questions):")
    print(f"  files:    p50 {p(files_ms, 50):.1f} ms  p95 {p(files_ms, 95):.1f} ms  mean {statistics.fmean(files_ms):.1f}")
    print(f"  postgres: p50 {p(pg_ms, 50):.1f} ms  p95 {p(pg_ms, 95):.1f} ms  mean {statistics.fmean(pg_ms):.1f}")
    print(f"  ratio postgres/files: p50 {p(pg_ms, 50) / p(files_ms, 50):.2f}  p95 {p(pg_ms, 95) / p(files_ms, 95):.2f}")


if __name__ == "__main__":
    main()
