"""MemoryOrchestrator: build the prompt from every store before an LLM call, record the turn after.

    orch = MemoryOrchestrator.from_config("xiaoyue")          # reads ./config.yaml if present
    result = orch.build_prompt("昨天我们聊了什么", user_id="alice")
    reply = my_llm(result.messages)
    orch.record_turn("昨天我们聊了什么", reply, user_id="alice")
    orch.close()                                               # drains background writes

The sync methods are the implementation; the async ones run them in a thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from engine.adapters.embedder import Embedder
from engine.adapters.llm import LLM
from engine.character import Character, load_character
from engine.config import EngineConfig, load_config, merge_config
from engine.factory import (
    cached_embedder,
    default_config_path,
    make_llm,
    make_short_term_backend,
    make_stores,
    make_timezone,
)
from engine.fusion import Budget, assemble
from engine.paths import CharacterPaths, character_paths, validate_id
from engine.prompts import Prompts
from engine.retrieval import Reader
from engine.shortterm import ShortTermMemory
from engine.stores.base import Hit, Message, Store, Turn
from engine.tokens import count_tokens, truncate_tokens
from engine.worker import JobError, Worker

log = logging.getLogger(__name__)

_WEEKDAYS = {
    "zh": ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"],
    "en": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
}


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


class MemoryOrchestrator:
    def __init__(
        self,
        *,
        character: Character,
        config: EngineConfig,
        paths: CharacterPaths,
        embedder: Embedder,
        short_term: ShortTermMemory,
        stores: Sequence[Store],
        prompts: Prompts,
    ) -> None:
        self.character = character
        self.config = config
        self.paths = paths
        self.embedder = embedder
        self.short_term = short_term
        self.stores = list(stores)
        self.prompts = prompts
        self.tz = make_timezone(config.timezone)
        self.worker = Worker()
        self._reader = Reader(self.stores, embedder, config.retrieval)
        self._names = {"user": character.user_name, "char": character.name}
        # jionlp (time parsing, sentence splitting) takes ~0.8 s to load, tiktoken's encoding
        # ~0.3 s and the embedder's first call ~0.2 s: pay them in the background, so opening stays fast and the first message
        # usually finds them ready.
        self.worker.submit("warm_up", partial(_warm_up, embedder))

    @classmethod
    def from_config(
        cls,
        character_id: str,
        *,
        config: EngineConfig | None = None,
        config_path: Path | str | None = None,
        data_dir: Path | str | None = None,
        embedder: Embedder | None = None,
        memory_llm: LLM | None = None,
        stores: Sequence[Store] | None = None,
        progress: bool = False,
    ) -> "MemoryOrchestrator":
        """Build everything from config: `config`, else `config_path`, else ./config.yaml, else defaults.
        `data_dir` overrides the config's; `embedder`, `memory_llm` and `stores` replace the
        configured ones (tests, demos, embedding the engine in an app)."""
        if config is None:
            config = load_config(config_path if config_path is not None else default_config_path())
        if data_dir is not None:
            config = config.model_copy(update={"data_dir": Path(data_dir)})
        paths = character_paths(config.data_dir, character_id)
        character = load_character(paths)
        config = merge_config(config, character.config, source=str(paths.character_file))
        prompts = Prompts(config.language)
        if embedder is None:
            embedder = cached_embedder(config.embedder, paths)
        if memory_llm is None:
            memory_llm = make_llm(config.effective_memory_llm)
        short_term = ShortTermMemory(
            make_short_term_backend(config, paths),
            config=config.short_term,
            llm=memory_llm,
            prompts=prompts,
            user_name=character.user_name,
            char_name=character.name,
        )
        if stores is None:
            stores = make_stores(
                config, paths=paths, embedder=embedder, memory_llm=memory_llm, prompts=prompts, progress=progress
            )
        return cls(
            character=character, config=config, paths=paths, embedder=embedder,
            short_term=short_term, stores=stores, prompts=prompts,
        )

    # -- reading -------------------------------------------------------------------------------

    def build_prompt(self, message: str, *, user_id: str, now: datetime | None = None) -> PromptResult:
        started = time.perf_counter()
        validate_id(user_id, kind="user id")
        now = self._local(now)
        state = self.short_term.state(user_id)
        window = self.short_term.window(user_id, state=state)
        recent = tuple(m.to_openai() for m in window)
        query_text = self._query_text(message, recent)

        # One embedding call for the query and every store's extra pieces, then every store.
        hits_by_tier, diagnostics, timings = self._retrieve_all(
            message, user_id=user_id, now=now, recent=recent, text=query_text
        )
        summary = state.brain.historical_summary.strip()
        if summary:
            cap = self.config.retrieval.caps.summary
            hits_by_tier["summary"] = [
                Hit("summary", truncate_tokens(summary, cap), 1.0, "rolling summary of earlier turns", pinned=True)
            ]
        opening = [] if window else self._opening_lines()
        assembly = assemble(
            persona=self._persona(),
            hits_by_tier=hits_by_tier,
            templates={tier: self.prompts.get(tier) for tier in hits_by_tier},
            time_text=self._time_text(now),
            window=opening + list(recent),
            window_tokens=sum(count_tokens(m["content"]) for m in opening) + sum(m.tokens for m in window),
            message=message,
            budget=Budget(self.config.retrieval.budget_tokens, self.config.retrieval.caps.model_dump()),
            names=self._names,
        )
        timings["total"] = _ms(started)
        return PromptResult(
            messages=assembly.messages, hits=assembly.kept, dropped=assembly.dropped, tokens=assembly.tokens,
            timings_ms=timings, diagnostics=tuple(diagnostics), now=now, query_text=query_text,
        )

    async def abuild_prompt(self, message: str, *, user_id: str, now: datetime | None = None) -> PromptResult:
        return await asyncio.to_thread(self.build_prompt, message, user_id=user_id, now=now)

    def _retrieve_all(
        self, message: str, *, user_id: str, now: datetime, recent: Sequence[Message], text: str
    ) -> tuple[dict[str, list[Hit]], list[str], dict[str, float]]:
        """Embed once and ask every store, under admission control and per-store time limits
        (engine/retrieval.py); an embedder failure degrades to the stores that need no vector."""
        read = self._reader.read(message, user_id=user_id, now=now, recent=recent, text=text)
        return read.hits_by_tier, list(read.diagnostics), dict(read.timings_ms)

    # -- writing -------------------------------------------------------------------------------

    def record_turn(
        self,
        user_message: str,
        assistant_message: str,
        *,
        user_id: str,
        at: datetime | None = None,
        turn_id: str | None = None,
    ) -> Turn:
        """Append the turn to the window durably, then queue the stores' writes and the summary.
        Recording the same `turn_id` twice is a no-op."""
        validate_id(user_id, kind="user id")
        at = self._local(at)
        turn = Turn(id=turn_id or new_turn_id(at), user_id=user_id, at=at, user=user_message, assistant=assistant_message)
        if not self.short_term.add_turn(turn):
            return turn
        for store in self.stores:
            self.worker.submit(f"{store.name}.record", partial(store.record, turn))
        self.worker.submit("summary.fold", partial(self.short_term.fold, user_id, now=at))
        return turn

    async def arecord_turn(
        self, user_message: str, assistant_message: str, *, user_id: str, at: datetime | None = None,
        turn_id: str | None = None,
    ) -> Turn:
        return await asyncio.to_thread(
            self.record_turn, user_message, assistant_message, user_id=user_id, at=at, turn_id=turn_id
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for the queued memory writes; True if they all ran."""
        return self.worker.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.flush, timeout)

    @property
    def background_errors(self) -> list[JobError]:
        return list(self.worker.errors)

    def close(self) -> None:
        self._reader.close()  # first: prompts still waiting for a place are refused at once
        self.worker.close()
        for store in self.stores:
            store.close()
        close = getattr(self.embedder, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> "MemoryOrchestrator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def store(self, name: str) -> Store:
        for s in self.stores:
            if s.name == name:
                return s
        raise KeyError(f"no store named {name!r} (have: {', '.join(s.name for s in self.stores)})")

    # -- pieces --------------------------------------------------------------------------------

    def _local(self, value: datetime | None) -> datetime:
        if value is None:
            return datetime.now(self.tz)
        if value.tzinfo is None:
            # A naive time is taken as the user's local wall time.
            return value.replace(tzinfo=self.tz)
        return value.astimezone(self.tz)

    def _query_text(self, message: str, recent: Sequence[Message]) -> str:
        n = self.config.retrieval.query_recent_turns * 2
        context = [m["content"] for m in recent[-n:]] if n else []
        return "\n".join([message, *context])

    def _persona(self) -> str:
        c = self.character
        text = self.prompts.render(
            "persona",
            settings=c.settings, personality=c.personality, user_mask=c.user_mask,
            message_examples=c.message_examples, prompt=c.prompt,
        )
        return _drop_empty_sections(text)

    def _opening_lines(self) -> list[Message]:
        roles = ("user", "assistant")
        return [{"role": roles[i % 2], "content": line} for i, line in enumerate(self.character.opening_lines)]

    def _time_text(self, now: datetime) -> str:
        weekday = _WEEKDAYS.get(self.config.language, _WEEKDAYS["en"])[now.weekday()]
        return self.prompts.render(
            "time", now=now.strftime("%Y-%m-%d %H:%M"), weekday=weekday, timezone=self.config.timezone
        )


def _warm_up(embedder: Embedder) -> None:
    from engine.adapters.jio import split_sentences
    from engine.timeparse import warm_up

    warm_up()
    split_sentences("预热。warm up.")
    count_tokens("warm up")
    embedder.embed(["warm up"], role="query")


def new_turn_id(at: datetime) -> str:
    return f"{at.astimezone(timezone.utc):%Y%m%dT%H%M%S%f}-{secrets.token_hex(3)}"


_HEADING = re.compile(r"^\s*(【[^】]*】|\[[^\]]*\])\s*$")


def _drop_empty_sections(text: str) -> str:
    """Remove template headings whose section came out empty (a character without examples)."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text)]
    kept = [b for b in blocks if b and not _HEADING.match(b)]
    return "\n\n".join(kept)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
