"""The LLM seam: `complete(messages) -> str`, OpenAI-compatible, with retries and timeouts in one place.

Every failure (timeout, HTTP error, empty or non-text reply) surfaces as `LLMError`, so callers
have exactly one thing to catch before falling back.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.errors import LLMError

Message = dict[str, str]


@runtime_checkable
class LLM(Protocol):
    name: str

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None
    ) -> str: ...


class OpenAIChatLLM:
    """Any OpenAI-compatible chat endpoint: OpenAI, DeepSeek, Qwen, Ollama, vLLM, LM Studio."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        temperature: float = 0.7,
        max_tokens: int | None = None,
    ) -> None:
        import openai

        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=max_retries
        )
        self.model = model
        self.name = f"openai:{model}@{base_url or 'api.openai.com'}"
        self._temperature = temperature
        self._max_tokens = max_tokens

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None
    ) -> str:
        import openai

        try:
            reply = self._client.chat.completions.create(
                model=self.model,
                messages=list(messages),
                temperature=self._temperature if temperature is None else temperature,
                max_tokens=max_tokens or self._max_tokens,
            )
        except openai.APITimeoutError as exc:
            raise LLMError(f"{self.name}: timed out") from exc
        except openai.APIStatusError as exc:
            raise LLMError(f"{self.name}: HTTP {exc.status_code}: {str(exc)[:300]}") from exc
        except (openai.OpenAIError, ValueError) as exc:
            # ValueError/JSON errors: the server answered with something that is not the protocol.
            raise LLMError(f"{self.name}: {type(exc).__name__}: {str(exc)[:300]}") from exc
        try:
            text = reply.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.name}: reply has no message content") from exc
        if not isinstance(text, str) or not text.strip():
            raise LLMError(f"{self.name}: empty reply")
        return text


def echo_rule(body: dict[str, Any]) -> str:
    """`echo: <the last user message>`: the scripted backend's reply (`llm.backend: scripted`)."""
    last = next((m for m in reversed(body.get("messages", [])) if m.get("role") == "user"), {})
    return f"echo: {last.get('content', '')}"


@dataclass
class ScriptedLLM:
    """A deterministic LLM for tests and the demo: queued replies first, then `rule(messages)`.

    A queued `Exception` instance is raised instead of returned, to script failures.
    Every call is recorded in `calls`.
    """

    replies: Iterable[str | Exception] = ()
    rule: Callable[[Sequence[Message]], str] | None = None
    name: str = "scripted"
    calls: list[list[Message]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._queue: deque[str | Exception] = deque(self.replies)
        self._lock = threading.Lock()

    def push(self, *replies: str | Exception) -> None:
        with self._lock:
            self._queue.extend(replies)

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None
    ) -> str:
        with self._lock:
            self.calls.append([dict(m) for m in messages])
            reply = self._queue.popleft() if self._queue else None
        if reply is None:
            if self.rule is None:
                raise LLMError("scripted LLM: no reply queued and no rule")
            reply = self.rule(messages)
        if isinstance(reply, Exception):
            raise reply
        return reply
