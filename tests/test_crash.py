"""Crash safety with real processes and SIGKILL, a slow memory LLM on a real HTTP server.

A writer records turns (through the library, or through `kioku serve`) for one user, with the
diary, core memory and world book on and a small window (a summary fold after every turn). It is
killed at chosen moments: while a summary fold's LLM call is in flight, while a fact
extraction's is, or at a random time; then restarted. After every kill, every acknowledged turn
is in the window or already folded into the summary (read without writing), and no file is
unreadable; once the journal drains, every acknowledged turn is in the diary and in the facts.

    KIOKU_CRASH_KILLS=50 pytest tests/test_crash.py      # the long run (default 15 kills)

Every message carries a marker `K<run>-<n>`; the memory LLM's scripted replies keep the markers
(the summary lists every marker it was given, extraction adds one fact per marker), so each
check is a set comparison of markers.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.config import CoreConfig, load_config
from engine.testing.fake_openai import FakeOpenAIServer
from engine.journal import UserLog
from engine.paths import character_paths
from engine.shortterm import FileBackend

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
KILLS = int(os.environ.get("KIOKU_CRASH_KILLS", "15"))
MARK = re.compile(r"K([a-z]\d+-\d+)")
USER = "alice"


class MemoryLLM:
    """The scripted memory LLM: slow (so kills land mid-call), counting the calls in flight by kind."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.inflight: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    @staticmethod
    def kind(body: dict) -> str:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if "记忆整理助手" in text:
            return "extract"
        if "并入已有摘要" in text:
            return "summary"
        if "简短的标签" in text:
            return "tag"
        if "当天的摘要" in text:
            return "digest"
        return "chat"

    def __call__(self, body: dict) -> str:
        kind = self.kind(body)
        with self.lock:
            self.inflight[kind] += 1
            self.calls[kind] += 1
            delay = self.rng.uniform(0.05, 0.3)
        try:
            time.sleep(delay)
            return self.reply(kind, body)
        finally:
            with self.lock:
                self.inflight[kind] -= 1

    def reply(self, kind: str, body: dict) -> str:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if kind == "summary":
            return "摘要：" + " ".join(sorted({f"K{m}" for m in MARK.findall(text)}))
        if kind == "extract":
            turns = text.split("最近的对话")[-1]
            ops = [{"op": "ADD", "text": f"暗号 K{m} 对应 {_word(m)}"} for m in dict.fromkeys(MARK.findall(turns))]
            return json.dumps({"operations": ops}, ensure_ascii=False)
        if kind == "tag":
            return "记暗号"
        if kind == "digest":
            return "当天记了几个暗号。"
        return "好的，记住了。"


def _word(marker: str) -> str:
    rng = random.Random(marker)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(14))


def overrides(data_dir: Path, base_url: str) -> dict:
    llm = {"backend": "openai", "base_url": base_url, "model": "fake", "timeout_s": 30, "max_retries": 0}
    core = {"extract_every_turns": 1} if "extract_every_turns" in CoreConfig.model_fields else {}
    return {
        "data_dir": str(data_dir),
        "embedder": {"backend": "openai", "base_url": base_url, "model": "fake-embed"},
        "llm": llm,
        "memory_llm": dict(llm),  # a copy: the same dict twice would be dumped as a YAML alias
        # A fold after every turn; the summary keeps every marker it is given.
        "short_term": {"max_messages": 4, "summary_max_words": 50_000, "summary_max_tokens": 50_000,
                       "llm_input_tokens": 100_000},
        "core": core,
    }


# -- what is on disk -------------------------------------------------------------------------------


def window_and_summary(data_dir: Path) -> tuple[list[str], set[str], list[str]]:
    """(window markers in order, summary markers, problems), read without writing anything."""
    state = FileBackend(character_paths(data_dir, "xiaoyue")).load(USER)
    window = [m for msg in state.messages if msg.role == "user" for m in MARK.findall(msg.content)]
    problems = list(state.problems)
    journal = UserLog(character_paths(data_dir, "xiaoyue").user(USER).root / "journal")
    journal.refresh()
    problems += journal.problems()
    return window, set(MARK.findall(state.brain.historical_summary)), problems


def assert_window_holds(data_dir: Path, acked: list[str]) -> None:
    window, summary, problems = window_and_summary(data_dir)
    assert not problems, problems
    assert len(window) == len(set(window)), "a turn is twice in the window"
    missing = [a for a in acked if a not in set(window) | summary]
    assert not missing, f"acknowledged but in neither window nor summary: {missing}"


