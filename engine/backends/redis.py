"""The short-term window and rolling summary in Redis, shared by several worker processes.

Keys, for one chat of one user of one character (`base` = `{redis_prefix}:{user_id}:{character_id}/{chat}`,
where `chat` is `short_term.chat_id` for the default chat and the chat's safe name otherwise; the
character is part of it so two characters never share a user's window):

    {base}:window   a list of JSON messages, oldest first; a turn is one RPUSH (atomic)
    {base}:brain    a JSON string: historical_summary, last_history_id, summarized_through, updated_at
    {base}:lock     the append lock (`redis.lock.Lock`), held for milliseconds, never across an LLM call

Every write refreshes the TTL of the window and brain keys when `redis_ttl_s` is set.
A fold and a removal are check-and-set transactions (WATCH / MULTI): a fold drops the messages it
folded with LTRIM only while they still head the list and the summary is the one it started
from, so appends made by other workers meanwhile are never overwritten. `cacheable: false`
(BrainMemory's switch) keeps the summary in this process only: the window is still stored in
Redis, the brain is not written there.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Collection, Iterator
from typing import Any

import redis
from redis.exceptions import LockError, LockNotOwnedError, WatchError

from engine.config import ShortTermConfig
from engine.errors import DataFileError, EngineError
from engine.paths import CharacterPaths, validate_id
from engine.shortterm.chats import DEFAULT_CHAT, chat_folder
from engine.shortterm.lines import dumps_line
from engine.shortterm.state import (
    Brain,
    Fold,
    State,
    WindowMessage,
    brain_from_dict,
    message_from_dict,
    message_json,
    reconcile,
)

_BRAIN_FIELDS = ("historical_summary", "last_history_id", "summarized_through", "updated_at")


class RedisBackendError(EngineError, RuntimeError):
    """Redis is unreachable, a lock could not be taken in time, or a stored value is unreadable."""


class RedisBackend:
    """`ShortTermBackend` on Redis; safe to use from many threads and many processes."""

    def __init__(self, *, paths: CharacterPaths, config: ShortTermConfig, client: redis.Redis | None = None) -> None:
        self._config = config
        self._character = validate_id(paths.root.name, kind="character id")
        self._chat = validate_id(config.chat_id, kind="chat id")
        self._redis = client if client is not None else redis.Redis.from_url(config.redis_url, decode_responses=True)
        self._local_brains: dict[str, Brain] = {}
        """With cacheable=False: the summaries of this process."""
        self._held = threading.local()
        self._guard = threading.Lock()

    # -- keys ----------------------------------------------------------------------------------

    def key(self, user_id: str, chat_id: str = DEFAULT_CHAT) -> str:
        """`{prefix}:{user_id}:{character_id}/{chat}`; the window, brain and lock keys add a suffix."""
        validate_id(user_id, kind="user id")
        chat = self._chat if chat_id == DEFAULT_CHAT else chat_folder(chat_id)
        return f"{self._config.redis_prefix}:{user_id}:{self._character}/{chat}"

    # -- the protocol --------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> Iterator[None]:
        """Serialise appends to one chat across processes; re-entrant within one thread."""
        base = self.key(user_id, chat_id)
        held: dict[str, int] = self._held.__dict__.setdefault("depth", {})
        if held.get(base):
            held[base] += 1
            try:
                yield
            finally:
                held[base] -= 1
            return
        lk = self._redis.lock(
            f"{base}:lock", timeout=self._config.redis_lock_timeout_s,
            blocking_timeout=self._config.redis_lock_wait_s, thread_local=False, sleep=0.005,
        )
        try:
            acquired = lk.acquire()
        except redis.RedisError as exc:
            raise RedisBackendError(f"redis at {self._config.redis_url}: cannot take {base}:lock: {exc}") from exc
        if not acquired:
            raise RedisBackendError(
                f"redis lock {base}:lock still held by another writer after {self._config.redis_lock_wait_s:g}s "
                "(short_term.redis_lock_wait_s)"
            )
        held[base] = 1
        try:
            yield
        finally:
            held.pop(base, None)
            try:
                lk.release()
            except (LockNotOwnedError, LockError) as exc:
                # The write itself is done; the lock expired under us (redis_lock_timeout_s too short).
                raise RedisBackendError(
                    f"redis lock {base}:lock expired before it was released; raise short_term.redis_lock_timeout_s "
                    f"(now {self._config.redis_lock_timeout_s:g}s): {exc}"
                ) from exc

    def load(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> State:
        base = self.key(user_id, chat_id)
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.lrange(f"{base}:window", 0, -1)
            pipe.get(f"{base}:brain")
            raw_messages, raw_brain = pipe.execute()
        except redis.RedisError as exc:
            raise self._error("read", base, exc) from exc
        messages: list[WindowMessage] = []
        problems: list[str] = []
        for i, line in enumerate(raw_messages):
            try:
                messages.append(_message(line, f"{base}:window", i))
            except DataFileError as exc:
                problems.append(f"{exc}; skipped")
        brain_ok = True
        if self._config.cacheable:
            try:
                brain = _brain(raw_brain, f"{base}:brain")
            except DataFileError as exc:
                brain, brain_ok = Brain(), False
                problems.append(f"{exc}; the summary is left out until it is fixed")
        else:
            with self._guard:
                brain = _copy(self._local_brains.get(base, Brain()))
        return reconcile(messages, brain, tuple(problems), brain_ok)

    def append(
        self, user_id: str, messages: list[WindowMessage], brain: Brain, *, chat_id: str = DEFAULT_CHAT,
        durable: bool = True,
    ) -> None:
        """One RPUSH (atomic; durable as far as the server's persistence settings go)."""
        if not messages:
            return
        base = self.key(user_id, chat_id)
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.rpush(f"{base}:window", *(message_json(m) for m in messages))
            self._expire(pipe, base)
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error("append to", base, exc) from exc

    def apply_fold(self, user_id: str, fold: Fold, *, chat_id: str = DEFAULT_CHAT) -> bool:
        """LTRIM the folded head and SET the brain in one transaction, only if neither changed."""
        base = self.key(user_id, chat_id)
        window, brain_key = f"{base}:window", f"{base}:brain"
        n = len(fold.evicted_ids)

        def check(pipe: Any) -> bool:
            state = reconcile(
                [_message(line, window, i) for i, line in enumerate(pipe.lrange(window, 0, -1))],
                self._current_brain(pipe, base),
            )
            if (state.brain.historical_summary, state.brain.summarized_through) != (fold.base_summary, fold.base_through):
                return False
            return tuple(m.id for m in state.messages[:n]) == fold.evicted_ids

        def write(pipe: Any) -> None:
            position = _position_after(pipe, window, fold.evicted_ids[-1])
            pipe.multi()
            pipe.ltrim(window, position, -1)
            if self._config.cacheable:
                pipe.set(brain_key, _dump_brain(fold.brain))
            self._expire(pipe, base)

        applied = self._check_and_set(base, (window, brain_key), check, write)
        if applied and not self._config.cacheable:
            with self._guard:
                self._local_brains[base] = _copy(fold.brain)
        return applied

    def remove(self, user_id: str, ids: Collection[str], *, chat_id: str = DEFAULT_CHAT) -> int:
        base = self.key(user_id, chat_id)
        window = f"{base}:window"
        wanted = set(ids)
        found: list[str] = []

        def check(pipe: Any) -> bool:
            found[:] = [line for line in pipe.lrange(window, 0, -1) if _id_of(line) in wanted]
            return bool(found)

        def write(pipe: Any) -> None:
            pipe.multi()
            for line in found:
                pipe.lrem(window, 1, line)
            self._expire(pipe, base)

        return len(found) if self._check_and_set(base, (window,), check, write) else 0

    def sync(self, user_id: str, *, chat_id: str = DEFAULT_CHAT) -> None:
        """Durability is the server's (its AOF / RDB settings)."""

    def _current_brain(self, pipe: Any, base: str) -> Brain:
        if self._config.cacheable:
            return _brain(pipe.get(f"{base}:brain"), f"{base}:brain")
        with self._guard:
            return _copy(self._local_brains.get(base, Brain()))

    def _check_and_set(self, base: str, keys: tuple[str, ...], check: Any, write: Any) -> bool:
        """WATCH `keys`, run `check` on the watched values; if it holds, `write` in MULTI/EXEC.
        Retried while another client changes the keys in between (optimistic locking)."""
        try:
            with self._redis.pipeline(transaction=True) as pipe:
                for _ in range(50):
                    try:
                        pipe.watch(*keys)
                        if not check(pipe):
                            pipe.unwatch()
                            return False
                        write(pipe)
                        pipe.execute()
                        return True
                    except WatchError:
                        continue
        except redis.RedisError as exc:
            raise self._error("update", base, exc) from exc
        raise RedisBackendError(f"redis key {base}: changed by other clients during 50 attempts")

    # -- extras --------------------------------------------------------------------------------

    def ping(self) -> bool:
        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._redis.close()

    def _expire(self, pipe: Any, base: str) -> None:
        ttl = self._config.redis_ttl_s
        if ttl:
            pipe.expire(f"{base}:window", ttl)
            if self._config.cacheable:
                pipe.expire(f"{base}:brain", ttl)

    def _error(self, action: str, base: str, exc: Exception) -> RedisBackendError:
        return RedisBackendError(f"redis at {self._config.redis_url}: cannot {action} {base}: {type(exc).__name__}: {exc}")


def _dump_brain(brain: Brain) -> str:
    return dumps_line({k: getattr(brain, k) for k in _BRAIN_FIELDS})


def _id_of(line: str) -> str | None:
    try:
        value = json.loads(line).get("id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _position_after(pipe: Any, window: str, last_id: str) -> int:
    """Index just past the message `last_id` in the stored list (unreadable entries count too)."""
    for i, line in enumerate(pipe.lrange(window, 0, -1)):
        if _id_of(line) == last_id:
            return i + 1
    return 0


def _message(line: str, key: str, index: int) -> WindowMessage:
    try:
        return message_from_dict(json.loads(line))
    except (ValueError, KeyError, TypeError) as exc:
        raise DataFileError(f"unreadable window message at index {index}: {exc} (got {line[:80]!r})", path=f"redis:{key}") from None


def _brain(raw: str | None, key: str) -> Brain:
    if raw is None:
        return Brain()
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        raise DataFileError(f"unreadable summary state: {exc} (got {raw[:80]!r})", path=f"redis:{key}") from None
    return brain_from_dict(data, path=f"redis:{key}")


def _copy(brain: Brain) -> Brain:
    return Brain(brain.historical_summary, brain.last_history_id, brain.summarized_through, brain.updated_at)
