"""Which copy of a user's search index folder this process writes.

One process owns the shared folder (a file lock held while it is open); any other process (a
second `kioku serve` worker on the same data folder) writes a private copy next to it, so no two
writers ever append to the same index files. A private copy is locked while its process lives and
removed when it closes; copies left by processes that died (a killed worker: hundreds of MB for
a long diary) are removed by the next process that opens the user, since their locks died with
them. Used by the files diary and by the Postgres backend's per-worker mirror.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

from filelock import FileLock, Timeout

log = logging.getLogger(__name__)


class FolderClaim:
    def __init__(self, shared: Path, *, owner_lock: Path) -> None:
        shared.parent.mkdir(parents=True, exist_ok=True)
        # Not thread-local (filelock's default): a user's index is often opened on the background
        # worker's thread and closed on another, and a thread-local lock released there was never
        # released at all, so a later open in the same process (a reopened engine) found the
        # folder "owned" and rebuilt into a private copy.
        self._owner = FileLock(str(owner_lock), thread_local=False)
        self._private_lock: FileLock | None = None
        try:
            self._owner.acquire(timeout=0)
            self.path = shared
        except Timeout:
            # Unique per open (two opens in one process, or a pid reused after a crash, never
            # share one); its lock is taken before the folder exists, so a sweeping process
            # never finds a live copy unlocked.
            self.path = shared.with_name(f"{shared.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            self._private_lock = FileLock(str(_lock_of(self.path)), thread_local=False)
            self._private_lock.acquire(timeout=0)
            log.info("search: another process owns %s; this one keeps its own copy", shared)
        sweep_private_copies(shared, keep=self.path)

    def release(self) -> None:
        """Remove a private copy (with its lock), or give the shared folder up."""
        if self._private_lock is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self._private_lock.release()
            _lock_of(self.path).unlink(missing_ok=True)
            self._private_lock = None
        elif self._owner.is_locked:
            self._owner.release()


def _lock_of(private: Path) -> Path:
    return private.with_name(private.name + ".lock")


def sweep_private_copies(shared: Path, *, keep: Path) -> list[Path]:
    """Remove the private copies of `shared` whose process is gone (their lock is free: a lock
    dies with its process, however it ended). Returns what was removed."""
    removed = []
    for folder in sorted(shared.parent.glob(f"{shared.name}-*")):
        if folder == keep or not folder.is_dir():
            continue
        lock = FileLock(str(_lock_of(folder)))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            continue  # its process is alive and still uses it
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            lock.release()
        _lock_of(folder).unlink(missing_ok=True)
    if removed:
        log.info("search: removed %d copies left by processes that ended: %s", len(removed),
                 ", ".join(f.name for f in removed))
    return removed
