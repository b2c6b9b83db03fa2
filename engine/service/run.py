"""`serve()`: run the service with uvicorn, refusing to expose it without a token."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from engine.config import EngineConfig, load_config
from engine.errors import ConfigError
from engine.factory import default_config_path
from engine.service.auth import is_loopback


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
    each worker process builds the app from the same config (use the Redis short-term backend)."""
    import uvicorn

    path = config_path if config_path is not None else default_config_path()
    config = load_config(path)
    if data_dir is not None:
        config = config.model_copy(update={"data_dir": Path(data_dir)})
    # The chat route logs one line per request (conversation or housekeeping, what was recorded).
    logging.getLogger("engine.service.requests").setLevel(logging.INFO if log_level in ("info", "debug", "trace")
                                                          else logging.WARNING)
    host = host or config.service.host
    port = port if port is not None else config.service.port
    check_bind(config, host)
    if workers > 1 and config.short_term.backend != "redis":
        raise ConfigError(
            f"{workers} workers need the Redis short-term backend (short_term.backend: redis); the file "
            "backend serialises writes within one process only"
        )
    if workers > 1:
        # Each worker process re-reads the config: pass what was given on the command line through the env.
        if path is not None:
            os.environ["KIOKU_CONFIG"] = str(Path(path).resolve())
        if data_dir is not None:
            os.environ["KIOKU__DATA_DIR"] = str(Path(data_dir).resolve())
        uvicorn.run("engine.service.app:factory", factory=True, host=host, port=port, workers=workers,
                    log_level=log_level)
        return
    from engine.service.app import create_app

    uvicorn.run(create_app(config=config), host=host, port=port, log_level=log_level)
