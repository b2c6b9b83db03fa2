"""The service under load: uvicorn with 2 workers on the Redis backend, a scripted upstream LLM.

50 concurrent clients x 20 turns for 10 users (5 clients per user; odd clients stream). Prints
requests/s and latency percentiles, and checks every user's history afterwards (nothing lost,
duplicated or out of order). Only the service and the short-term tier are measured: the diary,
core and world-book stores are turned off, and embeddings come from the scripted server.

    .venv/bin/python bench/bench_service.py [--clients 50] [--turns 20] [--users 10] [--workers 2]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from engine.testing.fake_openai import FakeOpenAIServer  # noqa: E402
from engine.testing.serve import ServiceProcess  # noqa: E402
from harness import chat_client, options  # noqa: E402
from redis_server import RedisServer  # noqa: E402

TOKEN = "bench-token"


@dataclass
class Outcome:
    """What one run did and what it left in the short-term store."""

    seconds: float
    latencies_ms: list[float]
    errors: list[str]
    sent: dict[int, list[str]]
    """Per client: the messages it sent, in order."""
    user_of: dict[int, str]
    histories: dict[str, list[dict]] = field(default_factory=dict)
    """Per user: the stored window messages (id, role, content, ...), oldest first."""

    @property
    def requests(self) -> int:
        return len(self.latencies_ms)

    def percentile(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, int(round(p / 100 * (len(data) - 1))))] if data else 0.0


def _serve_upstream(urls: "multiprocessing.Queue[str]", stop: "multiprocessing.synchronize.Event") -> None:
    with FakeOpenAIServer() as server:
        urls.put(server.base_url)
        stop.wait()


class UpstreamProcess:
    """The scripted upstream in its own process, so the load generator does not share its GIL."""

    def __enter__(self) -> str:
        ctx = multiprocessing.get_context("spawn")
        urls, self._stop = ctx.Queue(), ctx.Event()
        self._proc = ctx.Process(target=_serve_upstream, args=(urls, self._stop), daemon=True)
        self._proc.start()
        return urls.get(timeout=60)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join()


def write_config(root: Path, *, upstream: str, redis_url: str) -> Path:
    data = root / "data"
    shutil.copytree(ROOT / "data/agents/xiaoyue", data / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    config = {
        "data_dir": str(data),
        "llm": {"backend": "openai", "base_url": upstream, "model": "fake-model", "max_retries": 0, "timeout_s": 60},
        "memory_llm": {"backend": "none"},
        "embedder": {"backend": "openai", "base_url": upstream, "model": "fake-embed", "cache": False},
        "short_term": {"backend": "redis", "redis_url": redis_url, "max_messages": 1000, "max_tokens": 1_000_000},
        "diary": {"enabled": False},
        "core": {"enabled": False},
        "world_book": {"enabled": False},
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


async def _client(http: httpx.AsyncClient, c: int, user: str, turns: int, out: Outcome) -> None:
    out.sent[c] += await chat_client(http, model="xiaoyue", client=c, user=user, turns=turns,
                                     latencies_ms=out.latencies_ms, errors=out.errors)


async def _load(url: str, *, clients: int, users: int, turns: int) -> Outcome:
    out = Outcome(0.0, [], [], {c: [] for c in range(clients)}, {c: f"u{c % users:02d}" for c in range(clients)})
    limits = httpx.Limits(max_connections=clients + 5, max_keepalive_connections=clients + 5)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120,
                                 limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(_client(http, c, out.user_of[c], turns, out) for c in range(clients)))
        out.seconds = time.perf_counter() - t0
        for user in sorted(set(out.user_of.values())):
            r = await http.get(f"/v1/characters/xiaoyue/users/{user}/short-term")
            r.raise_for_status()
            out.histories[user] = r.json()["messages"]
    return out


def run_scenario(tmp: Path, *, clients: int = 50, users: int = 10, turns: int = 20, workers: int = 2) -> Outcome:
    """Start redis-server, the scripted upstream and uvicorn (`workers` processes); run the load."""
    with RedisServer(tmp / "redis") as redis_server, UpstreamProcess() as upstream_url:
        config = write_config(tmp, upstream=upstream_url, redis_url=redis_server.url)
        env = {"KIOKU_CONFIG": str(config), "KIOKU_API_TOKEN": TOKEN}
        with ServiceProcess(workers=workers, env=env, log_file=tmp / "uvicorn.log") as service:
            return asyncio.run(_load(service.url, clients=clients, users=users, turns=turns))


def main() -> None:
    args = options(__doc__, clients=50, users=10, turns=20, workers=2)
    with tempfile.TemporaryDirectory(prefix="kioku-bench-") as tmp:
        out = run_scenario(Path(tmp), clients=args.clients, users=args.users, turns=args.turns, workers=args.workers)
    stored = sum(len(h) for h in out.histories.values())
    print(f"{args.workers} workers, redis backend, {args.clients} clients x {args.turns} turns, {args.users} users")
    print(f"requests: {out.requests} in {out.seconds:.2f}s = {out.requests / out.seconds:.1f} req/s")
    print(f"latency ms: p50 {out.percentile(50):.1f}  p95 {out.percentile(95):.1f}  p99 {out.percentile(99):.1f}  "
          f"max {max(out.latencies_ms, default=0):.1f}  mean {statistics.fmean(out.latencies_ms or [0]):.1f}")
    print(f"errors: {len(out.errors)}; stored messages: {stored} (expected {2 * args.clients * args.turns})")
    for e in out.errors[:5]:
        print("  ", e)


if __name__ == "__main__":
    main()
