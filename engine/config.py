"""Engine configuration: strict pydantic models, loaded from YAML, with env overrides for secrets.

The per-area sections (embedder, llm, short_term, retrieval, diary, core, world_book, service)
are declared in `engine.config_models` and importable from here; `StorageConfig`, `EngineConfig`
and the loading live in this module. Every default is restated in the top-level `config.yaml`.
A character may override persona-level values (language, time zone, thresholds, budgets,
retrieval knobs) in the `config:` section of its `character.yaml`; endpoints, models, keys and
storage stay the operator's (`CHARACTER_KEYS`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, SecretStr, ValidationError

from engine.config_models import (  # noqa: F401 - the sections live there; import them from here
    CoreConfig,
    DiaryConfig,
    EmbedderConfig,
    LLMConfig,
    RetrievalConfig,
    ServiceConfig,
    ShortTermConfig,
    TierCaps,
    WorldBookConfig,
    _Strict,
)
from engine.errors import ConfigError
from engine.fileio import SMALL_LIMITS, BoundedLoader, parse_yaml, read_text_strict
from engine.trust import check_character_overrides


class StorageConfig(_Strict):
    backend: Literal["files", "postgres"] = "files"
    """files: everything under data_dir (one machine). postgres: diary turns and their search
    index, core facts with history, the window and summary, and the journal's job queue in one
    PostgreSQL shared by every worker on every host (the world book stays files)."""
    url: str = ""
    """postgres only: `postgresql://user@host:5432/kioku` or libpq `host=... dbname=...`, never
    with a password (refused when the pool opens, without echoing it): the password is read from
    the variable named by `password_env`, or libpq's own PGPASSWORD."""
    password_env: str = "KIOKU_PG_PASSWORD"
    pool_size: int = Field(default=10, ge=1)
    """Connections per worker process."""
    connect_timeout_s: float = Field(default=3.0, gt=0)
    """A request waits at most this long for the database before it fails with 503."""
    statement_timeout_ms: int = Field(default=30_000, ge=100)
    job_lease_s: float = Field(default=60.0, gt=0)
    """A background job whose worker died is taken over by another one after this long."""
    poll_interval_s: float = Field(default=1.0, gt=0)
    """How often a worker looks for jobs other workers recorded (or left behind)."""


class EngineConfig(_Strict):
    language: Literal["zh", "en"] = "zh"
    timezone: str = "Asia/Shanghai"
    """IANA zone of the users' local days (diary files, time questions)."""
    data_dir: Path = Path("data")
    embedder: EmbedderConfig = EmbedderConfig()
    llm: LLMConfig = LLMConfig()
    memory_llm: LLMConfig | None = None
    """A cheaper model for tags, extraction and summaries; None uses `llm`."""
    short_term: ShortTermConfig = ShortTermConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    diary: DiaryConfig = DiaryConfig()
    core: CoreConfig = CoreConfig()
    world_book: WorldBookConfig = WorldBookConfig()
    service: ServiceConfig = ServiceConfig()
    storage: StorageConfig = StorageConfig()

    @property
    def effective_memory_llm(self) -> LLMConfig:
        return self.memory_llm if self.memory_llm is not None else self.llm


# (section path, key field, env field, secret field) for every secret read from the environment.
_SECRETS = (
    (("llm",), "api_key_env", "api_key"),
    (("memory_llm",), "api_key_env", "api_key"),
    (("embedder",), "api_key_env", "api_key"),
    (("service",), "token_env", "token"),
)
ENV_PREFIX = "KIOKU__"


def default_config_path() -> Path | None:
    """./config.yaml when present (a checkout or a deployment folder), else None (built-in defaults)."""
    candidate = Path.cwd() / "config.yaml"
    return candidate if candidate.is_file() else None


def open_config(
    config: EngineConfig | None = None,
    *,
    path: Path | str | None = None,
    data_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> EngineConfig:
    """The configuration every surface (library, CLI, service, importer) starts from, opened once.

    `config` when given, else the file at `path`, else ./config.yaml when present, else the
    defaults; then `data_dir` (a command-line flag or an app argument) replaces the config's."""
    if config is None:
        config = load_config(path if path is not None else default_config_path(), env=env)
    if data_dir is not None:
        config = config.model_copy(update={"data_dir": Path(data_dir).expanduser()})
    return config


def load_config(
    path: Path | str | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> EngineConfig:
    """Load `path` (or only defaults), apply `overrides`, env overrides and secrets, and validate.

    Environment: `KIOKU__SECTION__KEY=value` overrides any key (value parsed as YAML), and each
    `*_env` field names the variable holding that secret.
    """
    env = os.environ if env is None else env
    raw: dict[str, Any] = {}
    lines: dict[tuple[str, ...], int] = {}
    source = "<defaults>"
    if path is not None:
        source = str(path)
        text = _read_config_text(Path(path))
        data = parse_yaml(text, path=source, limits=SMALL_LIMITS)
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: the top level must be a mapping of keys, got {type(data).__name__}")
        raw = data
        lines = key_lines(text)
        base = Path(path).resolve().parent
        if "data_dir" in raw and not Path(str(raw["data_dir"])).is_absolute():
            raw["data_dir"] = str(base / str(raw["data_dir"]))
        elif "data_dir" not in raw:
            raw["data_dir"] = str(base / "data")
    _reject_inline_secrets(raw, source)
    if overrides:
        raw = deep_merge(raw, dict(overrides))
    for name, value in env.items():
        if name.startswith(ENV_PREFIX):
            keys = [k.lower() for k in name[len(ENV_PREFIX):].split("__") if k]
            if keys:
                parsed = parse_yaml(value, path=f"environment variable {name}", limits=SMALL_LIMITS)
                raw = deep_merge(raw, _nest(keys, parsed))
    config = validate_config(raw, source=source, lines=lines)
    return _with_secrets(config, env)


def _read_config_text(path: Path) -> str:
    try:
        return read_text_strict(path, max_bytes=SMALL_LIMITS.max_bytes)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror or exc})") from None


