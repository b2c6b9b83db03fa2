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
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import filelock

from engine.adapters.embedder import Embedder
from engine.errors import DataFileError
from engine.fileio import append_bytes_durably, atomic_write_bytes
from engine.keyed import Keyed
from engine.paths import CharacterPaths, UserPaths
from engine.stores.core.cache import IndexCache
from engine.stores.core.errors import FactStoreBusyError
from engine.stores.core.facts import dump_facts, parse_facts
from engine.stores.core.index import GUARD_EXACT_MAX, FactIndex, sync_index
from engine.stores.core.pending import PendingTurn, pending_path, read_pending, set_aside, write_pending
from engine.stores.core.files import (
    appendable, decode, modified_at, nothing, racy, read_consistent, read_locked, signature_of,
)
from engine.stores.core.table import FactTable
from engine.stores.core.port import View
from engine.stores.core.tx import Transaction, note_facts

log = logging.getLogger(__name__)

LOCK_FILE = ".lock-core"
# The cache is saved once this many fact changes (or an eighth of the facts) are not in it, and on
# close: a crash costs the next open at most that many embeddings, never data.
_SAVE_MIN = 32
_POLL_S = 0.005


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


class RepositoryBase:
    """What both fact repositories (files, `PgFactRepository`) keep the same way: the embedder and
    clock the core store's transactions use, and the users loaded in this process."""

    def __init__(
        self, embedder: Embedder, tz: ZoneInfo, *, check_interval_s: float, clock: Callable[[], float],
        guard_exact_max: int,
    ) -> None:
        self.embedder = embedder
        self.tz = tz
        self.check_interval_s = check_interval_s
        self.clock = clock
        self.guard_exact_max = guard_exact_max
        self._users: Keyed[str, Any] = Keyed(self._new_user)
        self.embedded = 0
        """How many fact texts have been embedded (a hand edit should add only the changed ones)."""

    def embed_passages(self, texts: list[str]) -> Any:
        self.embedded += len(texts)
        return self.embedder.embed(texts, role="passage")

    def _new_user(self, user_id: str) -> Any:
        raise NotImplementedError  # each repository makes its own kind of loaded user

    def loaded_users(self) -> list[tuple[str, Any]]:
        return self._users.items()


