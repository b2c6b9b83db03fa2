"""Temp files of atomic writes: names that say whose they are, and cleanup of the ones a killed
process left behind.

An atomic write goes through `.<target>.<host>.<pid>.<random>.kioku-tmp` in the target's folder.
A SIGKILL between creating it and `os.replace` leaves it there; the next atomic write into that
folder removes such leftovers (one directory scan, cheap next to the write's fsync) — but never
a temp file another live process is still writing:

- same host, writer pid no longer running: removed (the writer is gone);
- same host, pid running (which may be a reused pid, e.g. pid 1 in every container start), or
  another host sharing the folder (whose pids mean nothing here): removed only when older than
  `STALE_S` — an atomic write takes milliseconds to seconds, never an hour;
- `.<target>.XXXXXXXX.tmp` names written before this scheme existed: removed when older than `STALE_S`.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

SUFFIX = ".kioku-tmp"
STALE_S = 3600.0

_OURS = re.compile(r"^\..*\.(?P<host>[A-Za-z0-9-]{1,40})\.(?P<pid>\d{1,10})\.[a-z0-9_]{8}" + re.escape(SUFFIX) + "$")
_LEGACY = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def make_temp(folder: Path, target_name: str) -> tuple[int, str]:
    """Create (O_EXCL, mode 0600) the temp file for an atomic write of `target_name` in `folder`."""
    prefix = f".{target_name[:100]}.{host_tag()}.{os.getpid()}."
    return tempfile.mkstemp(dir=folder, prefix=prefix, suffix=SUFFIX)


def clean_stale_temp_files(folder: Path, *, now: float | None = None) -> list[Path]:
    """Remove leftovers of killed writers in `folder` (see the module docstring); returns them."""
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    me = host_tag()
    for entry in entries:
        name = entry.name
        if not name.startswith(".") or not (name.endswith(SUFFIX) or name.endswith(".tmp")):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if not _is_stale(name, age, me):
            continue
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            continue  # its writer finished (renamed it) or another cleaner got there first
        except OSError as exc:
            log.warning("%s: cannot remove a stale temp file: %s", entry.path, exc)
            continue
        removed.append(Path(entry.path))
    if removed:
        log.info("%s: removed %d temp file(s) left by killed writers", folder, len(removed))
    return removed


def _is_stale(name: str, age: float, me: str) -> bool:
    ours = _OURS.match(name)
    if ours is None:
        return _LEGACY.match(name) is not None and age > STALE_S
    if ours["host"] != me:
        return age > STALE_S
    return not _pid_running(int(ours["pid"])) or age > STALE_S


def _pid_running(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process: treat as live
    return True
