"""A character's persona, from `data/agents/<char>/character.yaml` (MoeChat's `Agent` fields)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.errors import ConfigError
from engine.fileio import load_yaml_file
from engine.paths import CharacterPaths


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
    """Overrides of config.yaml for this character (e.g. timezone, language, thresholds)."""


def load_character(paths: CharacterPaths) -> Character:
    path = paths.character_file
    if not path.is_file():
        raise ConfigError(f"{path}: no character.yaml (is {paths.root.name!r} a character folder?)")
    data = load_yaml_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: character.yaml must be a mapping of fields")
    try:
        return Character.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "<root>"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key '{key}'")
            else:
                problems.append(f"key '{key}': {err['msg']}")
        raise ConfigError(f"{path}: invalid character: " + "; ".join(problems)) from None


def list_characters(data_dir: Path) -> list[str]:
    root = Path(data_dir) / "agents"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "character.yaml").is_file())
