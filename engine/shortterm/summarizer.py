"""Rolling summary (MetaGPT BrainMemory style): previous summary + evicted messages -> new summary.

Text longer than the memory LLM's input is cut into overlapping token windows, each summarised
and clipped to its share of the input, and the pieces merged in one final call: one round, then
a hard truncation, so it always stops, even with a model that does not shrink its input.

Offline fallback (no LLM, or the LLM failed): an extractive summary — the previous summary plus
the first sentence of each evicted message, clipped to `max_words` (characters for CJK text,
words otherwise), newest whole lines kept.

Either way the result is at most `max_tokens` tokens: words do not bound text without spaces.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.adapters.llm import LLM
from engine.errors import LLMError
from engine.prompts import Prompts
from engine.tokens import count_tokens, split_tokens, truncate_tokens

log = logging.getLogger(__name__)

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SENTENCE_END = re.compile(r"(?<=[。！？!?\.])\s*")


@dataclass(frozen=True)
class SummaryUpdate:
    """The outcome of folding evicted messages into the running summary."""

    text: str
    """The new running summary."""
    used_llm: bool
    """False when the offline extractive fallback produced it."""
    llm_calls: int
    error: str | None = None
    """Why the LLM was not used (its error), if it was configured but failed."""


def format_messages(messages: Sequence[dict[str, str]], *, user: str, char: str) -> str:
    names = {"user": user, "assistant": char}
    return "\n".join(f"{names.get(m['role'], m['role'])}: {m['content']}" for m in messages)


def summarize(
    messages: Sequence[dict[str, str]],
    *,
    previous: str,
    llm: LLM | None,
    prompts: Prompts,
    max_words: int,
    input_tokens: int,
    max_tokens: int = 500,
    user: str = "user",
    char: str = "assistant",
) -> SummaryUpdate:
    if not messages:
        return SummaryUpdate(previous, used_llm=False, llm_calls=0)
    text = format_messages(messages, user=user, char=char)
    if llm is None:
        return SummaryUpdate(
            extractive_summary(previous, messages, max_words, max_tokens, user=user, char=char), used_llm=False,
            llm_calls=0,
        )
    calls = 0
    try:
        budget = max(200, input_tokens - count_tokens(previous) - 300)
        if count_tokens(text) > budget:
            pieces = split_tokens(text, window=budget, overlap=budget // 10)
            # Each piece's summary is clipped to its share of the input, so one round is enough
            # even when the model does not shrink anything: calls = pieces + 1.
            share = max(20, budget // len(pieces) - 1)
            partial = []
            for piece in pieces:
                partial.append(truncate_tokens(_ask(llm, prompts, previous="", text=piece, max_words=max_words), share))
                calls += 1
            text = "\n".join(partial)
        # Guaranteed stop: whatever is still too long is cut, never looped on.
        text = truncate_tokens(text, budget)
        summary = _ask(llm, prompts, previous=previous, text=text, max_words=max_words)
        calls += 1
    except LLMError as exc:
        log.warning("summary: memory LLM failed (%s); using the extractive fallback", exc)
        return SummaryUpdate(
            extractive_summary(previous, messages, max_words, max_tokens, user=user, char=char), used_llm=False,
            llm_calls=calls,
            error=str(exc),
        )
    text = truncate_tokens(clip_words(summary.strip(), max_words * 2), max_tokens)
    return SummaryUpdate(text, used_llm=True, llm_calls=calls)


def _ask(llm: LLM, prompts: Prompts, *, previous: str, text: str, max_words: int) -> str:
    prompt = prompts.render("summary_update", previous=previous or "-", text=text, max_words=max_words)
    reply = llm.complete([{"role": "user", "content": prompt}], temperature=0.2)
    reply = reply.strip()
    if not reply or reply.startswith("{") or len(reply) < 2:
        raise LLMError(f"summary reply is not a summary: {reply[:80]!r}")
    return reply


def extractive_summary(
    previous: str, messages: Sequence[dict[str, str]], max_words: int, max_tokens: int = 500, *,
    user: str = "user", char: str = "assistant",
) -> str:
    """One line per evicted message, `name: first sentence`, named as the diary names them (so the
    chat model reads one speaker under one name); unnamed roles of Chinese text read 用户 / 角色."""
    names = {"user": user, "assistant": char}
    lines = [previous.strip()] if previous.strip() else []
    for m in messages:
        first = _SENTENCE_END.split(m["content"].strip(), maxsplit=1)[0].strip()
        if first:
            who = names.get(m["role"], m["role"])
            if who == m["role"] and _CJK.search(first):
                who = {"user": "用户", "assistant": "角色"}.get(m["role"], who)
            lines.append(f"{who}: {first}")
    joined = "\n".join(lines).strip()
    clipped = clip_words(joined, max_words, keep="end")
    if clipped != joined and "\n" in clipped:
        clipped = clipped.split("\n", 1)[1]  # its first line lost its start: it would read mid-sentence
    # One first sentence longer than the bound is kept as its tail rather than lost.
    return newest_lines(clipped, max_tokens) or keep_last_tokens(clipped, max_tokens)


def newest_lines(text: str, max_tokens: int) -> str:
    """The newest whole lines of `text` within `max_tokens` ("" when not even the last fits): an
    extract cut mid-line starts mid-sentence."""
    kept: list[str] = []
    used = 0
    for line in reversed(text.split("\n")):  # not splitlines: U+2028 and the like are text here
        n = count_tokens(line + "\n")
        if used + n > max_tokens:
            break
        kept.append(line)
        used += n
    return "\n".join(reversed(kept)).strip()


def keep_last_tokens(text: str, max_tokens: int) -> str:
    """The longest suffix of `text` within `max_tokens` (the newest content of a summary).

    Searched by characters, so no character is cut in half; only the last 16 characters per
    allowed token are considered (a token is rarely longer), which keeps this cheap on huge text."""
    if count_tokens(text) <= max_tokens:
        return text
    window = text[-16 * max_tokens :]
    lo, hi = 0, len(window)  # find the smallest start whose suffix fits
    while lo < hi:
        mid = (lo + hi) // 2
        if count_tokens(window[mid:]) <= max_tokens:
            hi = mid
        else:
            lo = mid + 1
    return window[lo:].strip()


def clip_words(text: str, max_words: int, *, keep: str = "start") -> str:
    """Clip to `max_words` words, counting each CJK character as a word (as Chinese writers do)."""
    units = re.findall(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+|\s+", text)
    counted = [u for u in units if not u.isspace()]
    if len(counted) <= max_words:
        return text
    seq = units if keep == "start" else list(reversed(units))
    out, n = [], 0
    for u in seq:
        if not u.isspace():
            n += 1
            if n > max_words:
                break
        out.append(u)
    if keep != "start":
        out.reverse()
    return "".join(out).strip()
