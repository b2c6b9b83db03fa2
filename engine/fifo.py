"""A FIFO gate: at most `limit` holders at once; the rest wait in the order they arrived.

    gate = FifoGate(8)
    with gate.admit() as waited_s:
        ...                                   # at most 8 threads are here at once

`threading.Semaphore` wakes its waiters in no particular order, so under load a late arrival can
overtake one that has already waited for seconds. Here every waiter takes a ticket and the oldest
ticket is served first, so a wait is bounded by the work admitted before it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from engine.errors import EngineError


class ShuttingDownError(EngineError, RuntimeError):
    """The gate was closed (the engine is shutting down) while this caller waited or arrived."""


class FifoGate:
    def __init__(self, limit: int, *, name: str = "gate") -> None:
        if limit < 1:
            raise ValueError(f"{name}: limit must be at least 1 (got {limit})")
        self.limit = limit
        self.name = name
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._in_use = 0
        self._closed = False

    @property
    def in_use(self) -> int:
        """Holders right now."""
        return self._in_use

    @property
    def waiting(self) -> int:
        """Callers queued behind the holders right now."""
        return len(self._queue)

    def acquire(self) -> float:
        """Wait for a place, in arrival order; returns the seconds waited."""
        started = time.perf_counter()
        with self._cond:
            self._check_open()
            if self._in_use < self.limit and not self._queue:
                self._in_use += 1
                return 0.0
            ticket = object()
            self._queue.append(ticket)
            try:
                while not self._closed and (self._queue[0] is not ticket or self._in_use >= self.limit):
                    self._cond.wait()
                self._check_open()
            except BaseException:
                # Closed, or interrupted (KeyboardInterrupt): give up the ticket so the line moves on.
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._queue.popleft()
            self._in_use += 1
            if self._queue and self._in_use < self.limit:
                self._cond.notify_all()  # room for the next in line too
        return time.perf_counter() - started

    def release(self) -> None:
        with self._cond:
            if self._in_use <= 0:
                raise RuntimeError(f"{self.name}: release() without a matching acquire()")
            self._in_use -= 1
            self._cond.notify_all()

    @contextmanager
    def admit(self) -> Iterator[float]:
        """Hold a place for the `with` block; yields the seconds waited for it."""
        waited = self.acquire()
        try:
            yield waited
        finally:
            self.release()

    def close(self) -> None:
        """Refuse new callers and wake the waiting ones with ShuttingDownError; holders finish."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _check_open(self) -> None:
        if self._closed:
            raise ShuttingDownError(f"{self.name}: shutting down, not taking new work")
