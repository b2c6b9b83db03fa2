"""`kioku serve` stops on SIGTERM while work is in flight (real processes, real HTTP).

Each case starts `kioku serve` in its own process against real fake-OpenAI servers that take
120 s to answer, puts work in flight, sends SIGTERM and waits for the process to end. The
process must end while the upstream is still sleeping; the time it took is printed (`-s`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from engine.testing.fake_openai import Delay, FakeOpenAIServer

ROOT = Path(__file__).resolve().parent.parent
SLOW_S = 120.0
"""How long the fake upstream sleeps: far longer than any shutdown may take."""
GIVE_UP_S = 60.0
"""Liveness bound for the test itself (not a performance claim): half the upstream's sleep."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(tmp_path: Path, *, upstream: str, memory: str) -> tuple[subprocess.Popen, str]:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data/agents/xiaoyue", data / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    llm = {"backend": "openai", "model": "m", "timeout_s": 600, "max_retries": 0}
    config = {
        "data_dir": str(data),
        "llm": {**llm, "base_url": upstream},
        "memory_llm": {**llm, "base_url": memory},
        "service": {"default_character": "xiaoyue", "shutdown_grace_s": 1.0},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "unused"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "serve", "--config", str(path), "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("kioku serve did not come up")


def chat(base: str, text: str, *, stream: bool = False) -> None:
    body = json.dumps({"model": "xiaoyue", "messages": [{"role": "user", "content": text}], "stream": stream}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=SLOW_S * 2) as r:
            r.read()
    except OSError:
        pass  # the server went away mid-request: expected in these tests


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + GIVE_UP_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def stop(proc: subprocess.Popen, label: str) -> tuple[int, float]:
    t = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=GIVE_UP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0]
        raise AssertionError(f"{label}: kioku serve was still running {GIVE_UP_S:g}s after SIGTERM\n{out[-3000:]}")
    took = time.monotonic() - t
    print(f"\n{label}: exited {code} {took:.2f}s after SIGTERM")
    return code, took


@pytest.mark.timeout(240)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "sse"])
def test_sigterm_with_a_chat_request_waiting_on_the_upstream(tmp_path, stream):
    """The request in flight is cancelled after the grace period; the process ends cleanly."""
    with FakeOpenAIServer() as upstream, FakeOpenAIServer() as memory:
        upstream.push(Delay(SLOW_S))
        proc, base = start_serve(tmp_path, upstream=upstream.base_url, memory=memory.base_url)
        client = threading.Thread(target=chat, args=(base, "你好，在吗？"), kwargs={"stream": stream}, daemon=True)
        client.start()
        wait_for(lambda: len(upstream.requests) == 1, "the request to reach the upstream")
        code, _ = stop(proc, f"chat request in flight ({'sse' if stream else 'plain'})")
        out = proc.stdout.read() if proc.stdout else ""
        # A clean stop: uvicorn ends by re-raising the SIGTERM it caught (the exit deadline was not needed).
        assert code == -signal.SIGTERM, out[-3000:]
        assert "timeout graceful shutdown exceeded" in out, out[-3000:]  # cancelled after the grace


@pytest.mark.timeout(240)
def test_sigterm_with_a_background_job_stuck_on_the_memory_llm(tmp_path):
    """A recorded turn's memory job waits on the memory LLM: closing cannot finish it, so the
    exit deadline ends the process (the turn itself was acknowledged and is durable)."""
    with FakeOpenAIServer() as upstream, FakeOpenAIServer() as memory:
        memory.push(*[Delay(SLOW_S)] * 8)
        proc, base = start_serve(tmp_path, upstream=upstream.base_url, memory=memory.base_url)
        chat(base, "我昨天去了解放碑吃火锅")
        wait_for(lambda: len(memory.requests) >= 1, "a background job to call the memory LLM")
        code, _ = stop(proc, "memory LLM job in flight")
        out = proc.stdout.read() if proc.stdout else ""
        assert code == 1, out[-3000:]
        assert "exiting now" in out, out[-3000:]
