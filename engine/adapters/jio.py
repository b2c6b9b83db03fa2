"""jionlp, imported once, lazily, with its stdout banner silenced.

jionlp takes ~0.8 s to import and prints a banner; importing `engine` must do neither. It also
logs every expression it cannot parse ("最近" alone) as an ERROR traceback on the root logger;
those are expected misses of a fallback, so a filter on the root logger drops records that come
from jionlp's own files (and nothing else).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from typing import Any

_lock = threading.Lock()


class _MuteThread:
    """Stands in for sys.stdout while jionlp imports: drops what the importing thread writes (the
    banner) and passes every other thread's writes through. `contextlib.redirect_stdout` would
    swap stdout for the whole process, so a host app printing meanwhile would lose its output."""

    def __init__(self, real: Any, muted: int) -> None:
        self._real = real
        self._muted = muted

    def write(self, text: str) -> int:
        if threading.get_ident() == self._muted:
            return len(text)
        return self._real.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _DropJionlpRecords(logging.Filter):
    def __init__(self, package_dir: str) -> None:
        super().__init__()
        self._prefix = package_dir.rstrip(os.sep) + os.sep

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.startswith(self._prefix)


@functools.cache
def _load():
    real = sys.stdout
    sys.stdout = _MuteThread(real, threading.get_ident())
    try:
        import jionlp
    finally:
        if isinstance(sys.stdout, _MuteThread):
            sys.stdout = real
    logging.getLogger().addFilter(_DropJionlpRecords(os.path.dirname(jionlp.__file__)))
    return jionlp


def jionlp():
    """The jionlp module (pinned 1.5.29: later versions return nothing for 上个月 / 四月)."""
    with _lock:
        return _load()


def split_sentences(text: str) -> list[str]:
    pieces = jionlp().split_sentence(text, criterion="fine")
    return [p.strip() for p in pieces if p and p.strip()]
