"""A numpy array that grows by doubling, so adding items one by one costs amortised O(1)."""

from __future__ import annotations

import numpy as np


class Grow:
    """Rows of a fixed trailing shape; `view` is the filled part (no copy)."""

    def __init__(self, dtype, shape: tuple[int, ...] = (), data: np.ndarray | None = None) -> None:
        self._shape = shape
        if data is None:
            data = np.zeros((0, *shape), dtype=dtype)
        self._buf = np.array(data, dtype=dtype, copy=True).reshape((-1, *shape))
        self._n = int(self._buf.shape[0])

    def __len__(self) -> int:
        return self._n

    @property
    def view(self) -> np.ndarray:
        return self._buf[: self._n]

    def extend(self, rows) -> None:
        rows = np.asarray(rows, dtype=self._buf.dtype).reshape((-1, *self._shape))
        need = self._n + rows.shape[0]
        if need > self._buf.shape[0]:
            cap = max(need, 2 * self._buf.shape[0], 16)
            buf = np.zeros((cap, *self._shape), dtype=self._buf.dtype)
            buf[: self._n] = self._buf[: self._n]
            self._buf = buf
        self._buf[self._n : need] = rows
        self._n = need

    def append(self, value) -> None:
        self.extend([value])