def drain_and_check(data_dir: Path, base_url: str, acked: list[str]) -> dict[str, int]:
    """Open the library on what the kills left, let the journal drain, check every store."""
    from engine.orchestrator import MemoryOrchestrator
    from engine.stores.diary.dayfile import DAY_FILE, load_day

    config = load_config(overrides=overrides(data_dir, base_url), env={})
    with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            orch.flush(5)
            if not orch.journal_status().users:
                break
        status = orch.journal_status()
        assert not status.users, "\n".join(status.lines())
        diary = orch.store("diary").entries(USER, datetime(2000, 1, 1, tzinfo=TZ), datetime(2100, 1, 1, tzinfo=TZ))
        in_diary = Counter(m for e in diary for m in MARK.findall(e.user))
        in_facts = {m for f in orch.store("core").facts(USER) for m in MARK.findall(f.text)}
    assert_window_holds(data_dir, acked)
    missing_diary = [a for a in acked if a not in in_diary]
    missing_facts = [a for a in acked if a not in in_facts]
    assert not missing_diary, f"acknowledged, not in the diary: {missing_diary}"
    assert not missing_facts, f"acknowledged, not in the facts: {missing_facts}"
    memorys = character_paths(data_dir, "xiaoyue").user(USER).diary_dir
    for path in sorted(memorys.iterdir()):
        if DAY_FILE.match(path.name):
            load = load_day(path, tz=TZ, repair=False)
            assert not [p for p in load.problems if "skipped" in p], load.problems
    return {"diary_duplicates": sum(n - 1 for n in in_diary.values())}


# -- the drivers ---------------------------------------------------------------------------------

LIBRARY_WRITER = r"""
import json, os, random, sys
from engine.config import load_config
from engine.journal import JournalPolicy
from engine.orchestrator import MemoryOrchestrator

config = load_config(overrides=json.loads(sys.argv[1]), env={})
run = int(sys.argv[2])
# Compaction often, so kills land in it too; quick retries.
policy = JournalPolicy(compact_items=6, retry_base_s=0.2, busy_retry_s=0.05)
orch = MemoryOrchestrator.from_config("xiaoyue", config=config, journal_policy=policy)
rng = random.Random(run)
for i in range(100000):
    marker = f"r{run}-{i}"
    orch.record_turn(f"记下暗号 K{marker} 好吗", f"好的，K{marker} 记住了", user_id="alice")
    os.write(1, f"ack {marker}\n".encode())  # not print: see tests/test_journal.py
    orch.flush(rng.uniform(0.0, 0.8))  # a user reads the reply; background work catches up, or not
"""


class Acks:
    """Reads a writer's acknowledgement lines as they come; only complete lines count."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self.first = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            if line.endswith("\n") and line.startswith("ack "):
                self.lines.append(line.split()[1])
                self.first.set()

    def join(self) -> list[str]:
        self._thread.join(30)
        return self.lines


def kill_at(proc: subprocess.Popen, llm: MemoryLLM, target: str | None, rng: random.Random) -> str:
    """SIGKILL while a `target` LLM call is in flight (or at a random moment); what was in flight."""
    if target is None:
        time.sleep(rng.uniform(0.0, 1.5))
    else:
        deadline = time.monotonic() + 10
        while llm.inflight[target] <= 0 and time.monotonic() < deadline:
            time.sleep(0.002)
    with llm.lock:
        during = ",".join(sorted(k for k, n in llm.inflight.items() if n > 0)) or "no LLM call"
    proc.send_signal(signal.SIGKILL)
    return during


@pytest.fixture
def world(tmp_path):
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    llm = MemoryLLM(seed=11)
    with FakeOpenAIServer(rule=llm) as server:
        yield tmp_path, server, llm


@pytest.mark.timeout(1800)
def test_library_writer_killed_loses_no_acknowledged_turn(world):
    data_dir, server, llm = world
    rng = random.Random(5)
    acked: list[str] = []
    landed: Counter[str] = Counter()
    for run in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, "-c", LIBRARY_WRITER, json.dumps(overrides(data_dir, server.base_url)), str(run)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
        )
        acks = Acks(proc.stdout)
        if not acks.first.wait(120):
            proc.kill()
            pytest.fail(f"writer {run} acknowledged nothing: {proc.communicate()[1][-3000:]}")
        landed[kill_at(proc, llm, ["summary", "extract", None][run % 3], rng)] += 1
        proc.wait()
        acked += acks.join()
        assert_window_holds(data_dir, acked)  # right after the kill, before anything heals
    stats = drain_and_check(data_dir, server.base_url, acked)
    print(f"\n{KILLS} kills, {len(acked)} acknowledged turns, none lost; kills landed during: {dict(landed)}; "
          f"memory LLM calls: {dict(llm.calls)}; {stats}")
    assert sum(n for k, n in landed.items() if "summary" in k) >= KILLS // 3
    assert sum(n for k, n in landed.items() if "extract" in k) >= KILLS // 3


# -- two processes, one user -------------------------------------------------------------------

TWO_WRITER = r"""
import json, os, sys
from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator

