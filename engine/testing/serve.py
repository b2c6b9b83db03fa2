"""Run the service for tests and benches: in a thread of this process, or as a uvicorn process
with several workers. Both listen on a free 127.0.0.1 port and stop by their own handle.

`ServiceThread.done` counts requests the app has finished handling (a turn is recorded before
its request finishes), so a test can wait for the real end of a request instead of sleeping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_demo(data_dir: Path, *, as_id: str = "xiaoyue") -> Path:
    """The demo character 小月 copied to `data_dir/agents/<as_id>` (no users, no cache); returns `data_dir`."""
    from engine.demo import demo_character_dir

    shutil.copytree(demo_character_dir(), Path(data_dir) / "agents" / as_id,
                    ignore=shutil.ignore_patterns("users", ".cache"))
    return Path(data_dir)


def service_config(data_dir: Path, upstream_url: str, *, token: str | None = None, env: Mapping[str, str] | None = None,
                **overrides: Any) -> Any:
    """An `EngineConfig` for a service in `data_dir` talking to the OpenAI-compatible `upstream_url`
    (no retries, 2 s timeout, no memory LLM: memory writing uses the offline fallbacks)."""
    from engine.config import load_config

    raw = {
        "data_dir": str(data_dir),
        "llm": {"backend": "openai", "base_url": upstream_url, "model": "fake-model", "max_retries": 0, "timeout_s": 2},
        "memory_llm": {"backend": "none"},
        # Tests change facts through the API; a deployment switches this on deliberately.
        "service": {"allow_edit": True},
    }
    secrets = dict(env or {})
    if token:
        secrets["KIOKU_API_TOKEN"] = token
    return load_config(overrides=_merge(raw, overrides), env=secrets)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) else value
    return out


class Finished:
    """Wraps an ASGI app and counts the HTTP requests it has finished handling (returned or raised)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0
        self._cond = threading.Condition()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                with self._cond:
                    self.count += 1
                    self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """True once `count` requests have finished in total; False after `timeout` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: self.count >= count, timeout)


class ServiceThread:
    """`app` served by uvicorn in a daemon thread (lifespan on: closing drains the orchestrators)."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.done = Finished(app)
        self.server = uvicorn.Server(uvicorn.Config(self.done, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, name="kioku-service", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> "ServiceThread":
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def __enter__(self) -> "ServiceThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServiceProcess:
    """`uvicorn engine.service.app:factory --factory --workers N` with `env` added to this environment
    (a value of None removes that variable)."""

    def __init__(self, *, workers: int = 2, env: Mapping[str, str | None] | None = None, log_file: Path | None = None,
                 host: str = "127.0.0.1") -> None:
        self.port = free_port()
        self.host = host
        self.workers = workers
        self.env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> "ServiceProcess":
        out = open(self.log_file, "wb") if self.log_file else subprocess.DEVNULL  # noqa: SIM115 - closed in stop()
        self._out = out
        self.proc = subprocess.Popen(self.command(), env=self.env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {self.proc.returncode}; see {self.log_file}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the service did not answer on {self.url} within {timeout:g}s")

    def command(self) -> list[str]:
        return [sys.executable, "-m", "uvicorn", "engine.service.app:factory", "--factory", "--host", self.host,
                "--port", str(self.port), "--workers", str(self.workers), "--log-level", "warning",
                "--timeout-keep-alive", "120"]  # idle pooled connections must not race a server-side close

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if getattr(self, "_out", None) not in (None, subprocess.DEVNULL):
            self._out.close()

    def __enter__(self) -> "ServiceProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class KiokuServe(ServiceProcess):
    """`kioku serve --config <config> --port <free port>` as a process (one worker, its own logging:
    the one-line-per-request log goes to `log_file`)."""

    def __init__(self, config: Path, *, env: Mapping[str, str | None] | None = None, log_file: Path | None = None) -> None:
        super().__init__(workers=1, env=env, log_file=log_file)
        self.config = config

    def command(self) -> list[str]:
        return [sys.executable, "-m", "engine.cli", "serve", "--config", str(self.config), "--port", str(self.port)]


@contextlib.contextmanager
def demo_service(data_dir: Path, *, characters: Sequence[str] = ("xiaoyue",), token: str | None = None,
                 embedder: Any = None) -> Iterator[tuple[ServiceThread, Any]]:
    """The demo character under each id of `characters` in `data_dir`, served in a thread against a
    fake OpenAI upstream: yields (server, upstream)."""
    from engine.testing.fake_openai import FakeOpenAIServer
    from engine.service.app import create_app

    for character in characters:
        copy_demo(data_dir, as_id=character)
    with FakeOpenAIServer() as upstream:
        app = create_app(config=service_config(data_dir, upstream.base_url, token=token), embedder=embedder)
        with ServiceThread(app) as server:
            yield server, upstream
