"""The MCP server inside `kioku serve`: the protocol's streamable HTTP transport at `/mcp`, behind the
service's bearer auth, stateless (each request stands alone, so any of several workers answers it).

    server = mount(app, registry=registry, config=config, tokens=tokens, identity=identity)
    async with server.session_manager.run(): ...      # in the app's lifespan (create_app does this)

The token decides the user as on the chat endpoint: a per-user token is that user, whatever a tool
is asked; the shared token (or none, on loopback) may name any user. Without any token the
service answers only on loopback, and `/mcp` also refuses requests whose Host or Origin is not
loopback (a web page cannot reach it through DNS rebinding; not behind an authenticating proxy,
`service.allow_remote_without_token`, whose Host is its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engine.errors import EngineError
from engine.mcp.access import Caller, Characters, MemoryAccess
from engine.mcp.server import build_server
from engine.service.auth import make_auth
from engine.service.identity import IdentityPolicy, Principal, TokenTable

if TYPE_CHECKING:
    from fastapi import FastAPI

    from engine.config import EngineConfig

MCP_PATH = "/mcp"
LOOPBACK = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"],
    allowed_origins=["http://127.0.0.1", "http://127.0.0.1:*", "http://localhost", "http://localhost:*",
                     "http://[::1]", "http://[::1]:*"],
)


def mount(app: FastAPI, *, registry: Characters, config: EngineConfig, tokens: TokenTable,
          identity: IdentityPolicy) -> MCPServer:
    """Add the MCP endpoint to `app`; returns the server, whose `session_manager.run()` the app's
    lifespan must hold open."""
    access = MemoryAccess(registry, caller=caller_of(identity), allow_edit=config.service.allow_edit,
                          default_character=config.service.default_character, data_dir=config.data_dir)
    server = build_server(access)
    loopback_only = tokens.count == 0 and not config.service.allow_remote_without_token
    # Builds the session manager (the Starlette app it returns is not used: the route below is ours).
    server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        max_request_body_size=config.service.max_body_bytes,
        transport_security=LOOPBACK if loopback_only else TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    gate = Gate(StreamableHTTPASGIApp(server.session_manager), auth=make_auth(tokens))
    app.router.routes.append(Route(MCP_PATH, endpoint=gate, include_in_schema=False))
    return server


class Gate:
    """The service's bearer auth in front of the MCP app: a missing or wrong token is the service's
    401 (raised here, answered by the app's error handlers); the caller's `Principal` is left in
    the request state, where `caller_of` reads it for each call."""

    def __init__(self, app: ASGIApp, *, auth: Callable) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.auth(Request(scope, receive))
        await self.app(scope, receive, send)


def caller_of(identity: IdentityPolicy) -> Callable[[object | None], Caller]:
    """Who a call over HTTP is: its token's user, else any user (the `user` argument; in a
    single-user deployment `service.default_user` when none is named)."""
    several = f"this kioku serves several people ({identity.refuse_anonymous})"

    def caller(context: object | None) -> Caller:
        request = getattr(getattr(context, "request_context", None), "request", None)
        principal = getattr(getattr(request, "state", None), "principal", None)
        if not isinstance(principal, Principal):  # the gate sets it for every request: fail closed
            raise EngineError("an MCP request reached a tool without passing the service's auth")
        if principal.user is not None:
            return Caller(principal.user)
        default = None if identity.multi_user else identity.default_user
        return Caller(None, default_user=default, why_named=several)

    return caller