def validate_config(
    raw: Mapping[str, Any], *, source: str, lines: Mapping[tuple[str, ...], int] | None = None
) -> EngineConfig:
    try:
        return EngineConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, lines or {})) from None


def merge_config(
    base: EngineConfig,
    overrides: Mapping[str, Any],
    *,
    source: str,
    lines: Mapping[tuple[str, ...], int] | None = None,
) -> EngineConfig:
    """A copy of `base` with a character's `config:` section applied and re-validated.

    Only `CHARACTER_KEYS` may be set: any other key raises ConfigError naming the key, `source`
    and its line (`lines`: key path inside the section -> 1-based line of the file)."""
    if not overrides:
        return base
    check_character_overrides(overrides, schema=EngineConfig, source=source, lines=lines)
    dumped = base.model_dump(mode="python", exclude_none=False)
    merged = validate_config(deep_merge(dumped, dict(overrides)), source=source, lines=lines)
    # Secrets are excluded from dumps; carry them over from the base.
    return _copy_secrets(base, merged)


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _nest(keys: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {keys[-1]: value}
    for key in reversed(keys[:-1]):
        out = {key: out}
    return out


def _reject_inline_secrets(raw: Mapping[str, Any], source: str) -> None:
    for section, _, secret in _SECRETS:
        node = raw.get(section[0])
        if isinstance(node, dict) and secret in node:
            raise ConfigError(
                f"{source}: key '{section[0]}.{secret}' is not allowed in a file; put the secret in the "
                f"environment variable named by '{section[0]}.{'token_env' if secret == 'token' else 'api_key_env'}'"
            )


def _with_secrets(config: EngineConfig, env: Mapping[str, str]) -> EngineConfig:
    updates: dict[str, Any] = {}
    for (section,), env_field, secret in _SECRETS:
        part = getattr(config, section)
        if part is None:
            continue
        value = env.get(getattr(part, env_field))
        if value:
            updates[section] = part.model_copy(update={secret: SecretStr(value)})
    return config.model_copy(update=updates) if updates else config


def _copy_secrets(base: EngineConfig, merged: EngineConfig) -> EngineConfig:
    updates: dict[str, Any] = {}
    for (section,), _, secret in _SECRETS:
        old, new = getattr(base, section), getattr(merged, section)
        if old is not None and new is not None and getattr(old, secret) is not None:
            updates[section] = new.model_copy(update={secret: getattr(old, secret)})
    return merged.model_copy(update=updates) if updates else merged


def _describe(exc: ValidationError, source: str, lines: Mapping[tuple[str, ...], int]) -> str:
    parts = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        key = ".".join(loc) or "<root>"
        line = _nearest_line(loc, lines)
        where = f"{source}:{line}" if line else source
        if err["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown key '{key}'")
        else:
            got = err.get("input")
            parts.append(f"{where}: key '{key}': {err['msg']} (got {got!r})")
    return "invalid configuration:\n  " + "\n  ".join(parts)


def _nearest_line(loc: tuple[str, ...], lines: Mapping[tuple[str, ...], int]) -> int | None:
    for n in range(len(loc), 0, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Map each dotted key path of a YAML mapping to its 1-based line, for error messages.
    (Only called on text that already loaded, so the bounded loader has accepted it.)"""
    try:
        root = yaml.compose(text, Loader=BoundedLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return {}
    out: dict[tuple[str, ...], int] = {}

    def walk(node: yaml.Node, prefix: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                path = prefix + (str(key_node.value),)
                out[path] = key_node.start_mark.line + 1
                walk(value_node, path)

    if root is not None:
        walk(root, ())
    return out


def render_default_config() -> str:
    """The built-in defaults as a commented YAML file (how the top-level config.yaml is made:
    `kioku config > config.yaml`)."""
    lines = [
        "# kioku configuration: every key with its default. Unknown keys are errors.",
        "# Override per character under `config:` in character.yaml, or per deployment with",
        "# KIOKU__SECTION__KEY=value environment variables. Secrets live only in the environment.",
    ]

    def emit(model: type[BaseModel], values: dict[str, Any], indent: str) -> None:
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            value = values[name]
            if field.description:
                for line in field.description.splitlines():
                    lines.append(f"{indent}# {line.strip()}")
            annotation = field.annotation
            sub = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
            if sub is not None:
                lines.append(f"{indent}{name}:")
                emit(sub, value, indent + "  ")
            else:
                dumped = yaml.safe_dump({name: value}, allow_unicode=True, default_flow_style=True, width=1000).strip()
                lines.append(f"{indent}{dumped[1:-1] if dumped.startswith('{') else dumped}")

    defaults = EngineConfig().model_dump(mode="json")
    emit(EngineConfig, defaults, "")
    return "\n".join(lines) + "\n"

