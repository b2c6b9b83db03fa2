"""Durable writes through the real service: `kioku serve --workers N`, every store on, many clients.

For each configuration (files or Redis for the window; 2 or 4 uvicorn worker processes) the run
starts the scripted upstream LLM (its own process), a real `redis-server` when needed, and
`kioku serve --workers N` on 127.0.0.1, then at the same time:

- `--clients` clients send `--turns` turns each through `/v1/chat/completions`, one after another,
  spread over `--users` users (odd clients stream);
- `--facts` concurrent `POST /v1/characters/xiaoyue/users/u00/facts`, each a different fact, and
  `--edits` concurrent `PUT`s of as many facts posted before the load (an edit rewrites the whole
  fact file: the path where a missing inter-process lock loses other writers' facts).

The diary, core memory and world book are on (memory writing uses the offline fallbacks;
embeddings come from the scripted server). Once every request is answered, the run waits for
the service's own workers to drain the journals (read from the journal files, running nothing),
stops the service, and checks the stores through the library (`orch.admin`, the window):

- lost: an acknowledged turn missing from the short-term memory (the window, or the summary it
  was folded into) or from the diary;
- dup: a turn stored twice (window or diary), or a fact stored twice;
- order: a client's turns out of the order it sent them (window or diary), or a question whose
  stored reply is not its own;
- facts lost: a fact answered 201 (or an edit answered 200) and missing from `core_mem.yml`;
  facts extra: a live fact nobody asked for (a second copy, an edit's old text);
- jobs: unfinished or failed journal jobs after the drain; unreadable: every store's problems,
  unreadable journal lines, `*.corrupt` files.

    .venv/bin/python bench/bench_serve_load.py [--clients 50] [--turns 20] [--users 10] [--facts 100]
        [--edits 20]
        [--backends files,redis] [--workers 2,4]

`tests/test_serve_workers.py` runs a smaller version and fails on any nonzero count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import string
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_service import UpstreamProcess  # noqa: E402
from harness import chat_client  # noqa: E402
from engine.character import open_character  # noqa: E402
from engine.testing.serve import ServiceProcess, copy_demo  # noqa: E402
from redis_server import RedisServer  # noqa: E402

TOKEN = "bench-token"
CHARACTER = "xiaoyue"
FACT_USER = "u00"
STORES = ("world_book", "core", "diary")
"""The stores the service runs; their journal jobs are `<store>.record` (and the summary fold)."""


# -- the service --------------------------------------------------------------------------------


class KiokuServeWorkers(ServiceProcess):
    """`kioku serve --config <config> --port <free port> --workers N` as a process."""

    def __init__(self, config: Path, *, workers: int, env: dict[str, str | None], log_file: Path) -> None:
        super().__init__(workers=workers, env=env, log_file=log_file)
        self.config = config

    def command(self) -> list[str]:
        return [sys.executable, "-m", "engine.cli", "serve", "--config", str(self.config), "--port", str(self.port),
                "--workers", str(self.workers)]


def write_config(root: Path, *, upstream: str, backend: str, redis_url: str | None, window: int) -> Path:
    """Every store on. A window of `window` messages: older turns fold into the summary (a journal job
    after each turn), which keeps every folded message's text (offline summary, no length limit),
    so summary + window is every turn in recording order."""
    data = copy_demo(root / "data", as_id=CHARACTER)
    short_term: dict[str, Any] = {
        "backend": "file" if backend == "files" else backend, "max_messages": window, "max_tokens": 10_000_000,
        "summary_max_words": 10_000_000, "summary_max_tokens": 10_000_000, "llm_input_tokens": 10_000_000,
    }
    if redis_url:
        short_term["redis_url"] = redis_url
    config = {
        "data_dir": str(data),
        "llm": {"backend": "openai", "base_url": upstream, "model": "fake-model", "max_retries": 0, "timeout_s": 60},
        "memory_llm": {"backend": "none"},
        "embedder": {"backend": "openai", "base_url": upstream, "model": "fake-embed", "cache": False},
        "short_term": short_term,
        "service": {"allow_edit": True},
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


# -- the load ----------------------------------------------------------------------------------


@dataclass
class Load:
    """What the clients sent and what the service answered."""

    seconds: float = 0.0
    chat_ms: list[float] = field(default_factory=list)
    fact_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: dict[int, list[str]] = field(default_factory=dict)
    """Per client: the messages answered 200, in the order it sent them."""
    user_of: dict[int, str] = field(default_factory=dict)
    facts: dict[str, str] = field(default_factory=dict)
    """Fact text -> its id, for every fact that should be live at the end (posted, or edited to it)."""


def fact_texts(count: int, *, seed: int = 7, prefix: str = "事实") -> list[str]:
    """Distinct facts far apart (random words), so no near-duplicate guard merges two of them."""
    rng = random.Random(seed)
    return [f"{prefix}{i:03d} 记得 {''.join(rng.choice(string.ascii_lowercase) for _ in range(16))}" for i in range(count)]


async def _chat_client(http: httpx.AsyncClient, c: int, turns: int, out: Load) -> None:
    out.sent[c] += await chat_client(http, model=CHARACTER, client=c, user=out.user_of[c], turns=turns,
                                     latencies_ms=out.chat_ms, errors=out.errors)


async def _fact_request(http: httpx.AsyncClient, method: str, path: str, text: str, expect: int, label: str,
                        out: Load) -> Any:
    """One timed fact request; the response when it answered `expect`, else None (the error noted)."""
    t0 = time.perf_counter()
    try:
        r = await http.request(method, f"/v1/characters/{CHARACTER}/users/{FACT_USER}/facts{path}", json={"text": text})
    except httpx.HTTPError as exc:
        out.errors.append(f"{label}: {type(exc).__name__}: {exc}")
        return None
    out.fact_ms.append((time.perf_counter() - t0) * 1000)
    if r.status_code != expect:
        out.errors.append(f"{label}: HTTP {r.status_code}: {r.text[:200]}")
        return None
    return r


async def _post_fact(http: httpx.AsyncClient, text: str, out: Load) -> None:
    r = await _fact_request(http, "POST", "", text, 201, f"fact {text!r}", out)
    if r is not None:
        out.facts[text] = r.json()["id"]


async def _edit_fact(http: httpx.AsyncClient, fact_id: str, old: str, text: str, out: Load) -> None:
    if await _fact_request(http, "PUT", f"/{fact_id}", text, 200, f"edit {fact_id}", out) is not None:
        del out.facts[old]
        out.facts[text] = fact_id


STAGGER_S = 0.01
"""Gap between opening two clients' connections before the start (see `drive`)."""


