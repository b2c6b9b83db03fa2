"""Reading one user's fact file safely: signatures, consistent reads, and what may be appended."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from engine.errors import DataFileError

_RACY_NS = 100_000_000
_RACY_MAX_BYTES = 256 * 1024
# A block sequence at column 0 that a new `- ...` entry can follow (what `dump_facts` writes).
_APPENDABLE_START = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*-[ \n]")
_DOCUMENT_MARKER = re.compile(r"^(?:---|\.\.\.)(?:\s|$)", re.M)


def signature_of(path: Path) -> tuple[int, ...] | None:
    """What `stat` says about a file, enough to tell that it changed; None when it does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def racy(signature: tuple[int, ...] | None) -> bool:
    """Whether a file with this signature may have been edited again within the same clock tick
    without the signature changing (git's "racily clean" case). File times come from a coarse
    clock: an edit that keeps the size, closer than `_RACY_NS` to the last write, can leave the
    signature as it was. Small files are then compared by content (cheap); big ones trust the
    signature, so that adding facts one by one stays linear."""
    return signature is not None and signature[1] < _RACY_MAX_BYTES and signature[2] >= time.time_ns() - _RACY_NS


def read_consistent(path: Path, lock: AbstractContextManager[object]) -> tuple[bytes | None, tuple[int, ...] | None]:
    """The file's bytes and the signature they belong to, never a torn mix of two writes: read
    without the lock when the signature is the same before and after; if a writer keeps changing
    it, read under `lock`."""
    for _ in range(3):
        before = signature_of(path)
        if before is None:
            return None, None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        if signature_of(path) == before and len(data) == before[1]:
            return data, before
    with lock:
        signature = signature_of(path)
        return (path.read_bytes() if signature is not None else None), signature


def read_locked(path: Path) -> tuple[bytes | None, tuple[int, ...] | None]:
    """As `read_consistent`, for a caller that holds the lock already."""
    signature = signature_of(path)
    return (path.read_bytes() if signature is not None else None), signature


@contextmanager
def nothing() -> Iterator[None]:
    yield


def modified_at(path: Path, tz: ZoneInfo) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz).replace(microsecond=0)
    except FileNotFoundError:
        return datetime.now(tz).replace(microsecond=0)


def decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFileError(f"invalid UTF-8 byte 0x{data[exc.start]:02x}", path=str(path), line=line) from exc


def appendable(data: bytes | None) -> bool:
    """Whether a new entry can be appended as `- ...` and still be part of the same list."""
    if not data or not data.endswith(b"\n"):
        return False
    text = data.decode("utf-8", errors="replace")
    return bool(_APPENDABLE_START.match(text)) and not _DOCUMENT_MARKER.search(text)