class FilesFactRepository(RepositoryBase):
    """Every user's facts of one character."""

    def __init__(
        self,
        paths: CharacterPaths,
        embedder: Embedder,
        tz: ZoneInfo,
        *,
        check_interval_s: float = 1.0,
        lock_timeout_s: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        guard_exact_max: int = GUARD_EXACT_MAX,
    ) -> None:
        super().__init__(embedder, tz, check_interval_s=check_interval_s, clock=clock, guard_exact_max=guard_exact_max)
        self.paths = paths
        self.lock_timeout_s = lock_timeout_s

    # ------------------------------------------------------------------ access

    def user(self, user_id: str) -> UserFacts:
        return self._users.get(user_id)

    def _new_user(self, user_id: str) -> UserFacts:
        paths = self.paths.user(user_id)
        return UserFacts(paths=paths, file_lock=filelock.FileLock(str(paths.root / LOCK_FILE)))

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
        with user.lock:
            self._catch_up(user)
            with self._locked(user):
                yield from self._transaction(user, now)

    def _catch_up(self, user: UserFacts) -> None:
        """Read what other processes wrote before taking the lock, so that the embedding of their
        new facts does not hold it; under the lock only what arrived since is read."""
        try:
            self._refresh(user, force=True, locked=False)
        except DataFileError:
            pass  # reported under the lock, where it counts

    def _transaction(self, user: UserFacts, now: datetime) -> Iterator[Transaction]:
        """Re-read under the lock, hand out the transaction, write it (see `writing`)."""
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
        if user.unsaved >= max(_SAVE_MIN, len(user.facts) // 8):
            self._save_cache(user)

    def rebuild(self, user_id: str) -> int:
        """Read the file again, embed what the cache lacks, save the cache; returns the live facts."""
        user = self.user(user_id)
        with user.lock, self._locked(user) if user.paths.root.exists() else nothing():
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
        signature = signature_of(path)
        if user.loaded and signature == user.signature and not user.racy:
            if user.broken is not None:
                raise user.broken
            return
        lock = self._locked(user) if path.parent.exists() else nothing()
        data, signature = read_locked(path) if locked else read_consistent(path, lock)
        digest = hashlib.sha256(data or b"")
        if user.loaded and user.broken is None and digest.hexdigest() == user.file_hash:
            user.signature, user.racy = signature, racy(signature)
            return
        if not self._load_tail(user, data, digest, signature):
            self._load(user, data, digest, signature)

    def _load(self, user: UserFacts, data: bytes | None, digest: Any, signature: Any) -> None:
        path = user.paths.core_file
        if not user.loaded:
            cached = IndexCache(user.paths.cache, self.embedder).load()
            if cached is not None and cached.file_hash == digest.hexdigest() and cached.facts is not None:
                # Fast path: the file is what the cache was built from; no YAML is parsed.
                self._install(user, cached.facts, cached.index, digest, signature, data)
                user.unsaved += int(cached.old_version)
                return
            user.index = cached.index if cached is not None else self._new_index()
        try:
            text = decode(data or b"", path)
            facts = parse_facts(text, path=path, tz=self.tz, default_time=modified_at(path, self.tz))
        except DataFileError as exc:
            # Refuse to write until a person fixes the file; never overwrite their edit.
            user.broken, user.signature = exc, signature
            raise
        assert user.index is not None
        embedded = sync_index(user.index, facts, self.embedder)
        self.embedded += embedded
        self._install(user, FactTable(facts), user.index, digest, signature, data)
        # The cache no longer matches the file: the next writer (or close) saves it.
        user.unsaved += embedded + 1

    def _load_tail(self, user: UserFacts, data: bytes | None, digest: Any, signature: Any) -> bool:
        """When the file only grew by entries appended after what this process already holds (another
        process added facts), read just those. False when that is not the case: read it all."""
        old = user.signature
        if not (user.loaded and user.broken is None and user.appendable and data and old and signature):
            return False
        size = old[1]
        if signature[0] != old[0] or len(data) <= size or data[size - 1 : size] != b"\n":
            return False
        if hashlib.sha256(data[:size]).hexdigest() != user.file_hash:
            return False
        path = user.paths.core_file
        try:
            tail = parse_facts(decode(data[size:], path), path=path, tz=self.tz, default_time=modified_at(path, self.tz))
        except DataFileError:
            return False  # read it all: the error then names the right line
        if not tail or any(f.id in user.facts for f in tail):
            return False
        assert user.index is not None
        live = [f for f in tail if f.live]
        if live:
            user.index.add(live, self.embed_passages([f.text for f in live]))
        for fact in tail:
            user.facts[fact.id] = fact
        if user.by_text is not None and user.turns is not None:
            note_facts(user, tail)
        user.hasher, user.signature, user.racy = digest, signature, racy(signature)
        user.version += 1
        user.unsaved += len(tail)
        return True

    def _install(self, user: UserFacts, facts: FactTable, index: FactIndex, digest: Any, signature: Any,
                 data: bytes | None) -> None:
        index.guard_exact_max = self.guard_exact_max
        user.facts, user.index, user.hasher, user.signature = facts, index, digest, signature
        user.racy = racy(signature)
        user.loaded, user.broken, user.by_text, user.turns = True, None, None, None
        user.appendable = appendable(data)
        user.version += 1

    def _new_index(self) -> FactIndex:
        return FactIndex(int(self.embedder.dim), guard_exact_max=self.guard_exact_max)

    def _refresh_pending(self, user: UserFacts, *, now: datetime, locked: bool) -> None:
        path = pending_path(user.paths.root)
        signature = signature_of(path)
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

    def _invalidate(self, user: UserFacts) -> None:
        user.loaded, user.signature, user.pending_signature = False, None, None
        user.by_text = user.turns = None
        user.checked_at = float("-inf")

    @contextmanager
    def _locked(self, user: UserFacts) -> Iterator[None]:
        try:
            # filelock polls; a short interval keeps a waiter from missing the gaps between another
            # process's writes (it releases the lock while it embeds its next fact).
            user.file_lock.acquire(timeout=self.lock_timeout_s, poll_interval=_POLL_S)
        except filelock.Timeout:
            raise FactStoreBusyError(
                f"the core memory of {user.paths.root.name!r} stayed locked for {self.lock_timeout_s:g}s "
                f"({user.paths.root / LOCK_FILE})"
            ) from None
        try:
            yield
        finally:
            user.file_lock.release()


def commit(user: UserFacts, tx: Transaction) -> None:
    """Write what `tx` changed (see the module docstring for the order)."""
    pending = tx.new_pending
    old_pending = {t.id: t for t in user.pending}
    pending_changed = pending is not None and pending != user.pending
    pending_first = pending_changed and any(old_pending.get(t.id) != t for t in pending or [])
    if pending_changed and pending_first:
        _write_pending(user, pending or [])
    if tx.changes:
        path = user.paths.core_file
        if tx.appended_only and user.appendable:
            chunk = dump_facts(tx.appended_only).encode("utf-8")
            append_bytes_durably(path, chunk)
            user.hasher.update(chunk)
        else:
            data = dump_facts(tx.facts.values()).encode("utf-8")
            atomic_write_bytes(path, data)
            user.hasher = hashlib.sha256(data)
            user.appendable = len(tx.facts) > 0
        user.signature = signature_of(path)
        user.racy = racy(user.signature)
        user.version += 1
        user.unsaved += tx.changes
    if pending_changed and not pending_first:
        _write_pending(user, pending or [])


def _write_pending(user: UserFacts, turns: list[PendingTurn]) -> None:
    path = pending_path(user.paths.root)
    write_pending(path, turns)
    user.pending = list(turns)
    user.pending_signature = signature_of(path)
