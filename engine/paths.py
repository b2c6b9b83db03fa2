"""The data layout, and the id validation that keeps every path inside `data/agents/`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engine.errors import InvalidIdError

# Letters (any script, so 小月 is a valid character id), digits, and _ - . inside; no separators.
_ID_RE = re.compile(r"^[\w][\w.\-]{0,63}$", re.UNICODE)


def validate_id(value: str, *, kind: str = "id") -> str:
    """Return `value` if it is a safe single path component, else raise InvalidIdError naming it."""
    if not isinstance(value, str):
        raise InvalidIdError(f"{kind} must be a string (got {value!r} that is a {type(value).__name__})")
    if not _ID_RE.match(value) or ".." in value or value.endswith("."):
        raise InvalidIdError(
            f"{kind} {value!r} is not allowed: use 1-64 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit, no path separators and no '..'"
        )
    return value


@dataclass(frozen=True)
class CharacterPaths:
    """Where one character's files live."""

    root: Path

    @property
    def character_file(self) -> Path:
        return self.root / "character.yaml"

    @property
    def world_book_dir(self) -> Path:
        return self.root / "data_base"

    @property
    def cache_dir(self) -> Path:
        return self.root / ".cache"

    def user(self, user_id: str) -> "UserPaths":
        return UserPaths(self.root / "users" / validate_id(user_id, kind="user id"), self.cache_dir / "users" / user_id)


@dataclass(frozen=True)
class UserPaths:
    """Where one user's memory of one character lives; `cache` is derived data, safe to delete."""

    root: Path
    cache: Path

    @property
    def history_file(self) -> Path:
        return self.root / "history.yaml"

    @property
    def brain_file(self) -> Path:
        return self.root / "brain.yaml"

    @property
    def diary_dir(self) -> Path:
        return self.root / "memorys"

    @property
    def core_file(self) -> Path:
        return self.root / "core_mem.yml"


def character_paths(data_dir: Path, character_id: str) -> CharacterPaths:
    return CharacterPaths(Path(data_dir) / "agents" / validate_id(character_id, kind="character id"))
