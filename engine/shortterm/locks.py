"""Write locks that hold across threads and processes: a lock file next to the data (`filelock`).

One `lock_table()` per owner (a backend, a journal) maps lock-file paths to `PathLock`s. A `PathLock`
is re-entrant within a thread; other threads of this process wait on a `threading.RLock` (no
polling), other processes on the lock file (`flock`, released by the kernel when a process dies,
so a SIGKILL never leaves a stale lock).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from engine.keyed import Keyed


class PathLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = threading.RLock()
        self._depth = 0
        self._made = False
        # thread_local=False: only the thread holding `_thread` ever touches the file lock.
        self._file = FileLock(str(path), thread_local=False, poll_interval=0.005)

    @contextlib.contextmanager
    def hold(self, *, blocking: bool = True) -> Iterator[bool]:
        """Yield True while held; with `blocking=False`, yield False at once when someone else holds it."""
        if not self._thread.acquire(blocking=blocking):
            yield False
            return
        try:
            if self._depth == 0:
                if not self._made:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._made = True
                try:
                    self._file.acquire(timeout=-1 if blocking else 0)
                except Timeout:
                    yield False
                    return
            self._depth += 1
            try:
                yield True
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._file.release()
        finally:
            self._thread.release()


def lock_table() -> Keyed[Path, PathLock]:
    """The `PathLock` of each lock file, created on first use."""
    return Keyed(PathLock)
