"""The short-term window and rolling summary in Redis, shared by several worker processes.

Keys, for one user of one character (`base` = `{redis_prefix}:{user_id}:{character_id}/{chat_id}`;
the character is part of the chat id so two characters never share a user's window):

    {base}:window   a list of JSON messages, oldest first; a turn is one RPUSH (atomic)
    {base}:brain    a JSON string: historical_summary, last_history_id, summarized_through, updated_at
    {base}:lock     the write lock (`redis.lock.Lock`), held by `lock(user_id)` across processes

Every write refreshes the TTL of the window and brain keys when `redis_ttl_s` is set.
A fold replaces window and brain in one MULTI/EXEC transaction, so a reader never sees the summary
without the matching window. `cacheable: false` (BrainMemory's switch) keeps the summary in this
process only: the window is still stored in Redis, the brain is not written there.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import redis
from redis.exceptions import LockError, LockNotOwnedError

from engine.config import ShortTermConfig
from engine.errors import DataFileError, EngineError
from engine.paths import CharacterPaths, validate_id
from engine.shortterm.backend import Brain, State, WindowMessage, message_from_dict, reconcile

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

    def key(self, user_id: str) -> str:
        """`{prefix}:{user_id}:{character_id}/{chat_id}`; the window, brain and lock keys add a suffix."""
        validate_id(user_id, kind="user id")
        return f"{self._config.redis_prefix}:{user_id}:{self._character}/{self._chat}"

    # -- the protocol --------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, user_id: str) -> Iterator[None]:
        """Serialise writes for one user across processes; re-entrant within one thread."""
        base = self.key(user_id)
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

    def load(self, user_id: str) -> State:
        base = self.key(user_id)
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.lrange(f"{base}:window", 0, -1)
            pipe.get(f"{base}:brain")
            raw_messages, raw_brain = pipe.execute()
        except redis.RedisError as exc:
            raise self._error("read", base, exc) from exc
        messages = [_message(line, f"{base}:window", i) for i, line in enumerate(raw_messages)]
        if self._config.cacheable:
            brain = _brain(raw_brain, f"{base}:brain")
        else:
            with self._guard:
                brain = _copy(self._local_brains.get(base, Brain()))
        return reconcile(messages, brain)

    def append(self, user_id: str, messages: list[WindowMessage], brain: Brain) -> None:
        """One RPUSH (atomic; durable as far as the server's persistence settings go)."""
        if not messages:
            return
        base = self.key(user_id)
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.rpush(f"{base}:window", *(_dump(m) for m in messages))
            self._expire(pipe, base)
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error("append to", base, exc) from exc

    def replace(self, user_id: str, messages: list[WindowMessage], brain: Brain) -> None:
        """Window and brain in one transaction (a fold)."""
        base = self.key(user_id)
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(f"{base}:window")
            if messages:
                pipe.rpush(f"{base}:window", *(_dump(m) for m in messages))
            if self._config.cacheable and brain.is_dirty:
                pipe.set(f"{base}:brain", json.dumps({k: getattr(brain, k) for k in _BRAIN_FIELDS}, ensure_ascii=False))
            self._expire(pipe, base)
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error("replace", base, exc) from exc
        if not self._config.cacheable and brain.is_dirty:
            with self._guard:
                self._local_brains[base] = _copy(brain)
        brain.is_dirty = False

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


def _dump(m: WindowMessage) -> str:
    return json.dumps(asdict(m), ensure_ascii=False)


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
    known = {k: data.get(k) for k in _BRAIN_FIELDS}
    known["historical_summary"] = known["historical_summary"] or ""
    return Brain(**known)


def _copy(brain: Brain) -> Brain:
    return Brain(brain.historical_summary, brain.last_history_id, brain.summarized_through, brain.updated_at)
