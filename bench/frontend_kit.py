"""What the real-frontend session benches share (`openwebui_session.py`, `sillytavern_session.py`):
the recording proxy in front of kioku, the frontend's server process, Chromium's flags."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from replay_frontend import Exchange, Line

from engine.testing.serve import free_port

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
_HOP = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding", "keep-alive"}


class ServerProcess:
    """A frontend's server in a process group of its own, its output in `log`; up once `health`
    answers 200, stopped with SIGINT (SIGKILL after 30 s)."""

    def __init__(self, name: str, command: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> None:
        self.name, self.command, self.cwd, self.env, self.log_path = name, command, cwd, env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, health: str, *, timeout: float, poll: float = 1.0) -> None:
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(self.command, env=self.env, cwd=self.cwd, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.log_path}")
            try:
                if httpx.get(health, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(poll)
        raise RuntimeError(f"{self.name} did not answer on {health} within {timeout:g}s")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


class RecordingProxy:
    """A pass-through HTTP proxy to `target` that records every POST as a recording line and keeps
    what kioku answered (status, X-Kioku-* headers, reply text) as an `Exchange`."""

    def __init__(self, target: str, record_to: Path) -> None:
        self.target = target.rstrip("/")
        self.record_to = record_to
        self.exchanges: list[Exchange] = []
        self.lock = threading.Lock()
        self.port = free_port()
        self.last_activity = time.monotonic()
        self.busy = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # bodies end when the connection closes: streams pass as they come

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                proxy.forward(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                proxy.forward(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "RecordingProxy":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def idle_for(self, seconds: float) -> bool:
        with self.lock:
            return self.busy == 0 and time.monotonic() - self.last_activity >= seconds

    def forward(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        with self.lock:
            self.busy += 1
            self.last_activity = time.monotonic()
        try:
            self._forward(handler, method)
        finally:
            with self.lock:
                self.busy -= 1
                self.last_activity = time.monotonic()

    record_gets = False
    """Also record GETs (as `body: null`, like shared/frontends/)."""

    def _opened(self) -> Any:
        """Called as a request is forwarded; what it returns comes back to `_annotate`."""
        return None

    def _annotate(self, exchange: Exchange, opened: Any) -> None:
        """Add to an exchange what a subclass keeps besides kioku's answer (under the lock)."""

    def _forward(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP}
        opened = self._opened()
        chunks: list[bytes] = []
        with httpx.Client(timeout=300) as http, \
                http.stream(method, self.target + handler.path, headers=headers, content=raw) as r:
            handler.send_response(r.status_code)
            for k, v in r.headers.items():
                if k.lower() not in _HOP and k.lower() != "content-encoding":
                    handler.send_header(k, v)
            handler.end_headers()
            for chunk in r.iter_raw():
                chunks.append(chunk)
                handler.wfile.write(chunk)
                handler.wfile.flush()
            status, answer = r.status_code, {k.lower(): v for k, v in r.headers.items()}
        if method == "POST" or self.record_gets:
            self._record(handler, method, raw, status, answer, b"".join(chunks), opened)

    def _record(self, handler: BaseHTTPRequestHandler, method: str, raw: bytes, status: int, answer: dict[str, str],
                body: bytes, opened: Any) -> None:
        request: Any = None
        if method == "POST":
            try:
                request = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                request = {}
        sent = {k.lower(): ("Bearer <token>" if k.lower() == "authorization" else
                            "<redacted>" if "email" in k.lower() else v) for k, v in handler.headers.items()}
        with self.lock:
            seq = len(self.exchanges)
            line = Line(seq, handler.path, sent, request if isinstance(request, dict) else {}, status)
            ex = Exchange(line, status, answer, reply_text(body) if method == "POST" else "", error_code(status, body))
            self._annotate(ex, opened)
            self.exchanges.append(ex)
            with self.record_to.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"seq": seq, "t": datetime.now().strftime("%H:%M:%S"), "path": handler.path,
                                      "headers": sent, "body": request, "status": status}, ensure_ascii=False) + "\n")


def reply_text(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            return ""
    parts = []
    for line in text.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices", ()):
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)


def error_code(status: int, body: bytes) -> str | None:
    if status == 200:
        return None
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
