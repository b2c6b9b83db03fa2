"""The data layout, and the id validation that keeps every path inside `data/agents/`."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from engine.errors import InvalidIdError

MAX_ID_CHARS = 64
# Folder names are limited to 255 bytes; 64 characters of a 4-byte script would be 256.
MAX_ID_BYTES = 192


def _id_char(ch: str, *, first: bool) -> bool:
    # Letters and digits of any script (小月, Zoë, नमस्ते with its combining vowel signs) and '_';
    # '.' and '-' inside. Nothing else: no separators, no whitespace, no control characters.
    if ch.isalnum() or ch == "_":
        return True
    return not first and (ch in ".-" or unicodedata.category(ch) in ("Mn", "Mc", "Me"))


def validate_id(value: str, *, kind: str = "id") -> str:
    """Return `value` if it is a safe single path component, else raise InvalidIdError naming it.

    Every character is checked, so a trailing newline (`"u1\\n"`, which a `$`-anchored regex
    lets through) is refused like any other control character."""
    if not isinstance(value, str):
        raise InvalidIdError(f"{kind} must be a string (got {value!r} that is a {type(value).__name__})")
    ok = (
        0 < len(value) <= MAX_ID_CHARS
        and all(_id_char(ch, first=i == 0) for i, ch in enumerate(value))
        and ".." not in value
        and not value.endswith(".")
        and len(value.encode("utf-8")) <= MAX_ID_BYTES
    )
    if not ok:
        raise InvalidIdError(
            f"{kind} {value!r} is not allowed: use 1-{MAX_ID_CHARS} letters (any script), digits, '_', '-' "
            "or '.', starting with a letter, digit or '_', no path separators, spaces, control characters or '..'"
        )
    return value


def id_or_digest(value: str, *, kind: str) -> str:
    """`value` when it is a valid id (`validate_id`), else `c-` and a digest of it: any text a
    client names something by becomes a safe id, the same text always the same one."""
    try:
        return validate_id(value, kind=kind)
    except InvalidIdError:
        return "c-" + hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def character_id_for(name: str) -> str:
    """The id a character made from a name gets (a frontend's display name, a card's): the name
    when it is a valid id (小月), with spaces as '_' (Ann_Lee), else `c-` and a digest of it."""
    return id_or_digest("_".join(name.split()), kind="character id")


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

    def user_ids(self) -> list[str]:
        """The users with a folder here, sorted (folders kioku did not make are skipped)."""
        folder = self.root / "users"
        if not folder.is_dir():
            return []
        ids = []
        for p in sorted(folder.iterdir()):
            if p.is_dir():
                try:
                    ids.append(validate_id(p.name, kind="user id"))
                except ValueError:
                    continue
        return ids


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


# An absolute POSIX path (not the '//' of a URL, not a path piece after a word) or a Windows one.
_ABSOLUTE = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"`:]+/)+|\b[A-Za-z]:\\(?:[^\s\\'\"`]+\\)+")


def redact_paths(text: str, *, data_dir: Path | None) -> str:
    """`text` safe to show a client (the HTTP service's errors, MCP answers): data-folder paths made
    relative, other absolute paths cut to their last part."""
    if data_dir is not None:
        roots = {str(Path(data_dir).resolve()), str(Path(data_dir).absolute()), str(data_dir)}
        for root in sorted((r for r in roots if os.path.isabs(r)), key=len, reverse=True):
            text = text.replace(root.rstrip(os.sep) + os.sep, "")
    return _ABSOLUTE.sub(".../", text)
