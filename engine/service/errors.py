"""Every failure of the service answers in OpenAI's error shape, with a status that says whose fault it is.

Error bodies never show absolute server paths: a path inside the data folder is shown relative to
it (`agents/xiaoyue/users/u/core_mem.yml:3`), any other absolute path is cut to its file name.
An unexpected exception answers 500 with a reference to the server log, and the keep-alive
connection stays usable.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import DataFileError, EngineError, InvalidIdError
from engine.paths import redact_paths
from engine.admin import FactNotFoundError, FactStoreBusyError, FactTextError, StoreDisabledError, TurnNotFoundError
from engine.fifo import ShuttingDownError
from engine.backends.errors import SchemaError, StorageUnavailableError
from engine.timerange import BadRangeError, BadTimeError

log = logging.getLogger(__name__)

class ServiceError(EngineError):
    """An error with an HTTP status; `kind` is OpenAI's error `type`."""

    def __init__(self, status: int, message: str, *, kind: str = "invalid_request_error", code: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.code = code
        self.headers = headers


class AsciiJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: renders any str (even one holding a lone surrogate) without failing."""

    def render(self, content: object) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error_response(status: int, message: str, *, kind: str, code: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return AsciiJSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=status,
                             headers=headers)


@dataclass(frozen=True)
class Route:
    """How one exception class answers. `message` is formatted with `exc` and `name` (its class name);
    every message is shown through `redact_paths`."""

    status: int
    code: str | None
    kind: str = "invalid_request_error"
    message: str = "{exc}"
    logged: bool = False
    """Server-side faults are logged with the request path; the client's mistakes are not."""
    retry_after: int | None = None
    """Seconds for `Retry-After`: the condition is passing (busy, shutting down, a backend reconnecting)."""


ROUTES: dict[type[BaseException], Route] = {
    InvalidIdError: Route(400, "invalid_id"),
    BadTimeError: Route(400, BadTimeError.code),
    BadRangeError: Route(400, BadRangeError.code),
    FactTextError: Route(400, "bad_fact_text"),
    StoreDisabledError: Route(404, "store_disabled"),
    TurnNotFoundError: Route(404, "turn_not_found"),
    FactNotFoundError: Route(404, "fact_not_found"),
    DataFileError: Route(500, "data_file", "server_error", "a data file cannot be read: {exc}", logged=True),
    FactStoreBusyError: Route(503, "busy", "server_error", retry_after=1),
    ShuttingDownError: Route(503, "shutting_down", "server_error",
                             "the service is shutting down; retry on another worker", retry_after=1),
    StorageUnavailableError: Route(503, "storage_unavailable", "server_error",
                                   "the memory database is unavailable: {exc}", logged=True, retry_after=5),
    SchemaError: Route(503, "storage_schema", "server_error", logged=True),
    EngineError: Route(500, None, "server_error", "{name}: {exc}", logged=True),
}
"""Error class -> answer; the most specific class in an exception's MRO wins."""

try:
    from engine.backends.redis import RedisBackendError
except ImportError:  # the redis client is not installed; the file backend needs none
    pass
else:
    ROUTES[RedisBackendError] = Route(503, "short_term_unavailable", "server_error", logged=True)


def route_for(exc: BaseException) -> Route | None:
    return next((ROUTES[c] for c in type(exc).__mro__ if c in ROUTES), None)


def install_error_handlers(app: FastAPI, *, data_dir: Path | None = None) -> None:
    async def _routed(request: Request, exc: Exception) -> JSONResponse:
        route = route_for(exc)
        assert route is not None  # registered only for the classes in ROUTES
        if route.logged:
            log.error("%s on %s: %s", type(exc).__name__, request.url.path, exc)
        message = redact_paths(route.message.format(exc=exc, name=type(exc).__name__), data_dir=data_dir)
        return error_response(route.status, message, kind=route.kind, code=route.code,
                              headers=None if route.retry_after is None else {"Retry-After": str(route.retry_after)})

    for cls in ROUTES:
        app.add_exception_handler(cls, _routed)

    @app.exception_handler(ServiceError)
    async def _service(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.message, kind=exc.kind, code=exc.code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(f"{where}: {err.get('msg')}")
        return error_response(422, "invalid request: " + "; ".join(parts), kind="invalid_request_error")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), kind="invalid_request_error",
                              headers=getattr(exc, "headers", None))

    # Deliberately no handler for Exception: Starlette runs that one in ServerErrorMiddleware, which
    # re-raises after answering, and uvicorn then drops the keep-alive connection. `CatchAll` answers instead.


class CatchAll:
    """The outermost middleware: an unexpected exception becomes a 500 in OpenAI's shape (no message,
    which may hold paths or user text, but a reference to the logged traceback) and the connection
    stays open for the client's next request. A response already under way cannot become a 500: it
    is cut off, and the server closes that one connection (the only honest end of a broken body)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # noqa: BLE001 - the last line: log it, answer, keep serving
            ref = secrets.token_hex(4)
            log.exception("unexpected error on %s %s (ref %s)", scope.get("method"), scope.get("path"), ref)
            if started:
                return
            payload = json.dumps({"error": {
                "message": f"internal error ({type(exc).__name__}); the server log has the details under ref {ref}",
                "type": "server_error", "code": "internal_error",
            }}).encode()
            await send({"type": "http.response.start", "status": 500, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
