"""Bounded, honest reads: admission control, the one embedding call, and the store fan-out.

    reader = Reader(stores, embedder, config.retrieval)
    read = reader.read(message, user_id="alice", now=now, recent=recent, text=query_text)
    read.hits_by_tier, read.diagnostics, read.timings_ms

- At most `max_prompts_in_flight` prompts embed and read at once; the rest wait in arrival order
  and the wait is reported as `timings_ms["admission"]`.
- The query text and the stores' extra pieces are embedded in one batch. When the embedder fails
  the prompt goes on without vectors (`Query.vector is None`, no pieces): a store that sets
  `needs_vector = True` is skipped and named; every other store is asked anyway (keywords, time
  ranges), and if it breaks on the missing vector it is named like any failing store.
- Every store runs on its own lane of daemon threads and gets `store_timeout_s` from the moment
  its call starts, never counting a queue. A call still running past its limit is abandoned (it
  finishes in the background and its answer is dropped); a store with `stuck_calls_per_store`
  such calls is skipped at once until they return, so one hung store takes a bounded number of
  threads and never delays the other stores or later prompts. Daemon threads: a hung store
  never keeps the process from exiting.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

import numpy as np

from engine.adapters.embedder import Embedder
from engine.config import RetrievalConfig
from engine.fifo import FifoGate
from engine.runtime import configure_this_thread
from engine.stores.base import Hit, Message, Query, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Read:
    """What the stores answered for one prompt."""

    query: Query
    """What every store was asked (`vector` is None when the embedder failed)."""
    hits_by_tier: dict[str, list[Hit]]
    """Per store that answered in time: its hits, in its order."""
    diagnostics: tuple[str, ...]
    """Skipped stores with the reason, the embedder's failure, every store's `problems()`."""
    timings_ms: dict[str, float]
    """'admission' (waiting for a place), 'embed', and per store the time since its call started."""


@dataclass(frozen=True)
class _Answer:
    hits: list[Hit] | None
    """None when retrieve was not called (no vector) or raised."""
    error: BaseException | None
    problems: tuple[str, ...]
    ms: float


class Reader:
    """Answers prompts from `stores` with `embedder`, under the limits of `config`."""

    def __init__(self, stores: Sequence[Store], embedder: Embedder, config: RetrievalConfig) -> None:
        self.stores = list(stores)
        self.embedder = embedder
        self.config = config
        self.gate = FifoGate(config.max_prompts_in_flight, name="prompts")
        # When a call starts, a store has at most one live call per admitted prompt and fewer
        # than stuck_calls_per_store stuck ones: with this many threads a call never queues.
        size = config.max_prompts_in_flight + config.stuck_calls_per_store
        self.lanes = [Lane(s.name, size=size, stuck_limit=config.stuck_calls_per_store) for s in self.stores]

    def read(
        self, message: str, *, user_id: str, now: datetime, recent: Sequence[Message], text: str,
        only: Collection[str] | None = None, since_last: timedelta | None = None,
        exclude: frozenset[str] = frozenset(), client_text: str = "",
    ) -> Read:
        """Embed once and ask every store (or the stores named in `only`, for previews)."""
        timings: dict[str, float] = {}
        diagnostics: list[str] = []
        with self.gate.admit() as waited:
            timings["admission"] = round(waited * 1000, 3)
            query = self._embed(message, user_id=user_id, now=now, recent=tuple(recent), text=text,
                                timings=timings, diagnostics=diagnostics)
            query = dataclasses.replace(query, since_last=since_last, exclude=exclude, client_text=client_text)
            hits_by_tier = self._ask_all(query, timings, diagnostics, only=only)
        return Read(query, hits_by_tier, tuple(diagnostics), timings)

    def close(self) -> None:
        """Refuse new prompts (waiting ones get ShuttingDownError); stuck calls are not waited for."""
        self.gate.close()
        for lane in self.lanes:
            lane.close()

    # -- embedding -------------------------------------------------------------------------

    def _embed(
        self, message: str, *, user_id: str, now: datetime, recent: tuple[Message, ...], text: str,
        timings: dict[str, float], diagnostics: list[str],
    ) -> Query:
        limit = self.config.max_query_chars
        searched = message[:limit]
        if len(message) > limit:
            diagnostics.append(
                f"query: the message has {len(message):,} characters; pieces for search by meaning "
                f"come from its first {limit:,}"
            )
        pieces_by_store: dict[str, list[str]] = {}
        for store in self.stores:
            try:
                pieces_by_store[store.name] = list(store.query_texts(searched, recent))
            except Exception as exc:  # noqa: BLE001 - the store is still asked, without its pieces
                log.warning("store %s: query_texts failed: %s: %s", store.name, type(exc).__name__, exc)
                diagnostics.append(f"{store.name}: no query pieces, query_texts failed: {type(exc).__name__}: {exc}")
        batch = [text] + [t for texts in pieces_by_store.values() for t in texts]
        # Several stores often ask for the same text (the bare message): each is embedded once.
        unique = list(dict.fromkeys(batch))
        t0 = time.perf_counter()
        vectors: np.ndarray | None
        try:
            found = self.embedder.embed(unique, role="query")
            if len(found) != len(unique):
                raise ValueError(f"the embedder returned {len(found)} vectors for {len(unique)} texts")
            row = {t: i for i, t in enumerate(unique)}
            vectors = np.asarray(found)[[row[t] for t in batch]]
        except Exception as exc:  # noqa: BLE001 - no vectors degrades the prompt, it does not fail it
            log.warning("embedder failed; answering without vectors: %s: %s", type(exc).__name__, exc)
            diagnostics.append(f"embedder: failed, answered without vectors: {type(exc).__name__}: {exc}")
            vectors = None
        timings["embed"] = _ms(t0)
        pieces: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
        if vectors is not None:
            offset = 1
            for name, texts in pieces_by_store.items():
                pieces[name] = (tuple(texts), vectors[offset : offset + len(texts)])
                offset += len(texts)
        return Query(
            message=message, user_id=user_id, now=now, recent=recent, text=text,
            vector=None if vectors is None else vectors[0], pieces=pieces,
        )

    # -- fan-out ---------------------------------------------------------------------------

    def _ask_all(
        self, query: Query, timings: dict[str, float], diagnostics: list[str], *, only: Collection[str] | None = None
    ) -> dict[str, list[Hit]]:
        timeout = self.config.store_timeout_s
        calls: list[tuple[Store, Lane, _Call | str]] = []
        for store, lane in zip(self.stores, self.lanes):
            if only is not None and store.name not in only:
                continue
            answer = query.vector is not None or not getattr(store, "needs_vector", False)
            calls.append((store, lane, lane.start(partial(_ask, store, query, answer=answer))))
        hits_by_tier: dict[str, list[Hit]] = {}
        for store, lane, call in calls:
            name = store.name
            if isinstance(call, str):
                log.warning("store %s skipped: %s", name, call)
                diagnostics.append(f"{name}: skipped, {call}")
                continue
            got = lane.wait(call, timeout)
            if got is None:
                why = f"no answer within {timeout:g}s of starting" if call.started_at else (
                    f"its call did not start within {timeout:g}s (the host is overloaded)"
                )
                log.warning("store %s skipped: %s", name, why)
                diagnostics.append(f"{name}: skipped, {why}")
                timings[name] = _ms(call.started_at) if call.started_at else 0.0
                continue
            timings[name] = got.ms
            if got.error is not None:
                exc = got.error
                log.warning("store %s failed and was skipped: %s: %s", name, type(exc).__name__, exc)
                without = " (asked without a query vector: the embedder failed)" if query.vector is None else ""
                diagnostics.append(f"{name}: skipped, failed{without}: {type(exc).__name__}: {exc}")
            elif got.hits is None:
                diagnostics.append(f"{name}: skipped, it needs the query vector and the embedder failed")
            else:
                hits_by_tier[name] = got.hits
            diagnostics.extend(f"{name}: {p}" for p in got.problems)
        return hits_by_tier


def _ask(store: Store, query: Query, *, answer: bool) -> _Answer:
    """One store's part of a prompt, on its lane: retrieve (unless it cannot), then its problems."""
    t = time.perf_counter()
    hits: list[Hit] | None = None
    error: BaseException | None = None
    if answer:
        try:
            hits = list(store.retrieve(query))
        except Exception as exc:  # noqa: BLE001 - one store failing must not fail the prompt
            error = exc
    ms = _ms(t)
    problems: tuple[str, ...] = ()
    report = getattr(store, "problems", None)
    if report is not None:
        try:
            problems = tuple(report())
        except Exception as exc:  # noqa: BLE001 - a broken report is itself a problem to show
            problems = (f"problems() failed: {type(exc).__name__}: {exc}",)
    return _Answer(hits, error, problems, ms)


