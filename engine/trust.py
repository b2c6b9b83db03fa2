"""What a character folder may change in the engine's configuration.

Character folders are shared and downloaded like world books, so their `character.yaml`
`config:` section is untrusted input. It may tune how the character remembers (language, time
zone, thresholds, budgets, retrieval knobs); it may never choose where requests go or what they
carry (endpoints, models, key variables), where data lives (storage, Redis, data_dir) or how the
service runs. Without this, `config: {llm: {base_url: ...}}` would send the operator's API key and
the users' messages to a URL the character's author chose.

The list is an allowlist: a key nobody classified is refused. `tests/test_config.py` checks that
every config field is named in exactly one of the two sets, so a new field is a decision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from engine.errors import ConfigError

# A dotted path covers its whole subtree ("retrieval.caps" allows every tier cap).
CHARACTER_KEYS: frozenset[str] = frozenset({
    "language",
    "timezone",
    # How the character talks; the reply length is bounded by the operator's model anyway.
    "llm.temperature",
    "llm.max_tokens",
    "short_term.max_messages",
    "short_term.max_tokens",
    "short_term.summary_max_words",
    "short_term.summary_max_tokens",
    "retrieval.query_recent_turns",
    "retrieval.query_pause_minutes",
    "retrieval.budget_tokens",
    "retrieval.caps",
    "diary.enabled",
    "diary.semantic_filter",
    "diary.filter_threshold",
    "diary.semantic_fallback",
    "diary.fallback_top_k",
    "diary.fallback_threshold",
    "diary.digest_over_turns",
    "diary.require_recall_cue",
    "diary.max_turn_tokens",
    "diary.digest_backfill_days",
    "diary.search",
    "core.enabled",
    "core.top_k",
    "core.threshold",
    "core.min_lift",
    "core.extract_every_turns",
    "core.similar_facts_shown",
    "core.duplicate_threshold",
    "core.duplicate_action",
    "world_book",
})

# The operator's alone: endpoints, models (a model name implies an endpoint and a bill), key
# variables, storage, timeouts that hold the operator's resources, and the service.
OPERATOR_KEYS: frozenset[str] = frozenset({
    "data_dir",
    "embedder",
    "llm.backend",
    "llm.base_url",
    "llm.model",
    "llm.api_key_env",
    "llm.api_key",
    "llm.timeout_s",
    "llm.max_retries",
    "memory_llm",
    "short_term.backend",
    "short_term.llm_input_tokens",
    "short_term.redis_url",
    "short_term.redis_prefix",
    "short_term.redis_ttl_s",
    "short_term.cacheable",
    "short_term.chat_id",
    "short_term.redis_lock_timeout_s",
    "short_term.redis_lock_wait_s",
    "retrieval.store_timeout_s",
    "core.max_turns_per_extraction",
    "core.check_interval_s",
    "retrieval.max_prompts_in_flight",
    "retrieval.stuck_calls_per_store",
    "retrieval.max_query_chars",
    "core.max_pending_turns",
    "service",
    "storage",
})

README_SECTION = 'the manual: docs/security.md, "What a character folder may change"'


def character_may_set(path: tuple[str, ...]) -> bool:
    """True when the dotted key `path` (or a section above it) is in CHARACTER_KEYS."""
    return any(".".join(path[:n]) in CHARACTER_KEYS for n in range(1, len(path) + 1))


def refused_keys(overrides: Mapping[str, Any], schema: type[BaseModel]) -> Iterator[tuple[str, ...]]:
    """Key paths of `overrides` that are fields of `schema` a character may not set, in file
    order. Keys that are no field at all are left to validation, which names them as unknown."""

    def walk(node: Mapping[str, Any], model: type[BaseModel], prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        for key, value in node.items():
            path = prefix + (str(key),)
            field = model.model_fields.get(str(key))
            if field is None or character_may_set(path):
                continue
            sub = field.annotation if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel) else None
            if sub is not None and isinstance(value, Mapping) and value and any(
                k.startswith(".".join(path) + ".") for k in CHARACTER_KEYS
            ):
                # A section holding some allowed keys (llm: {temperature: ...}): look inside.
                yield from walk(value, sub, path)
            else:
                yield path

    yield from walk(overrides, schema, ())


def check_character_overrides(
    overrides: Mapping[str, Any],
    *,
    schema: type[BaseModel],
    source: str,
    lines: Mapping[tuple[str, ...], int] | None = None,
) -> None:
    """Raise ConfigError naming every refused key of `overrides` (a character's `config:`
    section, validated later against `schema`) with `source` and its line.

    Refusing (rather than ignoring with a warning) is the safe choice for an operator who
    downloads characters: a folder that tries to redirect requests does not run at all, and the
    operator sees exactly which line to delete."""
    lines = lines or {}
    problems = []
    for path in refused_keys(overrides, schema):
        line = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), None)
        where = f"{source}:{line}" if line else source
        problems.append(
            f"{where}: key 'config.{'.'.join(path)}' may not be set by a character folder "
            f"(endpoints, models, keys and storage stay the operator's: set them in config.yaml; {README_SECTION})"
        )
    if problems:
        raise ConfigError("refused character configuration:\n  " + "\n  ".join(problems))
