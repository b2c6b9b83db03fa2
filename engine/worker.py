"""One background thread that runs memory writes in order; `flush()` waits for it to drain.

A single worker keeps every user's writes in the order their turns arrived. A failing job is
logged and kept in `errors` (the caller can surface it); it never stops the worker.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobError:
    job: str
    error: str
    at: float


class Worker:
    def __init__(self, name: str = "kioku-memory") -> None:
        self._queue: queue.Queue[tuple[str, Callable[[], object]] | None] = queue.Queue()
        self.errors: deque[JobError] = deque(maxlen=100)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._thread.start()

    def submit(self, name: str, job: Callable[[], object]) -> None:
        if self._closed:
            raise RuntimeError("worker is closed")
        self._queue.put((name, job))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job has run. True if drained within `timeout`."""
        if timeout is None:
            self._queue.join()
            return True
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                name, job = item
                try:
                    job()
                except Exception as exc:  # noqa: BLE001 - a job's failure must not kill the worker
                    log.warning("background job %s failed: %s: %s", name, type(exc).__name__, exc)
                    self.errors.append(JobError(name, f"{type(exc).__name__}: {exc}", time.time()))
            finally:
                self._queue.task_done()