async def _connect(url: str, i: int) -> httpx.AsyncClient:
    """A client with one kept-alive connection, opened `i * STAGGER_S` after the start."""
    http = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300,
                             limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
    await asyncio.sleep(i * STAGGER_S)
    (await http.get("/health")).raise_for_status()
    return http


async def drive(url: str, *, clients: int, users: int, turns: int, facts: int, edits: int = 0) -> Load:
    """Every chat client, fact post and edit has its own connection, opened one at a time before the
    start (uvicorn's workers share one listening socket and asyncio accepts the whole backlog at
    once: connections opened together all go to the worker that wakes first, which would pin the
    load on one process); then everything starts at once."""
    out = Load(sent={c: [] for c in range(clients)}, user_of={c: f"u{c % users:02d}" for c in range(clients)})
    seeded = fact_texts(edits, seed=8, prefix="旧事实")
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300) as http:
        for text in seeded:  # before the load, one at a time: the facts the load edits
            await _post_fact(http, text, out)
    out.fact_ms.clear()
    # Opened after the seeding: an idle connection is closed by the server after 5 s.
    conns = await asyncio.gather(*(_connect(url, i) for i in range(clients + facts + edits)))
    try:
        chats = [_chat_client(conns[c], c, turns, out) for c in range(clients)]
        posts = [_post_fact(conns[clients + i], text, out) for i, text in enumerate(fact_texts(facts))]
        changes = [_edit_fact(conns[clients + facts + i], out.facts[old], old, new, out)
                   for i, (old, new) in enumerate(zip(seeded, fact_texts(edits, seed=9, prefix="改过的事实")))
                   if old in out.facts]
        t0 = time.perf_counter()
        await asyncio.gather(*chats, *posts, *changes)
        out.seconds = time.perf_counter() - t0
    finally:
        await asyncio.gather(*(c.aclose() for c in conns))
    return out


# -- the checks --------------------------------------------------------------------------------


@dataclass
class Counts:
    """What the stores hold against what was acknowledged; every count but `acked*` should be 0."""

    acked_turns: int = 0
    acked_facts: int = 0
    errors: int = 0
    """Requests that failed (HTTP status or transport error)."""
    lost_window: int = 0
    lost_diary: int = 0
    dup_window: int = 0
    dup_diary: int = 0
    order_window: int = 0
    order_diary: int = 0
    facts_lost: int = 0
    facts_extra: int = 0
    jobs_open: int = 0
    jobs_failed: int = 0
    unreadable: int = 0
    drain_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    """The first few findings, readable."""

    def bad(self) -> dict[str, int]:
        skip = {"acked_turns", "acked_facts", "drain_s", "notes"}
        return {k: v for k, v in vars(self).items() if k not in skip and v}

    def note(self, text: str) -> None:
        if len(self.notes) < 20:
            self.notes.append(text)


