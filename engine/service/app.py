"""The HTTP service: an OpenAI-compatible chat endpoint with memory, the memory API, and the MCP
server at /mcp (engine/mcp).

    uvicorn engine.service.app:factory --factory              # config from $KIOKU_CONFIG or ./config.yaml
    kioku serve --port 8765                                    # the same, refusing unsafe binds

One `MemoryOrchestrator` per character, opened on first use and closed (background writes drained)
when the app shuts down.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware

from engine.adapters.embedder import Embedder
from engine.character import list_characters, load_character
from engine.config import EngineConfig, open_config
from engine.errors import ConfigError
from engine.orchestrator import MemoryOrchestrator
from engine.paths import character_paths, validate_id
import engine.service.chat as chat
import engine.service.inspect_api as inspect_api
import engine.service.memory_api as memory_api
from engine.service.auth import BodyLimit, LoopbackGuard, make_auth
from engine.service.errors import CatchAll, ServiceError, install_error_handlers
from engine.service.housekeeping import compile_patterns
from engine.service.identity import IdentityPolicy, TokenTable

log = logging.getLogger(__name__)

CONFIG_ENV = "KIOKU_CONFIG"
"""`factory()` reads the config file named here (else ./config.yaml, else built-in defaults)."""


class Registry:
    """The open orchestrators, one per character; thread-safe, opened lazily."""

    def __init__(self, config: EngineConfig, *, embedder: Embedder | None = None) -> None:
        self.config = config
        self.embedder = embedder
        self._open: dict[str, MemoryOrchestrator] = {}
        self._names: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def available(self) -> list[str]:
        return list_characters(self.config.data_dir)

    def names(self) -> dict[str, str]:
        """Every character id -> its display name (`name:` in character.yaml; the id when that file
        cannot be read: opening the character then reports why). Re-read when the file changes."""
        out = {}
        for cid in self.available():
            path = character_paths(self.config.data_dir, cid).character_file
            try:
                stamp = path.stat().st_mtime_ns
            except OSError:
                continue
            cached = self._names.get(cid)
            if cached is None or cached[0] != stamp:
                try:
                    shown = load_character(character_paths(self.config.data_dir, cid)).name.strip() or cid
                except ConfigError:
                    shown = cid
                cached = self._names[cid] = (stamp, shown)
            out[cid] = cached[1]
        return out

    def exists(self, character_id: str) -> bool:
        try:
            return character_paths(self.config.data_dir, character_id).character_file.is_file()
        except ValueError:
            return False

    def get(self, character_id: str) -> MemoryOrchestrator:
        validate_id(character_id, kind="character id")
        orch = self._open.get(character_id)
        if orch is not None:
            return orch
        if not self.exists(character_id):
            raise ServiceError(
                404, f"no character {character_id!r} (available: {', '.join(self.available()) or 'none'})",
                code="character_not_found",
            )
        with self._lock:
            if self._closed:
                raise ServiceError(503, "the service is shutting down", kind="server_error")
            orch = self._open.get(character_id)
            if orch is None:
                log.info("opening character %s", character_id)
                orch = MemoryOrchestrator.from_config(character_id, config=self.config, embedder=self.embedder)
                self._open[character_id] = orch
        return orch

    def opened(self) -> list[str]:
        return sorted(self._open)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            opened, self._open = list(self._open.values()), {}
            self._ports = {}
        for orch in opened:
            orch.close()


def create_app(
    config_path: Path | str | None = None,
    *,
    config: EngineConfig | None = None,
    data_dir: Path | str | None = None,
    embedder: Embedder | None = None,
    env: Mapping[str, str] | None = None,
) -> FastAPI:
    """The service app. `config` wins over `config_path`; `data_dir` overrides the config's;
    `embedder` replaces the configured one (tests share one loaded model); `env` (default: the
    process environment) holds the per-user tokens named by `service.user_token_envs`."""
    config = open_config(config, path=config_path, data_dir=data_dir)
    tokens = TokenTable.from_config(config.service, os.environ if env is None else env)
    registry = Registry(config, embedder=embedder)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with app.state.mcp.session_manager.run():  # the MCP endpoint's task group
                yield
        finally:
            from engine.service.upstream import close_upstreams

            await close_upstreams(app)
            registry.close()

    from importlib.metadata import PackageNotFoundError, version

    try:
        kioku_version = version("kioku")
    except PackageNotFoundError:
        kioku_version = "0"
    app = FastAPI(
        title="kioku",
        version=kioku_version,
        summary="OpenAI-compatible chat with character memory, and the memory API.",
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.registry = registry
    app.state.upstreams = {}
    app.state.identity = IdentityPolicy.from_config(config.service, tokens)
    app.state.housekeeping_rules = compile_patterns(config.service.housekeeping_patterns)
    mode = config.service.create_characters
    app.state.create_characters = mode == "on" or (mode == "auto" and not app.state.identity.multi_user)
    install_error_handlers(app, data_dir=config.data_dir)

    auth = [Depends(make_auth(tokens))]
    app.include_router(chat.router, dependencies=auth)
    app.include_router(memory_api.router, dependencies=auth)
    app.include_router(inspect_api.top_router, dependencies=auth)
    app.include_router(inspect_api.router, dependencies=auth)
    inspect_api.mount_page(app)
    app.include_router(memory_api.public_router)
    from engine.mcp.http import mount as mount_mcp  # here: engine.mcp.http itself imports the service's auth

    app.state.mcp = mount_mcp(app, registry=registry, config=config, tokens=tokens, identity=app.state.identity)

    if config.service.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(config.service.cors_origins), allow_methods=["*"],
            allow_headers=["*"], expose_headers=list(chat.RESPONSE_HEADERS),
        )
    # Added last = outermost: CatchAll > LoopbackGuard > BodyLimit > CORS > routes.
    app.add_middleware(BodyLimit, max_bytes=config.service.max_body_bytes)
    if tokens.count == 0 and not config.service.allow_remote_without_token:
        app.add_middleware(LoopbackGuard, token_env=config.service.token_env)
    app.add_middleware(CatchAll)
    return app


def factory() -> FastAPI:
    """For `uvicorn --factory` (and several `--workers`): config from $KIOKU_CONFIG, env overrides
    (`KIOKU__SECTION__KEY=value`) and secrets as `load_config` reads them. The one-line-per-request
    log (conversation or housekeeping, what was recorded) goes to stderr unless logging is configured."""
    path = os.environ.get(CONFIG_ENV)
    requests_log = logging.getLogger("engine.service.requests")
    if not logging.getLogger().hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     kioku %(message)s"))
        requests_log.addHandler(handler)
        requests_log.setLevel(logging.INFO)
        requests_log.propagate = False
    return create_app(path if path else None)
