"""`serve()`: run the service with uvicorn, refusing to expose it without a token.

Shutdown is bounded. On SIGTERM uvicorn stops accepting, gives the requests in flight
`service.shutdown_grace_s` and then cancels them; closing the characters (stores, background
queue) gets `CLOSE_S` more, after which the process exits even if a thread is still busy: a
call into a store, the embedder or a background LLM job cannot be interrupted, and Python would
otherwise wait for it at exit (a 100 KB message kept the server up for a minute).
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import EngineConfig, open_config
from engine.errors import ConfigError
from engine.factory import default_config_path
from engine.runtime import configure_threads, raise_open_file_limit
from engine.service.auth import is_loopback

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)

CLOSE_S = 2.0
"""Seconds the app gets to close its characters once shutdown reaches it; then the process exits."""
FORCED_EXIT = 1
"""Exit status when that deadline had to end the process (a thread was still busy)."""
WORKER_HEALTHCHECK_S = 60
"""With several workers, how long uvicorn's supervisor waits for a worker to answer its health ping
before it SIGKILLs and replaces it (uvicorn's default: 5 s). A spawned worker first imports the
engine (4.5 s measured on this busy 2-core machine, longer with four starting at once): at 5 s one
of four workers was killed while starting, and a worker that needs 7 s never came up (killed and
restarted every 5 s; `tests/test_serve_workers.py`). A worker killed while serving would drop the
requests it was answering. A worker that is really hung is still replaced, after a minute."""


def check_bind(config: EngineConfig, host: str) -> None:
    """Raise ConfigError for a non-loopback `host` without a token (unless explicitly allowed). The app
    itself refuses non-loopback requests in that case too (`LoopbackGuard`); this fails early."""
    service = config.service
    has_token = service.token is not None or service.user_tokens_file is not None or bool(service.user_token_envs)
    if is_loopback(host) or has_token or service.allow_remote_without_token:
        return
    raise ConfigError(
        f"refusing to listen on {host!r} without a token: anyone who can reach it could read and change every "
        f"user's memory. Set the token in ${config.service.token_env}, or bind 127.0.0.1"
    )


def serve(
    config_path: Path | str | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    workers: int = 1,
    data_dir: Path | str | None = None,
    log_level: str = "info",
) -> None:
    """Run uvicorn on `host:port` (default: `service.host`, `service.port`). With `workers > 1`
    each worker process builds the app from the same config; the file stores coordinate
    through inter-process locks on one machine (the Redis short-term backend or Postgres for several)."""
    import uvicorn

    path = config_path if config_path is not None else default_config_path()
    config = open_config(path=path, data_dir=data_dir)
    # The chat route logs one line per request (conversation or housekeeping, what was recorded).
    logging.getLogger("engine.service.requests").setLevel(logging.INFO if log_level in ("info", "debug", "trace")
                                                          else logging.WARNING)
    host = host or config.service.host
    port = port if port is not None else config.service.port
    check_bind(config, host)
    configure_threads()
    raise_open_file_limit()
    common: dict[str, Any] = {
        "host": host, "port": port, "log_level": log_level,
        "timeout_graceful_shutdown": config.service.shutdown_grace_s,
    }
    if workers > 1:
        # Each worker process re-reads the config: pass what was given on the command line through the env.
        if path is not None:
            os.environ["KIOKU_CONFIG"] = str(Path(path).resolve())
        if data_dir is not None:
            os.environ["KIOKU__DATA_DIR"] = str(Path(data_dir).resolve())
        if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:  # uvicorn >= 0.30
            common["timeout_worker_healthcheck"] = WORKER_HEALTHCHECK_S
        uvicorn.run("engine.service.run:factory", factory=True, workers=workers, **common)
        return
    from engine.service.app import create_app

    uvicorn.run(with_exit_deadline(create_app(config=config)), **common)


def factory() -> "FastAPI":
    """`engine.service.app:factory` with the exit deadline: what each `serve --workers N` process runs."""
    from engine.service.app import factory as app_factory

    configure_threads()
    raise_open_file_limit()
    return with_exit_deadline(app_factory())


def with_exit_deadline(app: "FastAPI", seconds: float = CLOSE_S) -> "FastAPI":
    """Wrap `app`'s lifespan so that, once shutdown reaches the app (uvicorn has already waited
    for or cancelled the requests in flight), the process ends within `seconds` whatever is
    still running."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with inner(a) as state:
            try:
                yield state
            finally:
                arm_exit_deadline(seconds)

    app.router.lifespan_context = lifespan
    return app


def arm_exit_deadline(seconds: float) -> threading.Timer:
    """End the process in `seconds` unless it has exited by then (a daemon timer: a clean exit
    does not wait for it). An acknowledged turn is already in the user's journal, so the jobs cut
    short here replay when the user is next opened."""

    def expire() -> None:
        busy = [t.name for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
        log.warning(
            "shutdown: still busy %.1fs after closing started (threads: %s); exiting now",
            seconds, ", ".join(busy) or "none",
        )
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(FORCED_EXIT)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.name = "kioku-exit-deadline"
    timer.start()
    return timer
