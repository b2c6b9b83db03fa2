"""One value per key, made on first use and shared by every thread of the process.

The stores keep such a table for their users (a files diary, the fact repositories), the lock
files for their paths and the Postgres backend for its characters' owners. The value is made
under the table's lock, so two threads asking for a new key at once get the same one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Keyed(Generic[K, V]):
    def __init__(self, make: Callable[[K], V]) -> None:
        self._make = make
        self._values: dict[K, V] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V:
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = self._make(key)
            return value

    def pop(self, key: K) -> V | None:
        """Forget the key's value (the next `get` makes a new one); the old value, if any."""
        with self._lock:
            return self._values.pop(key, None)

    def items(self) -> list[tuple[K, V]]:
        """What has been made so far, in the order it was first asked for."""
        with self._lock:
            return list(self._values.items())
