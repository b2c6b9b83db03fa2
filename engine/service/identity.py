"""Who is talking, and in which chat: identity that cannot leak between people.

The user of a chat request, first match wins:

1. a **per-user token** (`service.user_tokens_file`, `service.user_token_envs`): the request is that
   user, whatever else it says;
2. the OpenAI **`user` field**: a string, or an object with an `id` (as some frontends send);
3. the **`X-Kioku-User`** header (when `service.trusted_headers` has `kioku`, the default);
4. Open WebUI's **`X-OpenWebUI-User-Id`** (only when `trusted_headers` has `openwebui`);
5. nothing: in **single-user mode** `service.default_user`. A deployment is multi-user when it has
   two or more tokens (shared and per-user together) or trusts a frontend's identity headers; there
   a request that names nobody is refused with 400, never merged into `default`.

The chat (the short-term window is per user and chat; diary and facts are per user): the body's
`metadata.chat_id`, `X-Kioku-Chat` (trusted `kioku`), `X-OpenWebUI-Chat-Id` (trusted `openwebui`),
else `default`. A chat id that is not a valid id (Open WebUI's `local:...` temporary chats) is
stored under a stable digest of it.
"""

from __future__ import annotations

import logging
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import ServiceConfig
from engine.errors import ConfigError, InvalidIdError
from engine.fileio import load_yaml_file
from engine.paths import id_or_digest, validate_id
from engine.service.errors import ServiceError

log = logging.getLogger(__name__)

USER_HEADER = "X-Kioku-User"
CHAT_HEADER = "X-Kioku-Chat"
OPENWEBUI_USER_HEADER = "X-OpenWebUI-User-Id"
OPENWEBUI_CHAT_HEADER = "X-OpenWebUI-Chat-Id"
IDENTITY_HEADERS = (USER_HEADER, CHAT_HEADER, OPENWEBUI_USER_HEADER, OPENWEBUI_CHAT_HEADER)
DEFAULT_CHAT = "default"


@dataclass(frozen=True)
class Principal:
    """What the bearer token says about the caller."""

    user: str | None
    """The user a per-user token belongs to; None for the shared token or a service without tokens."""


@dataclass(frozen=True)
class Identity:
    user: str
    user_source: str
    """Where the user came from: token, user-field, x-kioku-user, x-openwebui-user-id, single-user."""
    chat: str
    chat_source: str
    """metadata.chat_id, x-kioku-chat, x-openwebui-chat-id, or default."""


@dataclass(frozen=True)
class TokenTable:
    """The shared token and the per-user tokens, checked in constant time per token."""

    shared: bytes | None
    users: tuple[tuple[bytes, str], ...]

    @classmethod
    def from_config(cls, config: ServiceConfig, env: Mapping[str, str]) -> "TokenTable":
        shared = config.token.get_secret_value().encode() if config.token else None
        pairs: list[tuple[str, str, str]] = []  # (token, user, where it came from)
        if config.user_tokens_file is not None:
            pairs += _tokens_from_file(Path(config.user_tokens_file))
        for user, variable in config.user_token_envs.items():
            value = env.get(variable, "").strip()
            if not value:
                raise ConfigError(f"service.user_token_envs: the variable ${variable} (token of user {user!r}) "
                                  "is not set or empty")
            pairs.append((value, _config_user(user, "service.user_token_envs"), f"${variable}"))
        seen: dict[str, str] = {}
        for token, user, where in pairs:
            if shared is not None and secrets.compare_digest(token.encode(), shared):
                raise ConfigError(f"{where}: the token of user {user!r} is the shared token; give each user their own")
            if token in seen and seen[token] != user:
                raise ConfigError(f"{where}: one token is given to two users ({seen[token]!r} and {user!r})")
            seen[token] = user
        return cls(shared, tuple((t.encode(), u) for t, u in seen.items()))

    @property
    def count(self) -> int:
        return len(self.users) + (self.shared is not None)

    def match(self, token: str) -> Principal | None:
        """The caller a token stands for, or None. Every token is compared (no early exit)."""
        given = token.encode()
        found: Principal | None = None
        if self.shared is not None and secrets.compare_digest(given, self.shared):
            found = Principal(None)
        for expected, user in self.users:
            if secrets.compare_digest(given, expected):
                found = Principal(user)
        return found


