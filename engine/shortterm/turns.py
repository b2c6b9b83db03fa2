"""The window seen as turns (for regenerate detection), and a client's history as a window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.shortterm.memory import turn_of
from engine.shortterm.state import WindowMessage
from engine.tokens import count_tokens


@dataclass(frozen=True)
class RecentTurn:
    """One recorded turn still in a chat's window."""

    id: str
    user: str
    assistant: str
    at: str
    """ISO time with UTC offset, as recorded."""


def recent_turns(messages: Sequence[WindowMessage], n: int) -> tuple[RecentTurn, ...]:
    """The last `n` complete recorded turns among `messages`, oldest first (imported or partial
    turns are not turns)."""
    turns: list[RecentTurn] = []
    by_id: dict[str, dict[str, WindowMessage]] = {}
    order: list[str] = []
    for m in messages:
        tid = turn_of(m.id)
        if tid is None:
            continue
        if tid not in by_id:
            by_id[tid] = {}
            order.append(tid)
        by_id[tid][m.role] = m
    for tid in order:
        parts = by_id[tid]
        if "user" in parts and "assistant" in parts:
            turns.append(RecentTurn(tid, parts["user"].content, parts["assistant"].content, parts["user"].at))
    return tuple(turns[-n:]) if n > 0 else ()


def history_window(history: Sequence[Mapping[str, Any]], *, max_messages: int, max_tokens: int) -> list[WindowMessage]:
    """A client's OpenAI-format history as the window: its user and assistant messages (system
    messages are the persona's place), newest first until either limit, starting on a user turn."""
    kept: list[WindowMessage] = []
    total = 0
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        role = m.get("role") if isinstance(m, Mapping) else None
        if role not in ("user", "assistant"):
            continue
        content = _text(m.get("content"))
        tokens = count_tokens(content)
        if len(kept) >= max_messages or total + tokens > max_tokens:
            break
        kept.append(WindowMessage(f"client:{i}", role, content, "", tokens))
        total += tokens
    kept.reverse()
    while len(kept) > 1 and kept[0].role != "user":
        kept.pop(0)
    return kept


def _text(content: Any) -> str:
    """OpenAI content: a string, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return "" if content is None else str(content)
