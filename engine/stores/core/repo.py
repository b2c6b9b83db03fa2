"""The fact repository: each user's `core_mem.yml`, its vectors and cache, kept in step across processes.

Reading (`reading`): the in-memory facts, refreshed from the file at most once per
`check_interval_s` with one `stat`; only a changed signature (inode, size, mtime, ctime) reads the
file, and only a changed content hash parses it. Readers never write the data files; after a
parse they refresh the derived cache in `.cache/` only if the user's lock is free right now.

Writing (`writing`): a transaction under the user's thread lock and the inter-process lock file
`users/<id>/.lock-core` (filelock). Under the lock the file is re-read if another process (or a
person) changed it, then the caller's changes are applied, then written: new facts are appended
to the file (one fsynced append), anything else rewrites it atomically. So two processes, or
`kioku serve --workers N`, never lose each other's facts. Nothing slow that is not file work
happens under the lock: callers embed and ask the LLM before they open a transaction.

Append-only growth keeps adding facts one by one linear: the file hash is carried forward
incrementally, the index appends a row, and the cache is saved when the changes since its last
save reach an eighth of the facts: a small user's cache is saved on every write, a big one's
geometrically often. A stale cache costs the next process that opens the user a parse and the
embedding of the facts it lacks; never data.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import filelock

from engine.adapters.embedder import Embedder
from engine.errors import DataFileError
from engine.paths import CharacterPaths, UserPaths
from engine.stores.core.cache import IndexCache
from engine.stores.core.errors import FactStoreBusyError
from engine.stores.core.facts import Fact, parse_facts
from engine.stores.core.index import GUARD_EXACT_MAX, FactIndex, sync_index
from engine.stores.core.pending import PendingTurn, pending_path, read_pending, set_aside
from engine.stores.core.table import FactTable
from engine.stores.core.tx import Transaction, commit, signature_of
from engine.stores.core.tx import racy as _racy

log = logging.getLogger(__name__)

LOCK_FILE = ".lock-core"
# A block sequence at column 0 that a new `- ...` entry can follow (what `dump_facts` writes).
_APPENDABLE_START = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*-[ \n]")
_DOCUMENT_MARKER = re.compile(r"^(?:---|\.\.\.)(?:\s|$)", re.M)


@dataclass(eq=False)
class UserFacts:
    """One user's in-memory state. Every field is read and written under `lock`."""

    paths: UserPaths
    file_lock: filelock.FileLock
    lock: threading.RLock = field(default_factory=threading.RLock)
    loaded: bool = False
    facts: FactTable = field(default_factory=FactTable)
    index: FactIndex | None = None
    signature: tuple[int, ...] | None = None
    racy: bool = False
    """The file changed so recently that an edit within the same clock tick would leave the same
    signature (git's "racily clean" case): the next check compares the content too."""
    hasher: Any = field(default_factory=hashlib.sha256)
    """sha256 of the file's bytes as this process last saw or wrote them; appends extend it."""
    appendable: bool = False
    broken: DataFileError | None = None
    version: int = 0
    """Bumped on every change of `facts`, local or read from the file."""
    checked_at: float = float("-inf")
    unsaved: int = 0
    """Fact changes not yet in the cache."""
    by_text: dict[str, str] | None = None
    """Normalised text of each live fact -> its id; built on the first write."""
    turns: set[str] | None = None
    """Turn ids that appear in any fact's sources or revisions; built on the first write."""
    pending: list[PendingTurn] = field(default_factory=list)
    pending_signature: tuple[int, ...] | None = None
    pending_problem: str | None = None
    """Why pending turns were set aside (kept for the process's life: a person should look)."""
    pending_unreadable: bool = False

    @property
    def file_hash(self) -> str:
        return self.hasher.hexdigest()


@dataclass(frozen=True)
class View:
    """What a reader sees, under the user's thread lock."""

    facts: FactTable
    index: FactIndex
    version: int


