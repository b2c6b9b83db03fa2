"""Chat ids: any text a frontend sends (UUIDs, Chinese titles), mapped to a safe folder name.

The default chat keeps the original layout (`users/<id>/history.yaml`, `brain.yaml`) so existing
data loads; every other chat lives in `users/<id>/chats/<folder>/`. A chat id that is already a
harmless name (lower-case ASCII letters, digits, `_`, `-`; UUIDs are) is its own folder; anything
else becomes `~` + a hash of it, so no chat id can name a path outside the user's folder, and
`~` never starts a plain name, so the two kinds cannot collide.
"""

from __future__ import annotations

import hashlib
import re

from engine.errors import InvalidIdError

DEFAULT_CHAT = "default"
MAX_CHAT_ID_CHARS = 256

_PLAIN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Device names Windows refuses as file names, whatever the extension.
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def validate_chat_id(value: object) -> str:
    """`value` if it is usable as a chat id (a non-empty string of at most 256 characters)."""
    if not isinstance(value, str):
        raise InvalidIdError(f"chat id must be a string (got {value!r} that is a {type(value).__name__})")
    if not value.strip() or len(value) > MAX_CHAT_ID_CHARS:
        raise InvalidIdError(f"chat id {value[:80]!r} is not allowed: use 1-{MAX_CHAT_ID_CHARS} characters, not only spaces")
    return value


def chat_folder(chat_id: str) -> str:
    """The folder name of a chat under `users/<id>/chats/`: the id itself when harmless, else `~<hash>`."""
    validate_chat_id(chat_id)
    if _PLAIN.fullmatch(chat_id) and chat_id not in _RESERVED:
        return chat_id
    digest = hashlib.sha256(chat_id.encode("utf-8", "surrogatepass")).hexdigest()
    return "~" + digest[:40]
