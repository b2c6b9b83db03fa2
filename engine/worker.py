"""Background threads that run memory work (journal jobs, warm-up); `flush()` waits for it.

Tasks may be delayed (a retry after a failure waits its backoff) and coalesced by key (one queued
drain per user is enough: it runs every job that is due when it starts). The worker holds nothing
that must survive: the journal does; a task that raises is logged and kept in `errors`, and never
stops the worker.

Built by the application (`MemoryOrchestrator.from_config`, or a service sharing one worker
between characters) and passed in; whoever builds it closes it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.runtime import configure_this_thread

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobError:
    job: str
    error: str
    at: float
    """Wall-clock time (time.time())."""


@dataclass(order=True)
class _Task:
    due: float
    seq: int
    name: str = field(compare=False)
    fn: Callable[[], object] = field(compare=False)
    key: str | None = field(compare=False)
    retry: bool = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class Worker:
    def __init__(self, name: str = "kioku-memory", *, threads: int = 1) -> None:
        self.errors: deque[JobError] = deque(maxlen=100)
        self._cv = threading.Condition()
        self._heap: list[_Task] = []
        self._queued: dict[str, _Task] = {}
        self._busy = 0
        """Tasks flush() waits for: queued ones that are not retries, plus every running one."""
        self._seq = itertools.count()
        self._stopping = False
        self._closed = False
        self._threads = [
            threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True) for i in range(max(1, threads))
        ]
        for t in self._threads:
            t.start()

    @property
    def stopping(self) -> bool:
        """True once close() gave up waiting: long tasks should return at their next step."""
        return self._stopping

    def submit(
        self, name: str, job: Callable[[], object], *, key: str | None = None, delay: float = 0.0, retry: bool = False
    ) -> None:
        """Run `job` after `delay` seconds. With `key`, a task with the same key that is queued and
        due no later replaces this one. `retry=True`: flush() does not wait for it (a backoff)."""
        with self._cv:
            if self._closed:
                raise RuntimeError("worker is closed")
            due = time.monotonic() + max(0.0, delay)
            if key is not None and key in self._queued:
                queued = self._queued[key]
                if (queued.due, queued.retry) <= (due, retry):
                    return
                queued.cancelled = True
                self._busy -= not queued.retry
            task = _Task(due, next(self._seq), name, job, key, retry)
            heapq.heappush(self._heap, task)
            if key is not None:
                self._queued[key] = task
            self._busy += not retry
            self._cv.notify_all()  # flush() waits on the same condition

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted task (except retries waiting for their backoff) has run.
        True if that happened within `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while self._busy:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cv.wait(remaining)
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Flush (up to `timeout`), then stop; a running task finishes first. Returns flush's answer."""
        if self._closed:
            return True
        drained = self.flush(timeout)
        with self._cv:
            self._closed = self._stopping = True
            self._cv.notify_all()
        for t in self._threads:
            t.join()
        return drained

    def _next(self) -> _Task | None:
        with self._cv:
            while True:
                if self._stopping:
                    return None
                if not self._heap:
                    self._cv.wait()
                    continue
                task = self._heap[0]
                if task.cancelled:
                    heapq.heappop(self._heap)
                    continue
                wait = task.due - time.monotonic()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if task.key is not None and self._queued.get(task.key) is task:
                    del self._queued[task.key]
                self._busy += task.retry  # a running retry is waited for like any other task
                return task

    def _run(self) -> None:
        configure_this_thread()
        while (task := self._next()) is not None:
            try:
                task.fn()
            except Exception as exc:  # noqa: BLE001 - a task's failure must not kill the worker
                log.warning("background task %s failed: %s: %s", task.name, type(exc).__name__, exc)
                self.errors.append(JobError(task.name, f"{type(exc).__name__}: {exc}", time.time()))
            finally:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()
