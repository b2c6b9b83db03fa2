"""Bearer-token auth and the request size limit."""

from __future__ import annotations

import json
import secrets

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.config import ServiceConfig
from engine.service.errors import ServiceError

bearer = HTTPBearer(auto_error=False, description="The token from `service.token_env` (default KIOKU_API_TOKEN).")

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def make_auth(config: ServiceConfig):
    """A FastAPI dependency: with a token configured, requests must carry `Authorization: Bearer <token>`;
    with none (loopback only, see `run.serve`), everything is allowed."""
    expected = config.token.get_secret_value().encode() if config.token else None

    async def require_token(request: Request) -> None:
        if expected is None:
            return
        credentials: HTTPAuthorizationCredentials | None = await bearer(request)
        if credentials is None:
            raise ServiceError(401, "missing bearer token: send 'Authorization: Bearer <token>'",
                               code="missing_token", headers=_CHALLENGE)
        if not secrets.compare_digest(credentials.credentials.encode(), expected):
            raise ServiceError(401, "invalid bearer token", code="invalid_token", headers=_CHALLENGE)

    return require_token


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413, whether or not Content-Length is sent."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
                if too_big:
                    await self._refuse(send)
                    return
        # Read the body up front (bounded), then replay it to the app.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        payload = json.dumps({"error": {
            "message": f"request body larger than {self.max_bytes} bytes (service.max_body_bytes)",
            "type": "invalid_request_error", "code": "body_too_large",
        }}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})
