"""A character's persona, from `data/agents/<char>/character.yaml` (MoeChat's `Agent` fields)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from engine.config import EngineConfig, key_lines, merge_config
from engine.errors import ConfigError
from engine.fileio import SMALL_LIMITS, parse_yaml, read_text_strict
from engine.paths import CharacterPaths, character_paths
from engine.trust import check_character_overrides


class Character(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The character's name ({{char}})."""
    user_name: str = "用户"
    """What the character calls the user ({{user}})."""
    settings: str = ""
    """Background and setting (MoeChat char_settings)."""
    personality: str = ""
    """MoeChat char_personalities."""
    user_mask: str = ""
    """Who the user is in this role-play (MoeChat mask)."""
    message_examples: str = ""
    """Example dialogue (MoeChat message_example)."""
    prompt: str = ""
    """Free-form extra instructions (MoeChat prompt)."""
    opening_lines: list[str] = Field(default_factory=list)
    """Opening exchange, alternating user / assistant (MoeChat start_with)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Overrides of config.yaml for this character: persona-level keys only (language, time zone,
    thresholds, budgets, retrieval knobs; `engine.trust.CHARACTER_KEYS`)."""
    _config_lines: dict[tuple[str, ...], int] = PrivateAttr(default_factory=dict)

    @property
    def config_lines(self) -> Mapping[tuple[str, ...], int]:
        """Line in character.yaml of each key path inside `config:` (for error messages)."""
        return self._config_lines


@dataclass(frozen=True)
class OpenCharacter:
    """A character folder opened against the operator's configuration."""

    paths: CharacterPaths
    character: Character
    config: EngineConfig
    """The operator's config with the character's permitted overrides applied."""


def open_character(character_id: str, config: EngineConfig) -> OpenCharacter:
    """Validate the id, load character.yaml and apply its `config:` section to `config` (refused
    keys raise ConfigError naming key, file and line). Every surface opens a character this way."""
    paths = character_paths(config.data_dir, character_id)
    character = load_character(paths)
    merged = merge_config(
        config, character.config, source=str(paths.character_file), lines=character.config_lines
    )
    return OpenCharacter(paths=paths, character=character, config=merged)


def load_character(paths: CharacterPaths) -> Character:
    """The persona in character.yaml. Its `config:` section is checked against what a character
    may set (a refused key raises ConfigError with its line) before anything uses it."""
    path = paths.character_file
    if not path.is_file():
        raise ConfigError(f"{path}: no character.yaml (is {paths.root.name!r} a character folder?)")
    text = read_text_strict(path, max_bytes=SMALL_LIMITS.max_bytes)
    data = parse_yaml(text, path=path, limits=SMALL_LIMITS)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: character.yaml must be a mapping of fields")
    lines = {k[1:]: v for k, v in key_lines(text).items() if k[0] == "config" and len(k) > 1}
    if isinstance(data.get("config"), dict) and data["config"]:
        # Checked and validated here, where the lines are known: a refused key or a typo names its line.
        check_character_overrides(data["config"], schema=EngineConfig, source=str(path), lines=lines)
        merge_config(EngineConfig(), data["config"], source=str(path), lines=lines)
    try:
        character = Character.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "<root>"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key '{key}'")
            else:
                problems.append(f"key '{key}': {err['msg']}")
        raise ConfigError(f"{path}: invalid character: " + "; ".join(problems)) from None
    character._config_lines = lines
    return character


def list_characters(data_dir: Path) -> list[str]:
    root = Path(data_dir) / "agents"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "character.yaml").is_file())