class _Call:
    def __init__(self, fn: Callable[[], _Answer]) -> None:
        self.fn = fn
        self.started = threading.Event()
        self.started_at = 0.0
        self.done = threading.Event()
        self.value: _Answer | None = None
        self.abandoned = False


class Lane:
    """The daemon threads one store's calls run on: at most `size`, started when needed, and a
    call is only started when a thread is free for it (so its time limit never counts a queue)."""

    def __init__(self, name: str, *, size: int, stuck_limit: int) -> None:
        self.name = name
        self.size = size
        self.stuck_limit = stuck_limit
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._threads = 0
        self._idle = 0
        self.stuck = 0
        """Calls abandoned past their time limit that are still running."""
        self._closed = False

    @property
    def threads(self) -> int:
        return self._threads

    def start(self, fn: Callable[[], _Answer]) -> _Call | str:
        """Run `fn` on a free thread now; or say why not (a string for the diagnostics)."""
        with self._lock:
            if self._closed:
                return "shutting down"
            if self.stuck >= self.stuck_limit:
                return f"{self.stuck} earlier calls are still running past the time limit"
            if self._idle:
                self._idle -= 1
            elif self._threads < self.size:
                self._threads += 1
                threading.Thread(target=self._work, name=f"kioku-{self.name}", daemon=True).start()
            else:
                return f"all {self.size} of its threads are busy"
            call = _Call(fn)
            self._queue.put(call)
        return call

    def wait(self, call: _Call, timeout: float) -> _Answer | None:
        """The call's answer, or None if it gave none within `timeout` of starting (then it is
        abandoned: it runs on, counted as stuck, and its answer is dropped)."""
        if call.started.wait(timeout):
            remaining = call.started_at + timeout - time.perf_counter()
            if call.done.wait(max(0.0, remaining)):
                return call.value
        with self._lock:
            if call.done.is_set():  # finished while we were deciding: an answer is an answer
                return call.value
            call.abandoned = True
            self.stuck += 1
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for _ in range(self._threads):
                self._queue.put(None)

    def _work(self) -> None:
        configure_this_thread()
        while True:
            call = self._queue.get()
            if call is None:
                return
            call.started_at = time.perf_counter()
            call.started.set()
            try:
                value = call.fn()
            except BaseException as exc:  # noqa: BLE001 - _ask catches Exception; keep the thread alive
                value = _Answer(None, exc, (), _ms(call.started_at))
            with self._lock:
                call.value = value
                call.done.set()
                if call.abandoned:
                    self.stuck -= 1
                    log.warning("store %s answered %.1fs after it started, too late for its prompt",
                                self.name, time.perf_counter() - call.started_at)
                self._idle += 1


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
