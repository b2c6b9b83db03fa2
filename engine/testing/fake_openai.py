"""A real OpenAI-compatible HTTP server on 127.0.0.1, scripted, for tests, benches and demos.

It speaks `/v1/chat/completions` (plain and SSE streaming) and `/v1/embeddings`. Replies come
from a queue of scripted actions, then from a rule; every request body is recorded. Failures
are scripted as actions: `Status(500)`, `Delay(5.0)`, `Garbage(b"...")`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from engine.adapters.llm import echo_rule


@dataclass(frozen=True)
class Reply:
    text: str


@dataclass(frozen=True)
class Status:
    code: int
    message: str = "scripted failure"


@dataclass(frozen=True)
class Delay:
    seconds: float
    text: str = "late reply"


@dataclass(frozen=True)
class Garbage:
    body: bytes = b"<html>not json</html>"


Action = Reply | Status | Delay | Garbage


def hashed_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic bag-of-character-bigrams vector: similar texts get similar vectors."""
    vec = np.zeros(dim, dtype=np.float32)
    chars = text.lower()
    for a, b in zip(chars, chars[1:] or chars):
        h = int.from_bytes(hashlib.blake2b((a + b).encode(), digest_size=4).digest(), "little")
        vec[h % dim] += 1.0
    norm = float(np.linalg.norm(vec)) or 1.0
    return (vec / norm).tolist()


class FakeOpenAIServer:
    def __init__(
        self,
        *,
        rule: Callable[[dict[str, Any]], str] = echo_rule,
        embed_dim: int = 64,
        stream_chunk_chars: int = 4,
    ) -> None:
        self.rule = rule
        self.embed_dim = embed_dim
        self.stream_chunk_chars = stream_chunk_chars
        self.requests: list[dict[str, Any]] = []
        self._script: deque[Action] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def push(self, *actions: Action | str) -> None:
        with self._lock:
            self._script.extend(Reply(a) if isinstance(a, str) else a for a in actions)

    def clear(self) -> int:
        """Drop the scripted actions not used yet (returns how many)."""
        with self._lock:
            n = len(self._script)
            self._script.clear()
            return n

    def _next_action(self, body: dict[str, Any]) -> Action:
        with self._lock:
            self.requests.append(body)
            if self._script:
                return self._script.popleft()
        return Reply(self.rule(body))

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    # Bursts of concurrent clients (bench, multi-worker tests) overflow the stdlib backlog of 5.
    request_queue_size = 512
    fake: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    """One request to the fake: embeddings are answered at once, chat completions by the next
    scripted action (or the rule), plain or streamed."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "invalid JSON body"}})
            return
        path = self.path.rstrip("/")
        if path.endswith("/embeddings"):
            self._embeddings(body)
        elif path.endswith("/chat/completions"):
            self._chat(body)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _embeddings(self, body: dict[str, Any]) -> None:
        fake = self.server.fake
        fake.requests.append(body)
        inputs = body.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else inputs
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, fake.embed_dim)}
            for i, t in enumerate(inputs)
        ]
        self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def _chat(self, body: dict[str, Any]) -> None:
        action = self.server.fake._next_action(body)
        if isinstance(action, Status):
            self._send(action.code, {"error": {"message": action.message, "type": "scripted"}})
            return
        if isinstance(action, Garbage):
            self._raw(200, action.body, "application/json")
            return
        text = action.text
        if isinstance(action, Delay):
            time.sleep(action.seconds)
        if body.get("stream"):
            self._stream(body, text)
        else:
            self._send(200, _completion(body, text))

    def _send(self, code: int, payload: dict[str, Any]) -> None:
        self._raw(code, json.dumps(payload, ensure_ascii=False).encode(), "application/json")

    def _raw(self, code: int, data: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _stream(self, body: dict[str, Any], text: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        step = max(1, self.server.fake.stream_chunk_chars)
        chunks = [text[i : i + step] for i in range(0, len(text), step)] or [""]
        try:
            for i, piece in enumerate(chunks):
                delta = {"content": piece} if i else {"role": "assistant", "content": piece}
                self._event(_chunk(body, delta, None))
            self._event(_chunk(body, {}, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")
        self.wfile.flush()


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _chunk(body: dict[str, Any], delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
