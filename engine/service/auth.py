"""Bearer-token auth, the loopback guard for a service without a token, and the request size limit."""

from __future__ import annotations

import ipaddress
import json
import logging
import re

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.service.errors import ServiceError
from engine.service.identity import Principal, TokenTable
from engine.service.models import lone_surrogate

log = logging.getLogger(__name__)

bearer = HTTPBearer(auto_error=False, description="The token from `service.token_env` (default KIOKU_API_TOKEN).")

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def make_auth(tokens: TokenTable):
    """A FastAPI dependency: with any token configured (shared or per-user), requests must carry
    `Authorization: Bearer <token>`; with none (loopback only, see `LoopbackGuard`), everything is
    allowed. Sets `request.state.principal` (who the token says the caller is)."""

    async def require_token(request: Request) -> None:
        if tokens.count == 0:
            request.state.principal = Principal(None)
            return
        credentials: HTTPAuthorizationCredentials | None = await bearer(request)
        if credentials is None:
            raise ServiceError(401, "missing bearer token: send 'Authorization: Bearer <token>'",
                               code="missing_token", headers=_CHALLENGE)
        principal = tokens.match(credentials.credentials)
        if principal is None:
            raise ServiceError(401, "invalid bearer token", code="invalid_token", headers=_CHALLENGE)
        request.state.principal = principal

    return require_token


def own_user(request: Request, user: str) -> None:
    """A per-user token reaches only its own user's memory (the shared token reaches every user)."""
    principal: Principal = getattr(request.state, "principal", Principal(None))
    if principal.user is not None and principal.user != user:
        raise ServiceError(403, "this token belongs to another user; it can reach only its own memory",
                           code="not_your_user")


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413, whether or not Content-Length is sent, and JSON
    bodies holding a lone surrogate escape (`"\\ud800"`: valid JSON, not text) with 422 before any
    parsing or validation sees them (they fail deep inside otherwise, even in building an error)."""

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
        where = _lone_surrogate_in_json(body)
        if where is not None:
            await _send_error(send, 422, f"invalid request: body.{where} contains a lone UTF-16 surrogate (like "
                              "\\ud800), which is not text; send valid Unicode", code="lone_surrogate")
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        await _send_error(send, 413, f"request body larger than {self.max_bytes} bytes (service.max_body_bytes)",
                          code="body_too_large")


# A \uD800-\uDFFF escape; only bodies that have one (emoji from ensure_ascii clients, or an attack) are parsed here.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate_in_json(body: bytes) -> str | None:
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None  # not JSON: the route's own parsing answers
    return lone_surrogate(data)


async def _send_error(send: Send, status: int, message: str, *, code: str) -> None:
    payload = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": code}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 (also IPv4-mapped) and `localhost`; False for names that may resolve anywhere."""
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


class LoopbackGuard:
    """Without a token, answer only connections that arrived on a loopback address.

    The check reads the local address of each connection (the ASGI scope's `server`), so it holds
    however the app was started (`kioku serve`, `uvicorn ... --factory --host 0.0.0.0`, gunicorn, a
    container): the app cannot see the address it was told to bind (uvicorn binds after the lifespan
    startup), but every request says where it arrived. A Unix socket (no address) is local."""

    def __init__(self, app: ASGIApp, *, token_env: str) -> None:
        self.app = app
        self.token_env = token_env
        self._warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") if scope["type"] in ("http", "websocket") else None
        if server is None or is_loopback(str(server[0])):
            await self.app(scope, receive, send)
            return
        if not self._warned:
            self._warned = True
            log.warning("refusing requests that reach %s: no token is set ($%s), so this service answers only "
                        "on loopback addresses", server[0], self.token_env)
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        await _send_error(send, 403, f"this kioku service has no token, so it answers only on loopback addresses "
                          f"(it was reached on {server[0]}). Set a token in ${self.token_env} and send it as "
                          "'Authorization: Bearer <token>', or set service.allow_remote_without_token behind an "
                          "authenticating proxy", code="remote_without_token")
