"""Who an MCP call acts for, and what it may reach: each call's character and user are settled here,
before any memory is read, and every refusal names the argument it is about.

- stdio (`kioku mcp`) is trusted configuration: its user is the one it was started with, and a
  `user` argument naming anyone else is refused.
- HTTP (`/mcp` in `kioku serve`): the bearer token decides, as on the chat endpoint. A per-user
  token is that user; the shared token (or none, on loopback) reaches any user, named by the `user`
  argument, or `service.default_user` in a single-user deployment.

The character is the `character` argument, else the server's default (`--character`,
`service.default_character`, or the only character there is).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engine.errors import EngineError, InvalidIdError
from engine.paths import validate_id

if TYPE_CHECKING:
    from engine.config import EngineConfig
    from engine.orchestrator import MemoryOrchestrator


class ArgumentError(EngineError, ValueError):
    """A tool, resource or prompt argument that cannot be used; `argument` names it, and so does
    the message."""

    def __init__(self, argument: str, message: str) -> None:
        text = message if message.startswith(argument) else f"{argument}: {message}"
        super().__init__(text)
        self.argument = argument


class ReadOnlyError(EngineError, PermissionError):
    """A change asked of a server that may not change memory (`service.allow_edit` is off)."""


class Characters(Protocol):
    """The open characters (`engine.service.app.Registry` is one)."""

    config: EngineConfig

    def available(self) -> list[str]: ...

    def exists(self, character_id: str) -> bool: ...

    def get(self, character_id: str) -> MemoryOrchestrator: ...


@dataclass(frozen=True)
class Caller:
    """Whose memory one call may reach."""

    only_user: str | None
    """The one user this caller may reach (per-user token, stdio's configured user); None: any user."""
    default_user: str | None = None
    """The user of a call that names none; None: the `user` argument is required."""
    why_named: str = ""
    """Why a call must name its user (several people share this server)."""


@dataclass(frozen=True)
class Target:
    """The memory one call reads or changes."""

    orch: MemoryOrchestrator
    character: str
    user: str


@dataclass(frozen=True)
class MemoryAccess:
    """What the MCP server needs of its host: the characters, who is calling, and whether memory
    may be changed. `caller` reads the caller of a call from its request context (None on stdio)."""

    characters: Characters
    caller: Callable[[object | None], Caller]
    allow_edit: bool = False
    default_character: str | None = None
    data_dir: Path | None = None
    """Paths under it are shown relative in messages (see `engine.service.errors.redact_paths`)."""

    def character(self, name: str | None) -> tuple[str, MemoryOrchestrator]:
        """The character a call names (or the default one), opened."""
        chosen = name.strip() if name and name.strip() else self._default_character()
        try:
            validate_id(chosen, kind="character id")
        except InvalidIdError as exc:
            raise ArgumentError("character", str(exc)) from None
        if not self.characters.exists(chosen):
            raise ArgumentError("character", f"no character {chosen!r} (available: {self._listed()})")
        return chosen, self.characters.get(chosen)

    def target(self, context: object | None, *, character: str | None, user: str | None) -> Target:
        """The character and user of a call, checked: an unknown one, or a user this caller may not
        reach, is an `ArgumentError` naming the argument."""
        who = self.caller(context)
        character_id, orch = self.character(character)
        named = user.strip() if user and user.strip() else None
        if named is not None:
            try:
                validate_id(named, kind="user id")
            except InvalidIdError as exc:
                raise ArgumentError("user", str(exc)) from None
        if who.only_user is not None:
            if named is not None and named != who.only_user:
                raise ArgumentError("user", f"this connection reaches only user {who.only_user!r}'s memory "
                                    f"(got {named!r}); leave user out")
            return Target(orch, character_id, who.only_user)
        if named is None:
            if who.default_user is None:
                raise ArgumentError("user", f"name the user whose memory to use: {who.why_named or 'required'}")
            return Target(orch, character_id, who.default_user)
        known = orch.admin.user_ids()
        if named not in known:
            shown = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
            raise ArgumentError("user", f"character {character_id!r} has no user {named!r} (users: {shown or 'none'})")
        return Target(orch, character_id, named)

    def require_edit(self) -> None:
        if not self.allow_edit:
            raise ReadOnlyError("this kioku is read-only: memory changes need service.allow_edit: true in its config "
                                "(or kioku mcp --allow-edit)")

    def _default_character(self) -> str:
        if self.default_character:
            return self.default_character
        available = self.characters.available()
        if len(available) == 1:
            return available[0]
        raise ArgumentError("character", f"name the character (available: {self._listed()})")

    def _listed(self) -> str:
        return ", ".join(self.characters.available()) or "none"
