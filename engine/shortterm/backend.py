"""Where the short-term window and the rolling summary persist: files by default (Redis in
`engine.backends.redis` for several hosts).

File layout per user and chat (`chats.py`): `history.yaml` holds one message per line, each a JSON
(= YAML flow) mapping, so an append never rewrites what is there; `brain.yaml` holds the summary
state and is replaced atomically. The default chat lives directly in the user's folder.

Rules: readers never write (`load` only reads; an unreadable line is skipped and reported); every
write takes the user's lock file (`users/<id>/.lock-window`, across processes), and repairs what
a crash left (a torn last line, set aside in `history.yaml.corrupt`) before it appends. A fold is
applied only if the window still starts with what it folded and the summary is the one it
started from (`apply_fold`), so nothing another writer appended meanwhile is lost.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ContextManager, Protocol

from engine.errors import DataFileError
from engine.fileio import DATA_FILE_LIMITS, append_bytes_durably, atomic_write_text, fsync_path, read_bytes_capped
from engine.paths import CharacterPaths
from engine.shortterm.chats import DEFAULT_CHAT, chat_folder
from engine.shortterm.locks import lock_table
from engine.shortterm.state import (
    Brain,
    Fold,
    State,
    WindowMessage,
    brain_to_yaml,
    message_from_dict,
    message_to_line,
    parse_brain,
    parse_line,
    reconcile,
    state_of,
    unfolded,
)

__all__ = [
    "Brain", "FileBackend", "Fold", "ShortTermBackend", "State", "WindowMessage", "message_from_dict",
    "message_to_line", "reconcile",
]

log = logging.getLogger(__name__)


class ShortTermBackend(Protocol):
    def load(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> State:
        """The stored state; never writes, never raises for unreadable content (see State.problems)."""

    def lock(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> ContextManager[None]:
        """Serialise writes for one user across threads and processes."""

    def append(
        self, user_id: str, messages: list[WindowMessage], brain: Brain, *, chat_id: str = DEFAULT_CHAT,
        durable: bool = True,
    ) -> None:
        """Add messages at the end. `durable=False` when a durable journal already holds them."""

    def apply_fold(self, user_id: str, fold: Fold, *, chat_id: str = DEFAULT_CHAT) -> bool:
        """Drop the folded messages and store the new summary, only if the base is unchanged."""

    def remove(self, user_id: str, ids: Collection[str], *, chat_id: str = DEFAULT_CHAT) -> int:
        """Remove messages by id (a forgotten turn); returns how many were removed."""

    def sync(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> None:
        """Make earlier non-durable appends durable."""


@dataclass
class _OnDisk:
    """One chat's files as read, before healing."""

    messages: list[WindowMessage]
    bad: list[tuple[int, str]]
    """(line number, text) of complete lines that are not messages."""
    tail: bytes
    """Bytes after the last newline: an append torn by a crash (or in flight in another process)."""
    brain: Brain
    brain_error: str | None

    @cached_property
    def healed(self) -> list[WindowMessage]:
        """`unfolded(messages)`, found once per read of the files: with a long window looking for
        the last folded message took milliseconds per prompt. Shared: copy before changing it."""
        return unfolded(self.messages, self.brain)