def journal_reader(data_dir: Path) -> Any:
    """The journal's own status logic over the files, with no store or worker behind it: it reads
    and runs nothing, so what it reports is what the service left."""
    from engine.journal import Journal
    from engine.paths import character_paths

    stores = [SimpleNamespace(name=n, forget=lambda *a: 0) for n in STORES]
    return Journal(character_paths(data_dir, CHARACTER), short_term=None, stores=stores, worker=None)  # type: ignore[arg-type]


def wait_drained(data_dir: Path, timeout: float) -> tuple[float, Any]:
    """Seconds until no journal job is open (or `timeout`), and the last status read."""
    reader, t0 = journal_reader(data_dir), time.monotonic()
    while True:
        status = reader.status()
        if not status.users or time.monotonic() - t0 > timeout:
            return time.monotonic() - t0, status
        time.sleep(0.2)


def _in_order(stored: list[str], sent: list[str]) -> bool:
    return [t for t in stored if t in set(sent)] == sent


def check_stores(config_path: Path, load: Load, counts: Counts) -> None:
    """Compare what the service left (after it stopped) with `load`: the windows read through the
    short-term backend alone (nothing heals them first), then the diary, the facts and every store's
    problems through the library."""
    from engine.config import open_config
    from engine.factory import make_short_term_backend
    from engine.orchestrator import MemoryOrchestrator
    from engine.paths import character_paths

    config = open_config(path=config_path)
    data_dir = Path(config.data_dir)
    counts.acked_turns = sum(len(s) for s in load.sent.values())
    counts.acked_facts = len(load.facts)
    users = sorted(set(load.user_of.values()))
    clients_of = {u: [c for c, v in load.user_of.items() if v == u] for u in users}
    backend = make_short_term_backend(config, character_paths(data_dir, CHARACTER))
    said = f"{open_character(CHARACTER, config).character.user_name}: "
    for user in users:
        acked = [t for c in clients_of[user] for t in load.sent[c]]
        state = backend.load(user)
        counts.unreadable += len(state.problems)
        for p in state.problems:
            counts.note(f"{user} window: {p}")
        for q, a in zip(state.messages[::2], state.messages[1::2]):
            if (q.role, a.role, a.content) != ("user", "assistant", f"echo: {q.content}"):
                counts.order_window += 1
                counts.note(f"{user} window: {q.role} {q.content!r} followed by {a.role} {a.content!r}")
        # The offline summary keeps a line `<user name>: <message>` per folded user message, in fold order.
        folded = [line[len(said):] for line in state.brain.historical_summary.split("\n") if line.startswith(said)]
        questions = [m.content for m in state.messages if m.role == "user"]
        _compare(counts, "window", user, folded + questions, acked, load, clients_of[user])
    with MemoryOrchestrator.from_config(CHARACTER, config=config) as orch:
        for user in users:
            acked = [t for c in clients_of[user] for t in load.sent[c]]
            entries = orch.admin.diary(user, datetime(2000, 1, 1, tzinfo=timezone.utc),
                                       datetime(2100, 1, 1, tzinfo=timezone.utc))
            _compare(counts, "diary", user, [e.user for e in entries], acked, load, clients_of[user])
        # Every fact answered 201 (or edited, 200) is live once, under its id, and nothing else is.
        live = {f.id: f.text for f in orch.admin.facts.list(FACT_USER)}
        for text, fact_id in load.facts.items():
            if live.get(fact_id) != text:
                counts.facts_lost += 1
                counts.note(f"fact lost: {fact_id} should say {text!r}, has {live.get(fact_id)!r}")
        extra = [(i, t) for i, t in live.items() if load.facts.get(t) != i]
        counts.facts_extra += len(extra)
        for i, t in extra[:3]:
            counts.note(f"fact nobody asked for: {i} {t!r}")
        store_problems = [p for s in orch.admin.status().stores for p in s.problems]
        counts.unreadable += len(store_problems)
        for p in store_problems:
            counts.note(f"store: {p}")
    corrupt = sorted(p for p in data_dir.rglob("*.corrupt*"))
    counts.unreadable += len(corrupt)
    for p in corrupt:
        counts.note(f"set aside: {p.relative_to(data_dir)}")


def count_jobs(counts: Counts, status: Any) -> None:
    """Open and failed jobs, unreadable journal lines, from a journal status read after the drain."""
    counts.jobs_open += status.pending
    counts.jobs_failed += status.failed
    counts.unreadable += sum(len(u.problems) for u in status.users)
    for line in status.lines(limit=5)[1:] if status.users else []:
        counts.note(f"journal: {line.strip()}")