config = load_config(overrides=json.loads(sys.argv[1]), env={})
name, n = sys.argv[2], int(sys.argv[3])
with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
    for i in range(n):
        orch.record_turn(f"进程 K{name}{i:03d}-0 说话。", "嗯。", user_id="alice")
    orch.flush()
"""


@pytest.mark.timeout(600)
def test_two_processes_on_the_file_backend_lose_no_turn_and_keep_each_ones_order(tmp_path):
    """Two library processes record 150 turns each for the same user at once (small window, offline
    summaries folding all the time): every turn once, each process's turns in its order."""
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    with FakeOpenAIServer() as server:  # embeddings only
        config = {
            "data_dir": str(tmp_path), "embedder": {"backend": "openai", "base_url": server.base_url, "model": "e"},
            "short_term": {"max_messages": 6, "summary_max_words": 50_000, "summary_max_tokens": 50_000},
            "diary": {"enabled": False}, "core": {"enabled": False}, "world_book": {"enabled": False},
        }
        procs = [subprocess.Popen([sys.executable, "-c", TWO_WRITER, json.dumps(config), name, "150"],
                                  stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
        for p in procs:
            assert p.wait(500) == 0, p.stderr.read()[-3000:]
    state = FileBackend(character_paths(tmp_path, "xiaoyue")).load(USER)
    summary = [m for m in MARK.findall(state.brain.historical_summary)]
    window = [m for msg in state.messages if msg.role == "user" for m in MARK.findall(msg.content)]
    sequence = summary + window  # the offline summary keeps folded turns in fold order
    assert not state.problems
    assert len(sequence) == len(set(sequence)) == 300
    for name in ("a", "b"):
        assert [m for m in sequence if m.startswith(name)] == [f"{name}{i:03d}-0" for i in range(150)]


# -- the same through `kioku serve` --------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChatClient:
    """Sends one chat turn after another to the service; a 200 answer is an acknowledgement."""

    def __init__(self, port: int, run: int, rng: random.Random) -> None:
        self.port, self.run, self.rng = port, run, rng
        self.acked: list[str] = []
        self.first = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        import httpx

        with httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60) as client:
            for i in range(100000):
                marker = f"s{self.run}-{i}"
                body = {"model": "xiaoyue", "messages": [{"role": "user", "content": f"记下暗号 K{marker} 好吗"}]}
                try:
                    r = client.post("/v1/chat/completions", json=body, headers={"X-Kioku-User": USER})
                except httpx.HTTPError:
                    return  # the server was killed
                if r.status_code != 200:
                    return
                self.acked.append(marker)
                self.first.set()
                time.sleep(self.rng.uniform(0.0, 0.6))

    def join(self) -> list[str]:
        self._thread.join(60)
        return self.acked


def _wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"kioku serve exited: {proc.communicate()[1][-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    pytest.fail("kioku serve did not answer /health")


@pytest.mark.timeout(1800)
def test_kioku_serve_killed_loses_no_acknowledged_turn(world):
    import yaml

    data_dir, server, llm = world
    config_file = data_dir / "config.yaml"
    config_file.write_text(yaml.safe_dump(overrides(data_dir, server.base_url), allow_unicode=True), encoding="utf-8")
    rng = random.Random(9)
    acked: list[str] = []
    landed: Counter[str] = Counter()
    kills = max(3, KILLS // 2)  # a server start costs more than a library start
    for run in range(kills):
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "serve", "--config", str(config_file), "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=data_dir,
        )
        _wait_healthy(port, proc)
        client = ChatClient(port, run, rng)
        if not client.first.wait(120):
            proc.kill()
            pytest.fail(f"no chat answered in run {run}: {proc.communicate()[1][-3000:]}")
        landed[kill_at(proc, llm, ["summary", "extract", None][run % 3], rng)] += 1
        proc.communicate()
        acked += client.join()
        assert_window_holds(data_dir, acked)
    stats = drain_and_check(data_dir, server.base_url, acked)
    print(f"\nkioku serve: {kills} kills, {len(acked)} acknowledged turns, none lost; kills landed during: "
          f"{dict(landed)}; {stats}")