class FactRepository:
    """Every user's facts of one character."""

    def __init__(
        self,
        paths: CharacterPaths,
        embedder: Embedder,
        tz: ZoneInfo,
        *,
        check_interval_s: float = 1.0,
        lock_timeout_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        guard_exact_max: int = GUARD_EXACT_MAX,
    ) -> None:
        self.paths = paths
        self.embedder = embedder
        self.tz = tz
        self.check_interval_s = check_interval_s
        self.lock_timeout_s = lock_timeout_s
        self.clock = clock
        self.guard_exact_max = guard_exact_max
        self._users: dict[str, UserFacts] = {}
        self._users_lock = threading.Lock()
        self.embedded = 0
        """How many fact texts have been embedded (a hand edit should add only the changed ones)."""

    def embed_passages(self, texts: list[str]) -> Any:
        self.embedded += len(texts)
        return self.embedder.embed(texts, role="passage")

    # ------------------------------------------------------------------ access

    def user(self, user_id: str) -> UserFacts:
        with self._users_lock:
            user = self._users.get(user_id)
            if user is None:
                paths = self.paths.user(user_id)
                lock = filelock.FileLock(str(paths.root / LOCK_FILE))
                user = self._users[user_id] = UserFacts(paths=paths, file_lock=lock)
        return user

    def loaded_users(self) -> list[tuple[str, UserFacts]]:
        with self._users_lock:
            return list(self._users.items())

    @contextmanager
    def reading(self, user_id: str, *, fresh: bool = False) -> Iterator[View]:
        """The user's facts, checked against the file at most once per interval (`fresh`: now)."""
        user = self.user(user_id)
        with user.lock:
            self._refresh(user, force=fresh, locked=False)
            assert user.index is not None
            yield View(user.facts, user.index, user.version)

    @contextmanager
    def writing(self, user_id: str, *, now: datetime) -> Iterator[Transaction]:
        """A transaction over the user's facts and pending turns, under both locks; committed on exit."""
        user = self.user(user_id)
        user.paths.root.mkdir(parents=True, exist_ok=True)
        with user.lock, self._locked(user):
            self._refresh(user, force=True, locked=True)
            self._refresh_pending(user, now=now, locked=True)
            if user.broken is not None:
                raise DataFileError(
                    f"{user.broken.reason}; not writing core memory until the file is fixed",
                    path=user.broken.path,
                    line=user.broken.line,
                )
            tx = Transaction(user, now=now, embed=self.embed_passages)
            try:
                yield tx
                commit(user, tx)
            except BaseException:
                # The in-memory state may be half changed; the file is the truth: read it again.
                self._invalidate(user)
                raise
            if user.unsaved and user.unsaved >= max(1, len(user.facts) // 8):
                self._save_cache(user)

    def rebuild(self, user_id: str) -> int:
        """Read the file again, embed what the cache lacks, save the cache; returns the live facts."""
        user = self.user(user_id)
        with user.lock, self._locked(user) if user.paths.root.exists() else _nothing():
            self._invalidate(user)
            self._refresh(user, force=True, locked=True)
            if user.paths.core_file.exists():
                self._save_cache(user)
            return sum(1 for f in user.facts.values() if f.live)

    def pending(self, user_id: str, *, now: datetime) -> list[PendingTurn]:
        """The user's pending turns as the file holds them (read without the lock; never written)."""
        user = self.user(user_id)
        with user.lock:
            self._refresh_pending(user, now=now, locked=False)
            return list(user.pending)

    def save_caches(self) -> None:
        """Write the cache of every user with unsaved changes (on close); skipped when busy."""
        for _, user in self.loaded_users():
            with user.lock:
                if user.loaded and user.unsaved and user.broken is None:
                    try:
                        with user.file_lock.acquire(timeout=1.0):
                            self._save_cache(user)
                    except filelock.Timeout:
                        log.info("core cache of %s not saved: its lock is busy", user.paths.root)

    # ------------------------------------------------------------------ file → memory

    def _refresh(self, user: UserFacts, *, force: bool, locked: bool) -> None:
        now = self.clock()
        if user.loaded and not force and now - user.checked_at < self.check_interval_s:
            if user.broken is not None:
                raise user.broken
            return
        user.checked_at = now
        path = user.paths.core_file
        signature = _signature(path)
        if user.loaded and signature == user.signature and not user.racy:
            if user.broken is not None:
                raise user.broken
            return
        data, signature = self._read(user, path, locked=locked)
        digest = hashlib.sha256(data or b"")
        if user.loaded and user.broken is None and digest.hexdigest() == user.file_hash:
            user.signature, user.racy = signature, _racy(signature)
            return
        self._load(user, data, digest, signature, locked=locked)

    def _load(self, user: UserFacts, data: bytes | None, digest: Any, signature: Any, *, locked: bool) -> None:
        path = user.paths.core_file
        cache = IndexCache(user.paths.cache, self.embedder)
        if not user.loaded:
            cached = cache.load()
            if cached is not None and cached.file_hash == digest.hexdigest() and cached.facts is not None:
                # Fast path: the file is what the cache was built from; no YAML is parsed.
                self._install(user, cached.facts, cached.index, digest, signature, data)
                return
            user.index = cached.index if cached is not None else self._new_index()
        try:
            text = _decode(data or b"", path)
            facts = parse_facts(text, path=path, tz=self.tz, default_time=_mtime(path, self.tz))
        except DataFileError as exc:
            # Refuse to write until a person fixes the file; never overwrite their edit.
            user.broken, user.signature = exc, signature
            raise
        assert user.index is not None
        self.embedded += sync_index(user.index, facts, self.embedder)
        self._install(user, FactTable(facts), user.index, digest, signature, data)
        user.unsaved = max(user.unsaved, 1) if facts or data is not None else 0
        if locked:
            self._save_cache(user)
        else:
            self._save_cache_if_free(user)

    def _install(self, user: UserFacts, facts: FactTable, index: FactIndex, digest: Any, signature: Any,
                 data: bytes | None) -> None:
        index.guard_exact_max = self.guard_exact_max
        user.facts, user.index, user.hasher, user.signature = facts, index, digest, signature
        user.racy = _racy(signature)
        user.loaded, user.broken, user.by_text, user.turns = True, None, None, None
        user.appendable = _appendable(data)
        user.version += 1

    def _new_index(self) -> FactIndex:
        return FactIndex(int(self.embedder.dim), guard_exact_max=self.guard_exact_max)

    def _read(self, user: UserFacts, path: Path, *, locked: bool) -> tuple[bytes | None, Any]:
        """The file's bytes and the signature they belong to, never a torn mix of two writes."""
        if not locked:
            for _ in range(3):
                before = _signature(path)
                if before is None:
                    return None, None
                try:
                    data = path.read_bytes()
                except FileNotFoundError:
                    continue
                if _signature(path) == before and len(data) == before[1]:
                    return data, before
        # A writer kept changing it under us (or we hold the lock already): read under the lock.
        with self._locked(user) if path.parent.exists() else _nothing():
            signature = _signature(path)
            return (path.read_bytes() if signature is not None else None), signature

    def _refresh_pending(self, user: UserFacts, *, now: datetime, locked: bool) -> None:
        path = pending_path(user.paths.root)
        signature = _signature(path)
        if signature == user.pending_signature and not (locked and user.pending_unreadable):
            return
        user.pending_unreadable = False
        try:
            user.pending = read_pending(path)
        except DataFileError as exc:
            user.pending = []
            if locked:
                aside = set_aside(path, exc, now)
                user.pending_problem = f"{exc}; kept as {aside.name}, its turns were not retried"
                signature = None
            else:
                # Readers leave it where it is; the next writer sets it aside.
                user.pending_problem, user.pending_unreadable = str(exc), True
        user.pending_signature = signature

    # ------------------------------------------------------------------ memory → cache

    def _save_cache(self, user: UserFacts) -> None:
        assert user.index is not None
        IndexCache(user.paths.cache, self.embedder).save(user.index, file_hash=user.file_hash, facts=user.facts.values())
        user.unsaved = 0

    def _save_cache_if_free(self, user: UserFacts) -> None:
        if not user.paths.core_file.exists():
            return
        try:
            with user.file_lock.acquire(timeout=0):
                self._save_cache(user)
        except filelock.Timeout:
            pass  # a writer is at work; it saves the cache itself

    def _invalidate(self, user: UserFacts) -> None:
        user.loaded, user.signature, user.pending_signature = False, None, None
        user.by_text = user.turns = None
        user.checked_at = float("-inf")

    @contextmanager
    def _locked(self, user: UserFacts) -> Iterator[None]:
        try:
            user.file_lock.acquire(timeout=self.lock_timeout_s)
        except filelock.Timeout:
            raise FactStoreBusyError(
                f"the core memory of {user.paths.root.name!r} stayed locked for {self.lock_timeout_s:g}s "
                f"({user.paths.root / LOCK_FILE})"
            ) from None
        try:
            yield
        finally:
            user.file_lock.release()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


_signature = signature_of


def _mtime(path: Path, tz: ZoneInfo) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz).replace(microsecond=0)
    except FileNotFoundError:
        return datetime.now(tz).replace(microsecond=0)


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFileError(f"invalid UTF-8 byte 0x{data[exc.start]:02x}", path=str(path), line=line) from exc


def _appendable(data: bytes | None) -> bool:
    """Whether a new entry can be appended as `- ...` and still be part of the same list."""
    if not data or not data.endswith(b"\n"):
        return False
    text = data.decode("utf-8", errors="replace")
    return bool(_APPENDABLE_START.match(text)) and not _DOCUMENT_MARKER.search(text)
