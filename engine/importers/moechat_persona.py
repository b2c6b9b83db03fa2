"""MoeChat's `Agent` section -> kioku's character.yaml: persona fields and the config switches that
mean the same thing. Similarity thresholds are model-specific, so they are noted, not copied
(unless asked): MoeChat's values were tuned for its own embedding model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.adapters.embedder import Embedder
from engine.character import Character
from engine.config import deep_merge
from engine.errors import ConfigError, DataFileError
from engine.fileio import atomic_write_text, dump_yaml, load_yaml_file
from engine.paths import CharacterPaths

# MoeChat `Agent` key -> kioku character.yaml field (text fields).
_PERSONA = {
    "char": "name",
    "user": "user_name",
    "char_settings": "settings",
    "char_personalities": "personality",
    "mask": "user_mask",
    "message_example": "message_examples",
    "prompt": "prompt",
}

def existing_character(paths: CharacterPaths) -> dict[str, Any]:
    if not paths.character_file.is_file():
        return {}
    data = load_yaml_file(paths.character_file)
    if not isinstance(data, dict):
        raise DataFileError("character.yaml must be a mapping of fields", path=str(paths.character_file), line=1)
    return data


def map_agent(
    agent: Mapping[str, Any], *, default_name: str, keep_thresholds: bool, embedder: Embedder
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(character fields, config overrides, notes) from MoeChat's `Agent` section."""
    fields: dict[str, Any] = {}
    for key, field in _PERSONA.items():
        value = agent.get(key)
        if value is not None and str(value).strip():
            fields[field] = str(value).strip() if field in ("name", "user_name") else str(value)
    fields.setdefault("name", default_name)
    start = agent.get("start_with")
    if isinstance(start, list):
        fields["opening_lines"] = [str(x) for x in start if x is not None]
    overrides: dict[str, Any] = {}
    switches = {
        "long_memory": ("diary", "enabled"),
        "is_check_memorys": ("diary", "semantic_filter"),
        "is_core_mem": ("core", "enabled"),
        "lore_books": ("world_book", "enabled"),
    }
    for key, (section, name) in switches.items():
        if isinstance(agent.get(key), bool):
            overrides.setdefault(section, {})[name] = agent[key]
    if (n := as_int(agent.get("context_length"))) is not None:
        overrides.setdefault("short_term", {})["max_messages"] = max(2, n)
    if (n := as_int(agent.get("scan_depth"))) is not None and n >= 1:
        overrides.setdefault("world_book", {})["top_k"] = n
    notes: list[str] = []
    thresholds = {"mem_thresholds": ("diary", "filter_threshold", "diary_filter"),
                  "books_thresholds": ("world_book", "threshold", "world_book")}
    for key, (section, name, default_key) in thresholds.items():
        value = agent.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if keep_thresholds:
            overrides.setdefault(section, {})[name] = float(value)
            notes.append(f"MoeChat {key}={value} copied to {section}.{name} (--keep-thresholds)")
        else:
            ours = embedder.default_thresholds.get(default_key)
            notes.append(
                f"MoeChat {key}={value} was tuned for MoeChat's embedding model and is not copied: "
                f"{section}.{name} keeps the default of {embedder.model_id} ({ours}); "
                f"set it under config: or re-import with --keep-thresholds"
            )
    return fields, overrides, notes


def write_character(
    paths: CharacterPaths, existing: Mapping[str, Any], fields: Mapping[str, Any], overrides: Mapping[str, Any],
    *, comments: Sequence[str], root: Path,
) -> tuple[Character, bool]:
    """Create or update character.yaml (atomically). Existing `config:` keys MoeChat does not set stay."""
    data = dict(existing)
    data.update(fields)
    merged_config = deep_merge(dict(existing.get("config") or {}), dict(overrides))
    if merged_config:
        data["config"] = merged_config
    try:
        character = Character.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{paths.character_file}: the imported persona is invalid: {exc}") from None
    head = [f"# Imported from MoeChat ({root}) by `kioku import moechat`."]
    head += [f"# {line}" for note in comments for line in _wrap(note)]
    text = "\n".join(head) + "\n" + dump_yaml(character.model_dump(exclude_defaults=True))
    old = paths.character_file.read_text(encoding="utf-8") if paths.character_file.is_file() else None
    if old == text:
        return character, False
    atomic_write_text(paths.character_file, text)
    return character, True


def _wrap(text: str, width: int = 96) -> list[str]:
    words, lines, cur = text.split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return lines + [cur] if cur else lines


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
