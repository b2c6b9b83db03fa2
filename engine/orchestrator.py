"""MemoryOrchestrator: build the prompt from every store before an LLM call, record the turn after.

    orch = MemoryOrchestrator.from_config("xiaoyue")          # reads ./config.yaml if present
    result = orch.build_prompt("昨天我们聊了什么", user_id="alice")
    reply = my_llm(result.messages)
    orch.record_turn("昨天我们聊了什么", reply, user_id="alice")
    orch.close()                                               # drains background writes

`record_turn` returns once the turn is in the user's durable journal and its chat's window; the
stores' work runs from the journal on the background worker (replayed after a crash, retried
after a failure, visible in `journal_status()` and in every prompt's diagnostics until done).
The sync methods are the implementation; the async ones run them in a thread.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from engine.adapters.embedder import Embedder
from engine.admin import MemoryAdmin
from engine.adapters.llm import LLM
from engine.character import Character, open_character
from engine.config import EngineConfig, open_config
from engine.factory import (
    cached_embedder,
    make_journal,
    make_llm,
    make_short_term_backend,
    make_stores,
    make_timezone,
)
from engine.fifo import ShuttingDownError
from engine.fusion import Budget, assemble, trim
from engine.journal import JournalPolicy, JournalStatus
from engine.persona import opening_lines, persona_text, time_text
from engine.paths import CharacterPaths, validate_id
from engine.prompts import Prompts
from engine.retrieval import Reader
from engine.shortterm import DEFAULT_CHAT, ShortTermMemory, newest_lines, validate_chat_id
from engine.shortterm.memory import turn_of
from engine.shortterm.turns import RecentTurn, history_window, recent_turns
from engine.stores.base import Hit, Message, Store, Turn
from engine.tokens import count_tokens, truncate_tokens
from engine.twins import in_thread
from engine.turns import PromptResult, check_turn_id, new_turn_id
from engine.worker import JobError, Worker

log = logging.getLogger(__name__)

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
        worker: Worker,
        journal_policy: JournalPolicy = JournalPolicy(),
        owned: Sequence[Worker] = (),
    ) -> None:
        """`worker` runs the journal's jobs; it is built by the application (`from_config` makes one)
        and may be shared between orchestrators. `owned`: the workers this orchestrator closes.
        Retrieval runs on the reader's own bounded per-store threads (engine/retrieval.py)."""
        self.character = character
        self.config = config
        self.paths = paths
        self.embedder = embedder
        self.short_term = short_term
        self.stores = list(stores)
        self.prompts = prompts
        self.tz = make_timezone(config.timezone)
        self.worker = worker
        self._owned = list(owned)
        self._closed = False
        self._reader = Reader(self.stores, embedder, config.retrieval)
        self._names = {"user": character.user_name, "char": character.name}
        self.journal = make_journal(config, paths, short_term=short_term, stores=self.stores, worker=worker,
                                    policy=journal_policy)
        # jionlp (time parsing, sentence splitting) takes ~0.8 s to load, tiktoken's encoding
        # ~0.3 s and the embedder's first call ~0.2 s: pay them in the background, so opening stays fast and the first message
        # usually finds them ready.
        self.worker.submit("warm_up", partial(_warm_up, embedder))
        # Work a crash (or a stop) left in any user's journal is replayed in the background.
        self.journal.open()

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
        worker: Worker | None = None,
        journal_policy: JournalPolicy | None = None,
    ) -> "MemoryOrchestrator":
        """Build everything from config: `config`, else `config_path`, else ./config.yaml, else defaults.
        `data_dir` overrides the config's; `embedder`, `memory_llm` and `stores` replace the
        configured ones (tests, demos, embedding the engine in an app). A `worker` passed in
        is shared, not closed by this orchestrator; a missing one is built (and closed)."""
        opened = open_character(character_id, open_config(config, path=config_path, data_dir=data_dir))
        paths, character, config = opened.paths, opened.character, opened.config
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
        owned: list[Worker] = []
        if worker is None:
            worker = Worker()
            owned.append(worker)
        return cls(
            character=character, config=config, paths=paths, embedder=embedder,
            short_term=short_term, stores=stores, prompts=prompts, worker=worker,
            journal_policy=journal_policy or JournalPolicy(), owned=owned,
        )

    # -- reading -------------------------------------------------------------------------------

    def build_prompt(
        self,
        message: str,
        *,
        user_id: str,
        chat_id: str | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        now: datetime | None = None,
        exclude_turns: Collection[str] = (),
        user_name: str | None = None,
        client_text: str = "",
    ) -> PromptResult:
        """The messages for the LLM. The conversation is `history` (the OpenAI-format messages the
        client sent before `message`) when given, else the stored window of (user, chat); either
        is trimmed to the window budget. The summary is that chat's. `exclude_turns`: stored turns
        that must not come back (the one a regenerated or continued reply replaces): not from the
        window, not as diary lines, not as facts that only they stated. `user_name`: what the
        character calls the user in this prompt (a frontend's persona) instead of the character file's.
        `client_text`: what the client itself sends the model besides the conversation (a frontend's
        card and lore, kept by `service.client_system: append`): world-book entries in it are not
        injected again."""
        started = time.perf_counter()
        self._check_open()
        validate_id(user_id, kind="user id")
        chat = _chat(chat_id)
        now = self._local(now)
        exclude = frozenset(exclude_turns)
        self.journal.touch(user_id)
        state = self.short_term.state(user_id, chat_id=chat)
        if history is None:
            window = self.short_term.window(user_id, chat_id=chat, state=state)
            if exclude:
                window = [m for m in window if turn_of(m.id) not in exclude]
        else:
            window = history_window(
                history, max_messages=self.config.short_term.max_messages, max_tokens=self.config.short_term.max_tokens
            )
        recent = tuple(m.to_openai() for m in window)
        since_last = now - datetime.fromisoformat(window[-1].at) if history is None and window else None
        paused = since_last is not None and since_last > timedelta(minutes=self.config.retrieval.query_pause_minutes)
        query_text = self._query_text(message, () if paused else recent)

        # One embedding call for the query and every store's extra pieces, then every store.
        hits_by_tier, diagnostics, timings = self._retrieve_all(
            message, user_id=user_id, now=now, recent=recent, text=query_text, since_last=since_last, exclude=exclude,
            client_text=client_text,
        )
        diagnostics = [*diagnostics, *(f"short_term: {p}" for p in state.problems), *self.journal.diagnostics(user_id)]
        budget = Budget(self.config.retrieval.budget_tokens, self.config.retrieval.caps.model_dump())
        summary = self._summary_hit(state.brain.historical_summary.strip(), hits_by_tier, budget)
        if summary is not None:
            hits_by_tier["summary"] = [summary]
        opening = [] if window else opening_lines(self.character)
        assembly = assemble(
            persona=persona_text(self.character, self.prompts),
            hits_by_tier=hits_by_tier,
            templates={tier: self.prompts.get(tier) for tier in hits_by_tier},
            time_text=time_text(self.prompts, now, language=self.config.language, zone=self.config.timezone),
            window=opening + list(recent),
            window_tokens=sum(count_tokens(m["content"]) for m in opening) + sum(m.tokens for m in window),
            message=message,
            budget=budget,
            names=self._names if not user_name else {**self._names, "user": user_name},
        )
        timings["total"] = _ms(started)
        return PromptResult(
            messages=assembly.messages, hits=assembly.kept, dropped=assembly.dropped, tokens=assembly.tokens,
            timings_ms=timings, diagnostics=tuple(diagnostics), now=now, query_text=query_text,
        )

    abuild_prompt = in_thread(build_prompt)

    def _summary_hit(self, summary: str, hits_by_tier: Mapping[str, Sequence[Hit]], budget: Budget) -> Hit | None:
        """The rolling summary within its cap. A summary the memory LLM wrote keeps its share of
        the budget. The offline extract (first sentences of turns the diary holds in full, and can
        show whole when they matter to the message) takes only what the other tiers leave of the
        total, as its newest whole lines: under a tight budget the message's own diary lines come
        first (LoCoMo dev at 1,500 memory tokens: multi-hop 0.717 -> 0.749, single-hop 0.936 -> 0.952)."""
        if not summary:
            return None
        cap = self.config.retrieval.caps.summary
        reason = "rolling summary of earlier turns"
        if not self.short_term.summary_is_extract:
            return Hit("summary", truncate_tokens(summary, cap), 1.0, reason, pinned=True)
        kept, _ = trim(hits_by_tier, budget)
        left = budget.total - sum(h.tokens for hits in kept.values() for h in hits)
        text = newest_lines(summary, min(cap, left))
        return Hit("summary", text, 1.0, reason + " (offline extract, within what the other tiers left)",
                   pinned=True) if text else None

    def _retrieve_all(
        self, message: str, *, user_id: str, now: datetime, recent: Sequence[Message], text: str,
        since_last: timedelta | None = None, exclude: frozenset[str] = frozenset(), client_text: str = "",
    ) -> tuple[dict[str, list[Hit]], list[str], dict[str, float]]:
        """Embed once and ask every store, under admission control and per-store time limits
        (engine/retrieval.py); an embedder failure degrades to the stores that need no vector."""
        read = self._reader.read(message, user_id=user_id, now=now, recent=recent, text=text, since_last=since_last,
                                 exclude=exclude, client_text=client_text)
        return read.hits_by_tier, list(read.diagnostics), dict(read.timings_ms)

    # -- writing -------------------------------------------------------------------------------

    def record_turn(
        self,
        user_message: str,
        assistant_message: str,
        *,
        user_id: str,
        chat_id: str | None = None,
        at: datetime | None = None,
        turn_id: str | None = None,
        replaces: str | None = None,
    ) -> Turn:
        """Durably journal the turn and add it to the chat's window, then return; the stores'
        work and the summary follow from the journal in the background. Recording a `turn_id`
        again is a no-op while it is in the chat's window or among the user's last
        `JournalPolicy.seen_ids` (256) turns (a client's retry); the diary and facts never take a
        turn id twice, but re-recording a whole old history would put its turns back in the window. `replaces`: a turn id to forget in the same durable write
        (a regenerated reply replaces the previous one in the window, diary and facts)."""
        self._check_open()
        validate_id(user_id, kind="user id")
        for value in (turn_id, replaces):
            if value is not None:
                check_turn_id(value)
        at = self._local(at)
        turn = Turn(
            id=turn_id or new_turn_id(at), user_id=user_id, at=at, user=user_message, assistant=assistant_message,
            chat_id=_chat(chat_id),
        )
        self.journal.record(turn, replaces=replaces)
        return turn

    arecord_turn = in_thread(record_turn)

    def forget_turn(self, turn_id: str, *, user_id: str) -> None:
        """Take a turn back: out of its window now (durably journaled), then out of every store
        that can forget (`forget(user_id, turn_id)`: diary entry, facts it alone produced) as
        background jobs. A turn already folded into the summary stays in the summary's text."""
        validate_id(user_id, kind="user id")
        self.journal.forget(user_id, check_turn_id(turn_id))

    aforget_turn = in_thread(forget_turn)

    def recent_turns(self, user_id: str, *, chat_id: str | None = None, n: int = 2) -> tuple[RecentTurn, ...]:
        """The last `n` recorded turns still in the chat's window, oldest first (regenerate detection)."""
        validate_id(user_id, kind="user id")
        chat = _chat(chat_id)
        return recent_turns(self.short_term.state(user_id, chat_id=chat).messages, n)

    arecent_turns = in_thread(recent_turns)

    @functools.cached_property
    def admin(self) -> MemoryAdmin:
        """Look at and correct this character's memory: users, diary, facts, world book, status
        (typed; what the CLI, the HTTP memory API and the inspector call)."""
        return MemoryAdmin(self)

    def explain(self, message: str, *, store: str, user_id: str | None = None,
                now: datetime | None = None) -> tuple[list[Hit], list[str]]:
        """What one store would contribute for `message`, and the diagnostics; nothing is recorded
        and no window is read (the world book's "try a message", previews)."""
        hits, diagnostics, _ = self.explain_stores(message, stores=(store,), user_id=user_id, now=now)
        return hits[store], diagnostics

    def explain_stores(self, message: str, *, stores: Sequence[str], user_id: str | None = None,
                       now: datetime | None = None) -> tuple[dict[str, list[Hit]], list[str], np.ndarray | None]:
        """`explain` for several stores at once, from one embedding call: (hits per store, the
        diagnostics, the message's vector, for a search that follows; None when the embedder failed)."""
        self._check_open()
        have = {s.name for s in self.stores}
        for store in stores:
            if store not in have:
                raise KeyError(f"no store named {store!r} (have: {', '.join(s.name for s in self.stores)})")
        uid = validate_id(user_id, kind="user id") if user_id else "-"
        read = self._reader.read(message, user_id=uid, now=self._local(now), recent=(), text=message, only=set(stores))
        return ({store: list(read.hits_by_tier.get(store, [])) for store in stores}, list(read.diagnostics),
                read.query.vector)

    def journal_status(self, user_id: str | None = None) -> JournalStatus:
        """Unfinished memory work per user (pending and failed jobs with their errors), read from
        the journal files, so it includes other processes' work. For `kioku status` and `/health`."""
        if user_id is not None:
            validate_id(user_id, kind="user id")
        return self.journal.status(user_id)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued memory job has run once (a failed one then waits for its retry);
        True if that happened within `timeout`."""
        return self.worker.flush(timeout)

    aflush = in_thread(flush)

    @property
    def background_errors(self) -> list[JobError]:
        """Recent failures of journal jobs and other background tasks (see `journal_status()` for
        what is still unfinished)."""
        return [*self.journal.errors, *self.worker.errors]

    def close(self, timeout: float | None = None) -> None:
        """Wait for the queued memory jobs (up to `timeout`: unfinished ones stay in the journal
        and are replayed at the next open), then close the stores."""
        self._closed = True
        self._reader.close()  # first: prompts still waiting for a place are refused at once
        self.worker.flush(timeout)
        self.journal.close()
        for owned in self._owned:
            owned.close(0)
        for store in self.stores:
            store.close()
        close = getattr(self.embedder, "close", None)
        if close is not None:
            close()

    def _check_open(self) -> None:
        if self._closed:
            raise ShuttingDownError("this memory orchestrator is closed (the service is shutting down)")

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


def _chat(chat_id: str | None) -> str:
    return DEFAULT_CHAT if chat_id is None else validate_chat_id(chat_id)


def _warm_up(embedder: Embedder) -> None:
    from engine.adapters.jio import split_sentences
    from engine.timeparse import warm_up

    warm_up()
    split_sentences("预热。warm up.")
    count_tokens("warm up")
    embedder.embed(["warm up"], role="query")


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
