"""Where the short-term window and the rolling summary persist: files by default (Redis in
`engine.shortterm.redis_backend` for multi-worker deployments).

File layout per user: `history.yaml` holds one message per line, each a YAML flow mapping, so an
append never rewrites what is there and a torn last line after a crash is easy to set aside;
`brain.yaml` holds the summary state and is replaced atomically.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ContextManager, Protocol

import yaml

from engine.errors import DataFileError
from engine.fileio import append_text_durably, atomic_write_text, atomic_write_yaml, load_yaml_file, read_text_strict
from engine.paths import CharacterPaths
from engine.tokens import count_tokens

log = logging.getLogger(__name__)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class WindowMessage:
    """One message of the short-term window."""

    id: str
    role: str
    content: str
    at: str
    """ISO time with UTC offset."""
    tokens: int
    """cl100k_base count, stored with the message so it is counted once."""

    def to_openai(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class Brain:
    """The rolling-summary state of one user (BrainMemory's fields)."""

    historical_summary: str = ""
    last_history_id: str | None = None
    """Id of the last message appended; appending it again is a no-op."""
    summarized_through: str | None = None
    """Id of the last message folded into the summary; older messages leave the window."""
    updated_at: str | None = None
    is_dirty: bool = field(default=False, compare=False)
    """Changed since loaded; backends write the brain only when set (BrainMemory's is_dirty)."""


@dataclass
class State:
    messages: list[WindowMessage]
    brain: Brain


class ShortTermBackend(Protocol):
    def load(self, user_id: str) -> State: ...

    def append(self, user_id: str, messages: list[WindowMessage], brain: Brain) -> None:
        """Durably add messages (and the brain's new last_history_id) before returning."""

    def replace(self, user_id: str, messages: list[WindowMessage], brain: Brain) -> None:
        """Store the window after a summary fold."""

    def lock(self, user_id: str) -> ContextManager[None]:
        """Serialise writes for one user (a Redis lock across processes, a thread lock in one)."""


def reconcile(messages: list[WindowMessage], brain: Brain) -> State:
    """The state as stored, healed: a crash between writing the summary and rewriting the window
    leaves messages that were already folded into the summary; they are dropped here. The last
    message's id is the brain's `last_history_id` (so the window need not rewrite the brain)."""
    if brain.summarized_through is not None:
        ids = [m.id for m in messages]
        if brain.summarized_through in ids:
            messages = messages[ids.index(brain.summarized_through) + 1 :]
    if messages:
        brain.last_history_id = messages[-1].id
    return State(messages, brain)


def message_from_dict(d: dict) -> WindowMessage:
    """Raises KeyError / TypeError / ValueError for a dict that is not a message."""
    content = str(d["content"])
    # A hand-written line may lack the stored count; counting it here keeps budgets honest.
    tokens = int(d.get("tokens") or 0) or count_tokens(content)
    return WindowMessage(id=str(d["id"]), role=str(d["role"]), content=content, at=str(d.get("at", "")), tokens=tokens)


def message_to_line(m: WindowMessage) -> str:
    # JSON is valid YAML flow style; one line per message keeps appends atomic in effect.
    return "- " + json.dumps(asdict(m), ensure_ascii=False) + "\n"


class FileBackend:
    """history.yaml + brain.yaml per user; for one process (use Redis for several workers)."""

    def __init__(self, paths: CharacterPaths) -> None:
        self._paths = paths
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()
        self._cache: dict[str, tuple[tuple[int, int, int, int], State]] = {}

    @contextlib.contextmanager
    def lock(self, user_id: str) -> Iterator[None]:
        with self._guard:
            lk = self._locks.setdefault(user_id, threading.RLock())
        with lk:
            yield

    def load(self, user_id: str) -> State:
        up = self._paths.user(user_id)
        key = (*_stat(up.history_file), *_stat(up.brain_file))
        cached = self._cache.get(user_id)
        if cached is not None and cached[0] == key:
            return State(list(cached[1].messages), _copy(cached[1].brain))
        state = reconcile(self._load_history(up.history_file), self._load_brain(up.brain_file))
        self._cache[user_id] = (key, State(list(state.messages), _copy(state.brain)))
        return state

    def append(self, user_id: str, messages: list[WindowMessage], brain: Brain) -> None:
        up = self._paths.user(user_id)
        cached = self._cache.get(user_id)
        fresh = cached is not None and cached[0] == (*_stat(up.history_file), *_stat(up.brain_file))
        append_text_durably(up.history_file, "".join(message_to_line(m) for m in messages))
        # last_history_id is re-derived from history.yaml on load, so brain.yaml need not be
        # rewritten on every turn (BrainMemory's is_dirty); only summary changes write it.
        if fresh:
            # Extend the cached state instead of re-reading a possibly long file.
            old = cached[1]
            brain_copy = _copy(old.brain)
            brain_copy.last_history_id = messages[-1].id if messages else brain_copy.last_history_id
            key = (*_stat(up.history_file), *_stat(up.brain_file))
            self._cache[user_id] = (key, State(old.messages + list(messages), brain_copy))
        else:
            self._cache.pop(user_id, None)

    def replace(self, user_id: str, messages: list[WindowMessage], brain: Brain) -> None:
        up = self._paths.user(user_id)
        # Brain first: if we crash before history.yaml is rewritten, load() drops the folded ones.
        if brain.is_dirty:
            atomic_write_yaml(up.brain_file, _brain_dict(brain))
        atomic_write_text(up.history_file, "".join(message_to_line(m) for m in messages))
        brain.is_dirty = False
        self._cache.pop(user_id, None)

    def _load_brain(self, path: Path) -> Brain:
        if not path.exists():
            return Brain()
        data = load_yaml_file(path) or {}
        if not isinstance(data, dict):
            raise DataFileError("expected a mapping of summary fields", path=str(path), line=1)
        known = {k: data.get(k) for k in ("historical_summary", "last_history_id", "summarized_through", "updated_at")}
        known["historical_summary"] = known["historical_summary"] or ""
        return Brain(**known)

    def _load_history(self, path: Path) -> list[WindowMessage]:
        if not path.exists():
            return []
        text = read_text_strict(path)
        good: list[WindowMessage] = []
        bad: list[str] = []
        for number, line in enumerate(text.splitlines(keepends=True), start=1):
            if not line.strip():
                continue
            message = _parse_line(line)
            if message is None or not line.endswith("\n"):
                bad.append(line)
                log.warning("%s:%d: unreadable message line set aside in %s.corrupt", path, number, path.name)
                continue
            good.append(message)
        if bad:
            append_text_durably(path.with_name(path.name + ".corrupt"), "".join(bad) + "\n")
            atomic_write_text(path, "".join(message_to_line(m) for m in good))
        return good


def _parse_line(line: str) -> WindowMessage | None:
    stripped = line.strip()
    d = None
    if stripped.startswith("- {"):
        # What we write is JSON; json is ~20x faster than YAML on long histories.
        try:
            d = json.loads(stripped[2:])
        except ValueError:
            d = None
    if d is None:
        # A hand-edited line may be any YAML flow mapping.
        try:
            data = yaml.load(line, Loader=_Loader)  # noqa: S506 - safe loader
        except yaml.YAMLError:
            return None
        if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
            return None
        d = data[0]
    if not isinstance(d, dict):
        return None
    try:
        return message_from_dict(d)
    except (KeyError, TypeError, ValueError):
        return None


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return (0, -1)
    return (st.st_mtime_ns, st.st_size)


def _copy(brain: Brain) -> Brain:
    return Brain(brain.historical_summary, brain.last_history_id, brain.summarized_through, brain.updated_at)


def _brain_dict(brain: Brain) -> dict[str, object]:
    return {
        "historical_summary": brain.historical_summary,
        "last_history_id": brain.last_history_id,
        "summarized_through": brain.summarized_through,
        "updated_at": brain.updated_at,
    }
