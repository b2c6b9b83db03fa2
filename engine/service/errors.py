"""Every failure of the service answers in OpenAI's error shape, with a status that says whose fault it is."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import DataFileError, EngineError, InvalidIdError

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


def error_response(status: int, message: str, *, kind: str, code: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.message, kind=exc.kind, code=exc.code, headers=exc.headers)

    @app.exception_handler(InvalidIdError)
    async def _invalid_id(request: Request, exc: InvalidIdError) -> JSONResponse:
        return error_response(400, str(exc), kind="invalid_request_error", code="invalid_id")

    @app.exception_handler(DataFileError)
    async def _data_file(request: Request, exc: DataFileError) -> JSONResponse:
        log.error("data file error on %s: %s", request.url.path, exc)
        return error_response(500, f"a data file cannot be read: {exc}", kind="server_error", code="data_file")

    try:
        from engine.shortterm.redis_backend import RedisBackendError
    except ImportError:  # the redis client is not installed; the file backend needs none
        pass
    else:

        @app.exception_handler(RedisBackendError)
        async def _redis(request: Request, exc: RedisBackendError) -> JSONResponse:
            log.error("redis error on %s: %s", request.url.path, exc)
            return error_response(503, str(exc), kind="server_error", code="short_term_unavailable")

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

    @app.exception_handler(EngineError)
    async def _engine(request: Request, exc: EngineError) -> JSONResponse:
        log.error("engine error on %s: %s: %s", request.url.path, type(exc).__name__, exc)
        return error_response(500, f"{type(exc).__name__}: {exc}", kind="server_error")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s", request.url.path)
        return error_response(500, f"internal error: {type(exc).__name__}: {exc}", kind="server_error")
