"""Start a real, throwaway `redis-server` on a free loopback port (tests and benches).

    with RedisServer(tmp_path) as server:
        url = server.url          # redis://127.0.0.1:<port>/0

Nothing is persisted (`--save '' --appendonly no`); the server runs in `tmp_dir` and is stopped
(by its own pid) on exit. `scripts/setup.sh --dev` installs the Debian package when missing.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def redis_server_binary() -> str | None:
    return shutil.which("redis-server")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, tmp_dir: Path) -> None:
        binary = redis_server_binary()
        if binary is None:
            raise FileNotFoundError("redis-server is not installed (run scripts/setup.sh --dev)")
        self.binary = binary
        self.dir = Path(tmp_dir)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.dir.mkdir(parents=True, exist_ok=True)
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(self.dir), "--protected-mode", "yes", "--loglevel", "warning"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError("redis-server did not start on a free port after 5 attempts")

    def _wait_ready(self, timeout: float = 10.0) -> bool:
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.ConnectionError:
                    time.sleep(0.05)
            return False
        finally:
            client.close()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
