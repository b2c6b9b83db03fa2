"""The short-term tier: the recent window of messages and the rolling summary of what left it."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from engine.adapters.llm import LLM
from engine.config import ShortTermConfig
from engine.prompts import Prompts
from engine.shortterm.backend import Brain, ShortTermBackend, State, WindowMessage
from engine.shortterm.summarizer import SummaryUpdate, summarize
from engine.stores.base import Turn
from engine.tokens import count_tokens

log = logging.getLogger(__name__)


def fit_window(messages: list[WindowMessage], *, max_messages: int, max_tokens: int) -> list[WindowMessage]:
    """The newest messages that fit both limits, starting on a user message when possible."""
    kept: list[WindowMessage] = []
    total = 0
    for m in reversed(messages):
        if len(kept) >= max_messages or total + m.tokens > max_tokens:
            break
        kept.append(m)
        total += m.tokens
    kept.reverse()
    # A window that opens with an assistant reply reads as a non-sequitur; drop it.
    while len(kept) > 1 and kept[0].role != "user":
        kept.pop(0)
    return kept


def split_overflow(
    messages: list[WindowMessage], *, max_messages: int, max_tokens: int
) -> tuple[list[WindowMessage], list[WindowMessage]]:
    """(evicted, kept): evict the oldest messages until the rest fits both limits."""
    kept = fit_window(messages, max_messages=max_messages, max_tokens=max_tokens)
    return messages[: len(messages) - len(kept)], kept


class ShortTermMemory:
    def __init__(
        self,
        backend: ShortTermBackend,
        *,
        config: ShortTermConfig,
        llm: LLM | None,
        prompts: Prompts,
        user_name: str = "user",
        char_name: str = "assistant",
    ) -> None:
        self.backend = backend
        self.config = config
        self.llm = llm
        self.prompts = prompts
        self.user_name = user_name
        self.char_name = char_name

    def state(self, user_id: str) -> State:
        return self.backend.load(user_id)

    def window(self, user_id: str, *, state: State | None = None) -> list[WindowMessage]:
        """What goes into the prompt as the conversation: the newest messages within both limits.
        The background fold keeps the stored window within them too; this covers the gap.
        Pass a `state` already loaded to avoid loading it again."""
        messages = (state or self.backend.load(user_id)).messages
        return fit_window(messages, max_messages=self.config.max_messages, max_tokens=self.config.max_tokens)

    def summary(self, user_id: str) -> str:
        return self.backend.load(user_id).brain.historical_summary

    def add_turn(self, turn: Turn) -> bool:
        """Durably append the turn's two messages; False if it was already there (same id)."""
        at = turn.at.isoformat()
        messages = [
            WindowMessage(f"{turn.id}:u", "user", turn.user, at, count_tokens(turn.user)),
            WindowMessage(f"{turn.id}:a", "assistant", turn.assistant, at, count_tokens(turn.assistant)),
        ]
        with self.backend.lock(turn.user_id):
            state = self.backend.load(turn.user_id)
            if state.brain.last_history_id == messages[-1].id or any(m.id == messages[0].id for m in state.messages):
                return False
            state.brain.last_history_id = messages[-1].id
            self.backend.append(turn.user_id, messages, state.brain)
        return True

    def fold(self, user_id: str, *, now: datetime | None = None) -> SummaryUpdate | None:
        """Move what overflows the window into the summary. Runs on the background worker."""
        with self.backend.lock(user_id):
            state = self.backend.load(user_id)
            evicted, kept = split_overflow(
                state.messages, max_messages=self.config.max_messages, max_tokens=self.config.max_tokens
            )
            if not evicted:
                return None
            update = summarize(
                [m.to_openai() for m in evicted],
                previous=state.brain.historical_summary,
                llm=self.llm,
                prompts=self.prompts,
                max_words=self.config.summary_max_words,
                input_tokens=self.config.llm_input_tokens,
                user=self.user_name,
                char=self.char_name,
            )
            brain = Brain(
                historical_summary=update.text,
                last_history_id=state.brain.last_history_id,
                summarized_through=evicted[-1].id,
                updated_at=(now or datetime.now(timezone.utc)).isoformat(),
                is_dirty=True,
            )
            self.backend.replace(user_id, kept, brain)
        log.info("summary for %s: folded %d messages (llm=%s)", user_id, len(evicted), update.used_llm)
        return update
