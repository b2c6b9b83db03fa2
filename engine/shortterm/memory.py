"""The short-term tier: the recent window of messages and the rolling summary of what left it,
per (user, chat).

A fold never calls the LLM under a lock: `prepare_fold` reads the state and writes the summary
with no lock held; `apply_fold` stores it only if the window still starts with what was folded
and the summary is still the one it was computed from (else the caller computes it again).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import logging
from collections.abc import Sequence
from datetime import datetime, timezone

from engine.adapters.llm import LLM
from engine.config import ShortTermConfig
from engine.errors import DataFileError, EngineError
from engine.prompts import Prompts
from engine.shortterm.backend import ShortTermBackend
from engine.shortterm.chats import DEFAULT_CHAT
from engine.shortterm.state import Brain, Fold, State, WindowMessage
from engine.shortterm.summarizer import SummaryUpdate, summarize
from engine.stores.base import Turn
from engine.tokens import count_tokens

log = logging.getLogger(__name__)

FOLD_ATTEMPTS = 3


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


def turn_messages(turn: Turn) -> list[WindowMessage]:
    at = turn.at.isoformat()
    return [
        WindowMessage(f"{turn.id}:u", "user", turn.user, at, count_tokens(turn.user)),
        WindowMessage(f"{turn.id}:a", "assistant", turn.assistant, at, count_tokens(turn.assistant)),
    ]


def turn_of(message_id: str) -> str | None:
    """The turn id of a recorded message id (`<turn>:u` / `<turn>:a`); None for other messages."""
    head, sep, role = message_id.rpartition(":")
    return head if sep and role in ("u", "a") else None


@dataclass(eq=False)
class ShortTermMemory:
    backend: ShortTermBackend
    _: KW_ONLY
    config: ShortTermConfig
    llm: LLM | None
    prompts: Prompts
    user_name: str = "user"
    char_name: str = "assistant"

    # -- reading -------------------------------------------------------------------------------

    def state(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> State:
        return self.backend.load(user_id, chat_id=chat_id)

    def window(self, user_id: str, *, chat_id: str = DEFAULT_CHAT, state: State | None = None) -> list[WindowMessage]:
        """What goes into the prompt as the conversation: the newest messages within both limits.
        The background fold keeps the stored window within them too; this covers the gap.
        Pass a `state` already loaded to avoid loading it again."""
        messages = (state or self.backend.load(user_id, chat_id=chat_id)).messages
        return self.fit(messages)

    def fit(self, messages: list[WindowMessage]) -> list[WindowMessage]:
        return fit_window(messages, max_messages=self.config.max_messages, max_tokens=self.config.max_tokens)

    @property
    def summary_is_extract(self) -> bool:
        """True when no memory LLM writes the summary: it is then the offline extract, the first
        sentences of turns the diary holds in full."""
        return self.llm is None

    def summary(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> str:
        return self.backend.load(user_id, chat_id=chat_id).brain.historical_summary

    def contains(self, turn: Turn, *, state: State | None = None) -> bool:
        state = state or self.backend.load(turn.user_id, chat_id=turn.chat_id)
        first, last = f"{turn.id}:u", f"{turn.id}:a"
        return state.brain.last_history_id == last or any(m.id in (first, last) for m in state.messages)

    # -- writing -------------------------------------------------------------------------------

    def add_turn(self, turn: Turn, *, durable: bool = True) -> bool:
        """Append the turn's two messages to its chat; False if it was already there (same id).
        `durable=False` when the caller's journal already holds the turn durably."""
        messages = turn_messages(turn)
        with self.backend.lock(turn.user_id, chat_id=turn.chat_id):
            state = self.backend.load(turn.user_id, chat_id=turn.chat_id)
            if self.contains(turn, state=state):
                return False
            state.brain.last_history_id = messages[-1].id
            self.backend.append(turn.user_id, messages, state.brain, chat_id=turn.chat_id, durable=durable)
        return True

    def remove_turn(self, user_id: str, turn_id: str, *, chat_id: str = DEFAULT_CHAT) -> int:
        """Take a turn's messages out of the window (regenerate, forget); 0 if already gone."""
        return self.backend.remove(user_id, (f"{turn_id}:u", f"{turn_id}:a"), chat_id=chat_id)

    def prepare_fold(self, user_id: str, *, chat_id: str = DEFAULT_CHAT, now: datetime | None = None) -> Fold | None:
        """Compute the fold of what overflows the window (LLM call, no lock held); None if nothing does."""
        state = self.backend.load(user_id, chat_id=chat_id)
        if not state.brain_ok:
            raise DataFileError(f"not folding into an unreadable summary: {'; '.join(state.problems)}")
        evicted, _kept = split_overflow(
            state.messages, max_messages=self.config.max_messages, max_tokens=self.config.max_tokens
        )
        if not evicted:
            return None
        update = self.summarize(evicted, previous=state.brain.historical_summary)
        log.info("summary for %s/%s: folding %d messages (llm=%s)", user_id, chat_id, len(evicted), update.used_llm)
        brain = Brain(
            historical_summary=update.text,
            last_history_id=state.brain.last_history_id,
            summarized_through=evicted[-1].id,
            updated_at=(now or datetime.now(timezone.utc)).isoformat(),
            is_dirty=True,
        )
        return Fold(
            tuple(m.id for m in evicted), state.brain.historical_summary, state.brain.summarized_through, brain, update
        )

    def apply_fold(self, user_id: str, fold: Fold, *, chat_id: str = DEFAULT_CHAT) -> bool:
        return self.backend.apply_fold(user_id, fold, chat_id=chat_id)

    def fold(self, user_id: str, *, chat_id: str = DEFAULT_CHAT, now: datetime | None = None) -> SummaryUpdate | None:
        """Move what overflows the window into the summary; recomputed when another writer changed
        the state meanwhile. Returns how the applied summary was written, None if nothing overflowed."""
        for _ in range(FOLD_ATTEMPTS):
            fold = self.prepare_fold(user_id, chat_id=chat_id, now=now)
            if fold is None:
                return None
            if self.apply_fold(user_id, fold, chat_id=chat_id):
                return fold.update
        raise FoldConflictError(f"summary of {user_id}/{chat_id}: the window kept changing; {FOLD_ATTEMPTS} attempts")

    def summarize(self, evicted: Sequence[WindowMessage], *, previous: str) -> SummaryUpdate:
        return summarize(
            [m.to_openai() for m in evicted],
            previous=previous,
            llm=self.llm,
            prompts=self.prompts,
            max_words=self.config.summary_max_words,
            max_tokens=self.config.summary_max_tokens,
            input_tokens=self.config.llm_input_tokens,
            user=self.user_name,
            char=self.char_name,
        )


class FoldConflictError(EngineError, RuntimeError):
    """Other writers changed the window during every attempt; the journal retries the fold later."""
