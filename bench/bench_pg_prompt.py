"""build_prompt p50 with the Postgres backend against the files backend, on the same data.

`--users` users sharing `--turns` turns (synthetic, one every 20 minutes per user, Chinese and
English mixed, a vocabulary of topics) are written with the files backend's bulk import; the same
rows, with the vectors the files index computed, are copied into Postgres with COPY (`--copy`,
default; the bulk path for a benchmark) or with `kioku db import`'s code (`--copy off`, which
embeds again). The same questions (content questions, and time questions that pull a day) are
then asked through `MemoryOrchestrator.build_prompt` on each: the real prompt path (Postgres:
range scans, the worker's search copy caught up by `seq`, the shared ranking). Embeddings are the
scripted OpenAI server's hashed 64-dim bigram vectors, computed in process, for both (the embedder
is the same cost on both sides and is not what is compared).

`--asked` users (spread over the id range) get the questions. The first prompt of each (files:
opening the user's index; Postgres: building the worker's copy of it, once per user per worker
host) is timed apart; the timed questions then go round the asked users. Prints p50 / p95 per
backend and the ratio.

    .venv/bin/python bench/bench_pg_prompt.py [--turns 100000] [--users 1] [--queries 40] [--install pgserver|debian]
    .venv/bin/python bench/bench_pg_prompt.py --turns 1000000 --users 1000 --asked 40 --queries 200
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
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from engine.config import load_config  # noqa: E402
from engine.testing.fake_openai import FakeOpenAIServer  # noqa: E402
from engine.orchestrator import MemoryOrchestrator  # noqa: E402
from engine.paths import character_paths  # noqa: E402
from engine.testing.serve import copy_demo  # noqa: E402
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


def user_ids(n: int) -> list[str]:
    return ["bench"] if n == 1 else [f"u{i:04d}" for i in range(n)]


class HashedEmbedder:
    """The scripted server's hashed bigram vectors, computed in process (no HTTP per batch)."""

    model_id = "bench/hashed-64"
    dim = 64

    def __init__(self) -> None:
        from engine.adapters.embedder import OpenAIEmbedder

        self.default_thresholds = dict(OpenAIEmbedder.default_thresholds)

    def embed(self, texts, *, role="passage"):
        import numpy as np

        from engine.testing.fake_openai import hashed_embedding

        return np.array([hashed_embedding(t, self.dim) for t in texts], dtype=np.float32).reshape(-1, self.dim)


def questions(n: int, rng: random.Random, users: list[str], last: datetime, first: datetime
              ) -> list[tuple[str, str, datetime]]:
    """(user, message, now), going round `users`; `now` within the user's last 30 days."""
    out = []
    days = max(0, min(30, (last - first).days - 1))
    for i in range(n):
        topic = rng.choice(TOPICS)
        now = last - timedelta(days=rng.randint(0, days))
        out.append((users[i % len(users)], f"我们上次聊{topic}是什么时候？" if i % 2 else "昨天我们聊了什么？", now))
    return out


def config(data: Path, upstream: str, storage: dict | None) -> object:
    raw = {"data_dir": str(data), "memory_llm": {"backend": "none"},
           "embedder": {"backend": "openai", "base_url": upstream, "model": "fake-embed", "cache": False,
                                "batch_size": 256}}
    if storage:
        raw["storage"] = storage
    return load_config(overrides=raw, env={})


