"""The values the orchestrator hands out and takes: the result of `build_prompt`, and turn ids."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from engine.errors import InvalidIdError
from engine.stores.base import Hit, Message


@dataclass(frozen=True)
class PromptResult:
    """What `build_prompt` returns: the messages to send, and why each piece is there."""

    messages: list[Message]
    """OpenAI-format messages, ready to send."""
    hits: tuple[Hit, ...]
    """Every injected hit, with its store, score and reason."""
    dropped: tuple[Hit, ...]
    """Hits that cleared their threshold but were trimmed by a token budget."""
    tokens: Mapping[str, int]
    """Tokens per tier, plus persona, window, message and total."""
    timings_ms: Mapping[str, float]
    """Per store (from when its call started), plus 'admission' (waiting for a place), 'embed' and 'total'."""
    diagnostics: tuple[str, ...]
    """Stores that failed or timed out (skipped), and other degradations."""
    now: datetime
    query_text: str


def new_turn_id(at: datetime) -> str:
    """A fresh turn id that sorts by time: UTC to the microsecond, then six random hex digits."""
    return f"{at.astimezone(timezone.utc):%Y%m%dT%H%M%S%f}-{secrets.token_hex(3)}"


def check_turn_id(value: object) -> str:
    """Turn ids are data (journal, window, diary), never paths: any text of 1-256 characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise InvalidIdError(f"turn id must be 1-256 characters of text (got {value!r:.80})")
    return value