def _compare(counts: Counts, where: str, user: str, stored: list[str], acked: list[str], load: Load,
             clients: list[int]) -> None:
    have = Counter(stored)
    lost = [t for t in acked if not have[t]]
    dup = sum(n - 1 for n in have.values() if n > 1)
    setattr(counts, f"lost_{where}", getattr(counts, f"lost_{where}") + len(lost))
    setattr(counts, f"dup_{where}", getattr(counts, f"dup_{where}") + dup)
    for t in lost[:3]:
        counts.note(f"{user} {where}: acknowledged turn {t!r} missing")
    if dup:
        counts.note(f"{user} {where}: {dup} turn(s) stored twice")
    for c in clients:
        if not _in_order(stored, load.sent[c]):
            setattr(counts, f"order_{where}", getattr(counts, f"order_{where}") + 1)
            counts.note(f"{user} {where}: client {c} out of order")


# -- one configuration -------------------------------------------------------------------------


@dataclass
class Run:
    backend: str
    workers: int
    load: Load
    counts: Counts


def run_config(tmp: Path, *, backend: str, workers: int, clients: int, users: int, turns: int, facts: int,
               edits: int = 0, window: int = 20, drain_timeout: float = 600.0) -> Run:
    """One full run in `tmp`: upstream, Redis (for `backend="redis"`), the service, the load, the checks."""
    tmp.mkdir(parents=True, exist_ok=True)
    redis = RedisServer(tmp / "redis").start() if backend == "redis" else None
    try:
        with UpstreamProcess() as upstream:
            config = write_config(tmp, upstream=upstream, backend=backend, redis_url=redis.url if redis else None,
                                  window=window)
            env = {"KIOKU_API_TOKEN": TOKEN, "KIOKU_CONFIG": None,
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            counts = Counts()
            with KiokuServeWorkers(config, workers=workers, env=env, log_file=tmp / "serve.log") as service:
                load = asyncio.run(drive(service.url, clients=clients, users=users, turns=turns, facts=facts,
                                       edits=edits))
                # The service's workers drain the journals; nothing here runs a job.
                counts.drain_s, status = wait_drained(Path(yaml.safe_load(config.read_text())["data_dir"]), drain_timeout)
            count_jobs(counts, status)
            counts.errors = len(load.errors)
            for e in load.errors[:5]:
                counts.note(e)
            check_stores(config, load, counts)
    finally:
        if redis is not None:
            redis.stop()
    return Run(backend, workers, load, counts)


def percentile(data: list[float], p: float) -> float:
    data = sorted(data)
    return data[min(len(data) - 1, int(round(p / 100 * (len(data) - 1))))] if data else 0.0


def report(run: Run) -> list[str]:
    load, c = run.load, run.counts
    chats = len(load.chat_ms)
    return [
        f"== {run.workers} workers, window on {run.backend}: {chats} chat turns + {len(load.fact_ms)} fact posts and edits "
        f"in {load.seconds:.1f}s ({chats / load.seconds:.1f} turns/s, "
        f"{(chats + len(load.fact_ms)) / load.seconds:.1f} req/s); journal drained {c.drain_s:.1f}s later",
        f"   chat ms p50 {percentile(load.chat_ms, 50):.0f}  p95 {percentile(load.chat_ms, 95):.0f}  "
        f"max {max(load.chat_ms, default=0):.0f};  fact post/edit ms p50 {percentile(load.fact_ms, 50):.0f}  "
        f"p95 {percentile(load.fact_ms, 95):.0f}  max {max(load.fact_ms, default=0):.0f}",
        f"   acked turns {c.acked_turns}, facts {c.acked_facts}; errors {c.errors}; lost window/diary "
        f"{c.lost_window}/{c.lost_diary}; dup window/diary {c.dup_window}/{c.dup_diary}; out of order window/diary "
        f"{c.order_window}/{c.order_diary}; facts lost {c.facts_lost}, extra {c.facts_extra}; jobs open {c.jobs_open}, "
        f"failed {c.jobs_failed}; unreadable {c.unreadable}",
        *(f"   ! {n}" for n in c.notes),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--facts", type=int, default=100)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--window", type=int, default=20, help="window messages (older turns fold into the summary)")
    parser.add_argument("--backends", default="files,redis")
    parser.add_argument("--workers", default="2,4")
    parser.add_argument("--keep", type=Path, default=None, help="run in this folder and keep it (logs, data)")
    args = parser.parse_args()
    print(f"{args.clients} clients x {args.turns} turns over {args.users} users, {args.facts} concurrent fact posts "
          f"and {args.edits} edits to {FACT_USER}; diary, core and world book on; cores: {os.cpu_count()}", flush=True)
    failed = False
    for backend in args.backends.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            with tempfile.TemporaryDirectory(prefix="kioku-serve-load-") as tmp:
                where = args.keep / f"{backend}-{workers}" if args.keep else Path(tmp)
                run = run_config(where, backend=backend, workers=workers, clients=args.clients, users=args.users,
                                 turns=args.turns, facts=args.facts, edits=args.edits, window=args.window)
            print("\n".join(report(run)), flush=True)
            failed = failed or bool(run.counts.bad())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
