"""The chat route's view of the orchestrator: prompt, record, and the chat's last stored turns.

The per-chat window and regenerate (`chat_id`, `history`, `replaces`, `recent_turns`) arrive in the
orchestrator separately from the service. This adapter passes each of them only when the
orchestrator's signature takes it, so the service works with either; `missing` names what is not
there yet (the `/health` route and the request log show it).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

from engine.conversation import StoredTurn
from engine.orchestrator import MemoryOrchestrator, PromptResult

Message = dict[str, str]


def _takes(method: Any, name: str) -> bool:
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


class OrchestratorPort:
    def __init__(self, orch: MemoryOrchestrator) -> None:
        self.orch = orch
        self.prompt_chat = _takes(orch.build_prompt, "chat_id")
        self.prompt_history = _takes(orch.build_prompt, "history")
        self.record_chat = _takes(orch.record_turn, "chat_id")
        self.record_replaces = _takes(orch.record_turn, "replaces")
        self.recent = getattr(orch, "recent_turns", None)

    @staticmethod
    def missing_in(orch: Any) -> list[str]:
        """What of the per-chat contract an orchestrator (or its class) does not take yet."""
        checks = {"build_prompt(chat_id=)": _takes(orch.build_prompt, "chat_id"),
                  "build_prompt(history=)": _takes(orch.build_prompt, "history"),
                  "record_turn(chat_id=)": _takes(orch.record_turn, "chat_id"),
                  "record_turn(replaces=)": _takes(orch.record_turn, "replaces"),
                  "recent_turns()": getattr(orch, "recent_turns", None) is not None}
        return [name for name, ok in checks.items() if not ok]

    async def build_prompt(self, message: str, *, user: str, chat: str,
                           history: Sequence[Message] | None) -> PromptResult:
        kwargs: dict[str, Any] = {"user_id": user}
        if self.prompt_chat:
            kwargs["chat_id"] = chat
        if self.prompt_history and history is not None:
            kwargs["history"] = list(history)
        return await asyncio.to_thread(self.orch.build_prompt, message, **kwargs)

    async def record(self, message: str, reply: str, *, user: str, chat: str, turn_id: str,
                     replaces: str | None) -> None:
        kwargs: dict[str, Any] = {"user_id": user, "turn_id": turn_id}
        if self.record_chat:
            kwargs["chat_id"] = chat
        if self.record_replaces and replaces is not None:
            kwargs["replaces"] = replaces
        await asyncio.to_thread(self.orch.record_turn, message, reply, **kwargs)

    async def recent_turns(self, *, user: str, chat: str, n: int = 2) -> list[StoredTurn]:
        """The chat's last `n` stored turns, oldest first; [] when the orchestrator cannot tell."""
        if self.recent is None or not self.record_replaces:
            return []  # without replaces a detected regenerate could not act: plan as new turns
        kwargs: dict[str, Any] = {"n": n}
        if _takes(self.recent, "chat_id"):
            kwargs["chat_id"] = chat
        turns = await asyncio.to_thread(self.recent, user, **kwargs)
        return [_stored(t) for t in turns]


def _stored(turn: Any) -> StoredTurn:
    """A stored turn from whatever shape `recent_turns` returns: an object with id/user/assistant
    (like `Turn`), a mapping with those keys, or an (id, user, assistant) tuple."""
    if isinstance(turn, StoredTurn):
        return turn
    if isinstance(turn, dict):
        return StoredTurn(str(turn["id"]), str(turn["user"]), str(turn["assistant"]))
    if isinstance(turn, (tuple, list)):
        turn_id, user, assistant = turn[:3]
        return StoredTurn(str(turn_id), str(user), str(assistant))
    return StoredTurn(str(turn.id), str(turn.user), str(turn.assistant))