class FileBackend:
    """history.yaml + brain.yaml per user and chat; safe for several threads and processes."""

    def __init__(self, paths: CharacterPaths) -> None:
        self._paths = paths
        self._locks = lock_table()
        self._cache: dict[tuple[str, str], tuple[tuple[int, ...], _OnDisk]] = {}
        self._files: dict[tuple[str, str], tuple[Path, Path]] = {}

    def files(self, user_id: str, chat_id: str = DEFAULT_CHAT) -> tuple[Path, Path]:
        """(history.yaml, brain.yaml) of one chat."""
        found = self._files.get((user_id, chat_id))
        if found is None:
            up = self._paths.user(user_id)
            folder = up.root if chat_id == DEFAULT_CHAT else up.root / "chats" / chat_folder(chat_id)
            found = self._files[(user_id, chat_id)] = (folder / up.history_file.name, folder / up.brain_file.name)
        return found

    @contextlib.contextmanager
    def lock(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> Iterator[None]:
        # One lock per user for all of its chats: writes are short, and one file is simpler to reason about.
        history, _ = self.files(user_id)
        with self._locks.get(history.with_name(".lock-window")).hold():
            yield

    # -- reading -------------------------------------------------------------------------------

    def load(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> State:
        history, brain_file = self.files(user_id, chat_id)
        disk = self._read_cached(user_id, chat_id)
        problems = [f"{history}:{n}: unreadable message line skipped ({_clip(text)})" for n, text in disk.bad]
        if disk.brain_error:
            problems.append(f"{disk.brain_error}; the summary is left out until the file is fixed")
        brain = Brain(
            disk.brain.historical_summary, disk.brain.last_history_id, disk.brain.summarized_through,
            disk.brain.updated_at,
        )
        return state_of(list(disk.healed), brain, tuple(problems), disk.brain_error is None)

    def _read_cached(self, user_id: str, chat_id: str) -> _OnDisk:
        history, brain_file = self.files(user_id, chat_id)
        key = (*_stat(history), *_stat(brain_file))
        cached = self._cache.get((user_id, chat_id))
        if cached is not None and cached[0] == key:
            return cached[1]
        disk = _read(history, brain_file)
        self._cache[(user_id, chat_id)] = (key, disk)
        return disk

    # -- writing (each under the lock) ---------------------------------------------------------

    def append(
        self, user_id: str, messages: list[WindowMessage], brain: Brain, *, chat_id: str = DEFAULT_CHAT,
        durable: bool = True,
    ) -> None:
        """`brain` is not written: last_history_id is re-derived from history.yaml on load, so
        brain.yaml changes only when the summary does."""
        if not messages:
            return
        history, brain_file = self.files(user_id, chat_id)
        with self.lock(user_id):
            disk = self._writable(user_id, chat_id)
            data = "".join(message_to_line(m) for m in messages).encode("utf-8")
            if durable:
                append_bytes_durably(history, data)
            else:
                history.parent.mkdir(parents=True, exist_ok=True)
                with open(history, "ab") as f:
                    f.write(data)
            key = (*_stat(history), *_stat(brain_file))
            self._cache[(user_id, chat_id)] = (key, _OnDisk(disk.messages + list(messages), [], b"", disk.brain, disk.brain_error))

    def apply_fold(self, user_id: str, fold: Fold, *, chat_id: str = DEFAULT_CHAT) -> bool:
        history, brain_file = self.files(user_id, chat_id)
        with self.lock(user_id):
            disk = self._writable(user_id, chat_id)
            if disk.brain_error:
                raise DataFileError(f"not folding into an unreadable summary: {disk.brain_error}")
            messages = disk.healed
            if (disk.brain.historical_summary, disk.brain.summarized_through) != (fold.base_summary, fold.base_through):
                return False
            n = len(fold.evicted_ids)
            if tuple(m.id for m in messages[:n]) != fold.evicted_ids:
                return False
            # Brain first: if we crash before history.yaml is rewritten, load() drops the folded ones.
            atomic_write_text(brain_file, brain_to_yaml(fold.brain))
            self._rewrite(user_id, chat_id, messages[n:])
        return True

    def replace(self, user_id: str, messages: list[WindowMessage], brain: Brain, *, chat_id: str = DEFAULT_CHAT) -> None:
        """Write a whole window (a restore, e.g. `kioku db export`): not a path turns take."""
        _, brain_file = self.files(user_id, chat_id)
        with self.lock(user_id):
            atomic_write_text(brain_file, brain_to_yaml(brain))
            self._rewrite(user_id, chat_id, list(messages))

    def remove(self, user_id: str, ids: Collection[str], *, chat_id: str = DEFAULT_CHAT) -> int:
        wanted = set(ids)
        with self.lock(user_id):
            disk = self._writable(user_id, chat_id)
            kept = [m for m in disk.messages if m.id not in wanted]
            removed = len(disk.messages) - len(kept)
            if removed:
                self._rewrite(user_id, chat_id, kept)
        return removed

    def sync(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> None:
        history, _ = self.files(user_id, chat_id)
        fsync_path(history)

    def _writable(self, user_id: str, chat_id: str) -> _OnDisk:
        """The current files, repaired if a crash left a torn or unreadable line (under the lock)."""
        history, _ = self.files(user_id, chat_id)
        disk = self._read_cached(user_id, chat_id)
        if disk.bad or disk.tail:
            aside = b"".join(text.encode("utf-8", "surrogateescape") + b"\n" for _, text in disk.bad) + disk.tail
            append_bytes_durably(history.with_name(history.name + ".corrupt"), aside + b"\n")
            log.warning("%s: %d unreadable or torn line(s) set aside in %s.corrupt", history, len(disk.bad) + bool(disk.tail), history.name)
            self._rewrite(user_id, chat_id, disk.messages)
            disk = self._read_cached(user_id, chat_id)
        return disk

    def _rewrite(self, user_id: str, chat_id: str, messages: list[WindowMessage]) -> None:
        history, _ = self.files(user_id, chat_id)
        atomic_write_text(history, "".join(message_to_line(m) for m in messages))
        self._cache.pop((user_id, chat_id), None)


def _read(history: Path, brain_file: Path) -> _OnDisk:
    messages: list[WindowMessage] = []
    bad: list[tuple[int, str]] = []
    tail = b""
    try:
        data = read_bytes_capped(history)
    except FileNotFoundError:
        data = b""
    if data:
        *lines, tail = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                bad.append((number, raw.decode("utf-8", "surrogateescape")))
                continue
            if not line.strip():
                continue
            message = parse_line(line)
            if message is None:
                bad.append((number, line))
            else:
                messages.append(message)
    brain, error = Brain(), None
    try:
        text = read_bytes_capped(brain_file, max_bytes=DATA_FILE_LIMITS.max_bytes).decode("utf-8")
    except FileNotFoundError:
        text = ""
    except UnicodeDecodeError as exc:
        text, error = "", f"{brain_file}: invalid UTF-8 ({exc.reason})"
    except DataFileError as exc:
        text, error = "", str(exc)
    if text.strip():
        try:
            brain = parse_brain(text, path=str(brain_file))
        except DataFileError as exc:
            error = str(exc)
    return _OnDisk(messages, bad, tail if tail.strip() else b"", brain, error)


def _stat(path: Path) -> tuple[int, int, int]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return (0, 0, -1)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _clip(text: str) -> str:
    return repr(text[:60] + ("…" if len(text) > 60 else ""))