@dataclass(frozen=True)
class IdentityPolicy:
    trusted: frozenset[str]
    default_user: str
    refuse_anonymous: str | None
    """Why a request without identity is refused (multi-user deployment, require_user); None: default_user."""

    @classmethod
    def from_config(cls, config: ServiceConfig, tokens: TokenTable) -> "IdentityPolicy":
        trusted = frozenset(config.trusted_headers)
        why = None
        if config.require_user:
            why = "service.require_user is set"
        elif tokens.count >= 2:
            why = f"{tokens.count} tokens are configured"
        elif "openwebui" in trusted:
            why = "Open WebUI's identity headers are trusted (service.trusted_headers)"
        return cls(trusted, config.default_user, why)

    @property
    def multi_user(self) -> bool:
        return self.refuse_anonymous is not None


def resolve(principal: Principal, *, body_user: Any, metadata: Any, headers: Mapping[str, str | None],
            policy: IdentityPolicy) -> Identity:
    """The user and chat of a chat request (see the module docstring). `headers` holds the decoded
    values of IDENTITY_HEADERS (None when absent)."""
    user, user_source = _user(principal, body_user, headers, policy)
    chat, chat_source = _chat(metadata, headers, policy)
    return Identity(user, user_source, chat, chat_source)


def _user(principal: Principal, body_user: Any, headers: Mapping[str, str | None],
          policy: IdentityPolicy) -> tuple[str, str]:
    if principal.user is not None:
        return principal.user, "token"
    field = body_user.get("id") if isinstance(body_user, dict) else body_user
    if isinstance(field, str) and field.strip():
        return _user_id(field.strip(), "the 'user' field"), "user-field"
    if body_user is not None and not isinstance(body_user, str) and field is None:
        raise ServiceError(400, "the 'user' object has no 'id' string (send \"user\": \"<id>\" or {\"id\": \"<id>\"})",
                           code="bad_user")
    if "kioku" in policy.trusted and headers.get(USER_HEADER):
        return _user_id(headers[USER_HEADER] or "", f"header {USER_HEADER}"), "x-kioku-user"
    if "openwebui" in policy.trusted and headers.get(OPENWEBUI_USER_HEADER):
        return _user_id(headers[OPENWEBUI_USER_HEADER] or "", f"header {OPENWEBUI_USER_HEADER}"), "x-openwebui-user-id"
    if policy.refuse_anonymous is not None:
        sources = ["a per-user token", "the 'user' field"]
        sources += [f"the {h} header" for h, k in ((USER_HEADER, "kioku"), (OPENWEBUI_USER_HEADER, "openwebui"))
                    if k in policy.trusted]
        raise ServiceError(
            400, f"this request names no user, and this kioku serves several people ({policy.refuse_anonymous}): "
            f"name the user with {', '.join(sources[:-1])} or {sources[-1]}", code="user_required",
        )
    return policy.default_user, "single-user"


def _chat(metadata: Any, headers: Mapping[str, str | None], policy: IdentityPolicy) -> tuple[str, str]:
    given = metadata.get("chat_id") if isinstance(metadata, dict) else None
    if isinstance(given, (str, int)) and str(given).strip():
        return chat_id(str(given).strip()), "metadata.chat_id"
    if "kioku" in policy.trusted and headers.get(CHAT_HEADER):
        return chat_id(headers[CHAT_HEADER] or ""), "x-kioku-chat"
    if "openwebui" in policy.trusted and headers.get(OPENWEBUI_CHAT_HEADER):
        return chat_id(headers[OPENWEBUI_CHAT_HEADER] or ""), "x-openwebui-chat-id"
    return DEFAULT_CHAT, "default"


def chat_id(value: str) -> str:
    """A chat id safe as a file name and a Redis key part: the id itself when it is a valid id, else
    `c-` and a digest of it (the same chat always gets the same id)."""
    return id_or_digest(value, kind="chat id")


def _user_id(value: str, where: str) -> str:
    try:
        return validate_id(value, kind="user id")
    except InvalidIdError as exc:
        raise ServiceError(400, f"{where}: {exc}", code="invalid_id") from None


def _tokens_from_file(path: Path) -> list[tuple[str, str, str]]:
    if not path.is_file():
        raise ConfigError(f"service.user_tokens_file: {path} does not exist")
    mode = path.stat().st_mode
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        log.warning("%s holds tokens but other users may read it (chmod 600 it)", path)
    data = load_yaml_file(path)
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping 'user id: token' (or a list of tokens), got {type(data).__name__}")
    out = []
    for user, tokens in data.items():
        user_id = _config_user(user, str(path))
        for token in tokens if isinstance(tokens, list) else [tokens]:
            if not isinstance(token, str) or not token.strip():
                raise ConfigError(f"{path}: user {user_id!r}: a token must be a non-empty string")
            out.append((token.strip(), user_id, str(path)))
    return out


def _config_user(user: Any, where: str) -> str:
    try:
        return validate_id(str(user), kind="user id")
    except InvalidIdError as exc:
        raise ConfigError(f"{where}: {exc}") from None