def timed(orch: MemoryOrchestrator, qs: list[tuple[str, str, datetime]], label: str) -> list[float]:
    users = list(dict.fromkeys(u for u, _, _ in qs))
    mirror = getattr(orch.store("diary").backend, "mirror", None)
    first: list[float] = []
    t0 = time.perf_counter()
    for user in users:
        t1 = time.perf_counter()
        orch.build_prompt("我们上次聊猫是什么时候？", user_id=user)
        first.append((time.perf_counter() - t1) * 1000)
    print(f"{label}: first prompt of {len(users)} user(s): p50 {statistics.median(first):.0f} ms, "
          f"max {max(first):.0f} ms")
    if mirror is not None:
        # A fresh worker builds its copy of a user's index in the background (the first prompts
        # search in SQL meanwhile): wait for every asked user's, so the timed prompts run the copy.
        from engine.search.base import SearchRequest

        cold: list[float] = []
        for user in users:
            while mirror.search(user, SearchRequest(text="猫", vector=None, k=1)) is None:
                _, text, now = next(q for q in qs if q[0] == user)
                t1 = time.perf_counter()
                orch.build_prompt(text, user_id=user, now=now)  # the SQL search meanwhile
                cold.append((time.perf_counter() - t1) * 1000)
                time.sleep(0.2)
        print(f"{label}: the worker's copies of {len(users)} user(s)' search indexes built "
              f"{time.perf_counter() - t0:.0f}s after the first prompt; {len(cold)} prompts meanwhile (SQL search): "
              + (f"p50 {statistics.median(cold):.0f} ms" if cold else "none"))
    out = []
    parts: dict[str, list[float]] = {}
    for user, text, now in qs:
        t0 = time.perf_counter()
        result = orch.build_prompt(text, user_id=user, now=now)
        out.append((time.perf_counter() - t0) * 1000)
        for key, ms in result.timings_ms.items():
            parts.setdefault(key, []).append(ms)
    print(f"{label}: p50 by part (ms): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in parts.items()))
    return out


def copy_in(conninfo: str, state, paths, users: list[str], entries: list[DiaryEntry], embedder) -> int:
    """Each user's turns and the files index's vectors into diary_turns / turn_search with COPY
    (a staging table; the tsvector is made in SQL as `PgTurnSearch.add` makes it)."""
    with psycopg.connect(conninfo) as conn:
        conn.execute("CREATE TEMP TABLE stage (turn_id text, at timestamptz, at_off int, local_day date, tag text, "
                     "user_text text, assistant_text text, doc text, whole bytea, whole_text text, halves bytea)")
        for user in (tqdm(users, desc="COPY", unit="user") if len(users) > 1 else users):
            _copy_user(conn, state, paths.user(user).cache, user, entries, embedder)
            conn.commit()
    return len(users) * len(entries)


def _copy_user(conn, state, user_cache: Path, user: str, entries: list[DiaryEntry], embedder) -> None:
    import numpy as np

    from engine.search.files import FileTurnIndex
    from engine.backends.postgres.lexical import document_text
    from engine.backends.postgres.owners import Owners

    ix = FileTurnIndex(user_cache / "diary" / "search", embedder)
    vectors = np.asarray(ix.vectors.matrix(), dtype=np.float32)
    row_of = ix.row_of
    owner = Owners("xiaoyue").get(conn, user)
    conn.execute("TRUNCATE stage")
    with conn.cursor().copy("COPY stage FROM STDIN") as cp:
        for e in entries:
            v = vectors[row_of[e.id]]
            off = int(e.at.utcoffset().total_seconds())
            cp.write_row((e.id, e.at, off, e.at.date(), e.tag, e.user, e.assistant, document_text(e.user, e.assistant),
                          v[2].astype("<f4").tobytes(), "[" + ",".join(map(repr, v[2].tolist())) + "]",
                          v[:2].astype("<f2").tobytes()))
    conn.execute("INSERT INTO diary_turns (owner_id, turn_id, at, at_off, local_day, tag, user_text, assistant_text) "
                 "SELECT %s, turn_id, at, at_off, local_day, tag, user_text, assistant_text FROM stage", (owner,))
    column, value = ("embedding", "whole_text::vector") if state.vector_mode == "pgvector" else ("vec", "whole")
    conn.execute(
        f"INSERT INTO turn_search (owner_id, turn_id, at, lexemes, {column}, halves) SELECT %s, turn_id, at, "
        f"array_to_tsvector(ARRAY[%s]) || to_tsvector(%s::regconfig, doc), {value}, halves FROM stage ORDER BY at",
        (owner, f"owner {owner}", state.lexical_config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000, help="turns in all, shared equally by the users")
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--asked", type=int, default=10, help="users that get the questions (when --users > 1)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--install", default="pgserver", choices=["pgserver", "debian"])
    parser.add_argument("--copy", default="on", choices=["on", "off"],
                        help="on: COPY the files rows and vectors in; off: kioku db import (embeds again)")
    args = parser.parse_args()
    rng = random.Random(7)
    users = user_ids(args.users)
    per_user = args.turns // len(users)
    asked = users[:: max(1, len(users) // args.asked)][: args.asked] if len(users) > 1 else users
    tmp = Path(tempfile.mkdtemp(prefix="kioku-pg-prompt-"))
    server = PgServer(find_install(args.install)).start()
    try:
        with FakeOpenAIServer() as upstream:
            data = copy_demo(tmp / "data")
            files_cfg = config(data, upstream.base_url, None)
            t0 = time.perf_counter()
            hashed = HashedEmbedder()
            # Every user has the same turns (ids are per user): the cost of search and ranking
            # depends on how many turns a user has, not on which.
            entries = turns(per_user, rng)
            with MemoryOrchestrator.from_config("xiaoyue", config=files_cfg, embedder=hashed) as orch:
                for user in (tqdm(users, desc="files", unit="user") if len(users) > 1 else users):
                    orch.store("diary").append_many(user, entries)
            print(f"files: {len(users)} user(s) x {per_user} turns written and indexed in {time.perf_counter() - t0:.0f}s")
            conninfo = server.create_database("kioku", vector=args.install == "pgserver")
            pg_cfg = config(tmp / "empty", upstream.base_url, {"backend": "postgres", "url": conninfo})
            copy_demo(tmp / "empty")
            from engine.factory import make_embedder, make_timezone
            from engine.backends.postgres import Database, upgrade
            from engine.backends.postgres.backend import settings_of
            from engine.backends.postgres.transfer import import_character

            embedder = hashed if args.copy == "on" else make_embedder(pg_cfg.embedder)
            with psycopg.connect(conninfo) as conn:
                state = upgrade(conn, dim=embedder.dim)
            t0 = time.perf_counter()
            if args.copy == "on":
                n = copy_in(conninfo, state, character_paths(data, "xiaoyue"), users, entries, embedder)
                how = "copied with COPY (files rows and vectors)"
            else:
                with Database(settings_of(pg_cfg.storage)) as db:
                    n = import_character(db, data, "xiaoyue", tz=make_timezone(pg_cfg.timezone), state=state,
                                         embed=lambda texts: embedder.embed(list(texts), role="passage"),
                                         progress=False).turns_added
                how = "imported (kioku db import)"
            print(f"postgres ({state.describe()}): {n} turns {how} in {time.perf_counter() - t0:.0f}s")
            with psycopg.connect(conninfo) as conn:
                size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
                conn.execute("ANALYZE")
            print(f"postgres: database size {size}")
            qs = questions(args.queries, rng, asked, entries[-1].at, entries[0].at)
            with MemoryOrchestrator.from_config("xiaoyue", config=files_cfg, embedder=hashed) as orch:
                files_ms = timed(orch, qs, "files")
            with MemoryOrchestrator.from_config("xiaoyue", config=pg_cfg, embedder=hashed) as orch:
                pg_ms = timed(orch, qs, "postgres")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def p(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]

    print(f"build_prompt, {len(users)} user(s) x {per_user} turns, {args.queries} questions to {len(asked)} of them "
          "(half time questions):")
    print(f"  files:    p50 {p(files_ms, 50):.1f} ms  p95 {p(files_ms, 95):.1f} ms  mean {statistics.fmean(files_ms):.1f}")
    print(f"  postgres: p50 {p(pg_ms, 50):.1f} ms  p95 {p(pg_ms, 95):.1f} ms  mean {statistics.fmean(pg_ms):.1f}")
    print(f"  ratio postgres/files: p50 {p(pg_ms, 50) / p(files_ms, 50):.2f}  p95 {p(pg_ms, 95) / p(files_ms, 95):.2f}")


if __name__ == "__main__":
    main()
