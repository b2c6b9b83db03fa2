"""jionlp, imported once, lazily, with its stdout banner silenced.

jionlp takes ~0.8 s to import and prints a banner; importing `engine` must do neither.
"""

from __future__ import annotations

import contextlib
import functools
import io
import threading

_lock = threading.Lock()


@functools.cache
def _load():
    with contextlib.redirect_stdout(io.StringIO()):
        import jionlp

    return jionlp


def jionlp():
    """The jionlp module (pinned 1.5.29: later versions return nothing for 上个月 / 四月)."""
    with _lock:
        return _load()


def split_sentences(text: str) -> list[str]:
    pieces = jionlp().split_sentence(text, criterion="fine")
    return [p.strip() for p in pieces if p and p.strip()]
