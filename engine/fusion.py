"""Pure prompt assembly: retrieved hits + persona + summary + window -> OpenAI messages.

No I/O here: the orchestrator retrieves, this module decides what fits and in what order.
Order is fixed: persona, world book, core memory, diary, summary, current time, window, message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from engine.prompts import render
from engine.stores.base import Hit, Message
from engine.tokens import count_tokens

TIER_ORDER = ("world_book", "core", "diary", "summary")


@dataclass(frozen=True)
class Budget:
    total: int
    caps: Mapping[str, int]


@dataclass(frozen=True)
class Assembly:
    """The output of `assemble`."""

    messages: list[Message]
    kept: tuple[Hit, ...]
    dropped: tuple[Hit, ...]
    """Hits trimmed by a tier cap or the overall budget, least relevant first."""
    tokens: Mapping[str, int]
    """Tokens per tier (hit texts), plus 'persona', 'window', 'message' and 'total' (all messages)."""


_persona_tokens = lru_cache(maxsize=64)(count_tokens)
"""A character's persona is the same text in every prompt: counted once (a few hundred tokens,
~0.25 ms a prompt when counted after the embedding call)."""


def with_tokens(hit: Hit) -> Hit:
    return hit if hit.tokens else replace(hit, tokens=count_tokens(hit.text))


def trim(hits_by_tier: Mapping[str, Sequence[Hit]], budget: Budget) -> tuple[dict[str, list[Hit]], list[Hit]]:
    """Drop the least relevant unpinned hits until every tier fits its cap and all fit the total."""
    kept = {tier: [with_tokens(h) for h in hits] for tier, hits in hits_by_tier.items()}
    dropped: list[Hit] = []
    for tier, hits in kept.items():
        cap = budget.caps.get(tier)
        if cap is not None:
            dropped += _drop_lowest(hits, lambda: sum(h.tokens for h in hits) > cap)

    def over_total() -> bool:
        return sum(h.tokens for hs in kept.values() for h in hs) > budget.total

    while over_total():
        candidates = [(h.score, tier, i) for tier, hs in kept.items() for i, h in enumerate(hs) if not h.pinned]
        if not candidates:
            break
        _, tier, i = min(candidates)
        dropped.append(kept[tier].pop(i))
    return kept, dropped


def _drop_lowest(hits: list[Hit], too_big) -> list[Hit]:
    out = []
    while too_big():
        unpinned = [(h.score, i) for i, h in enumerate(hits) if not h.pinned]
        if not unpinned:
            break
        _, i = min(unpinned)
        out.append(hits.pop(i))
    return out


def assemble(
    *,
    persona: str,
    hits_by_tier: Mapping[str, Sequence[Hit]],
    templates: Mapping[str, str],
    time_text: str,
    window: Sequence[Message],
    window_tokens: int | None = None,
    message: str,
    budget: Budget,
    names: Mapping[str, str],
) -> Assembly:
    """Build the messages. `templates` maps tier -> template with an `{{items}}` placeholder;
    `names` fills `{{user}}` / `{{char}}` everywhere (as MoeChat does). `window_tokens` is the
    window's token count when known (the short-term store keeps a count with each message)."""
    kept, dropped = trim(hits_by_tier, budget)
    messages: list[Message] = []
    tokens: dict[str, int] = {}
    system_tokens = 0

    def system(text: str, count=count_tokens) -> int:
        nonlocal system_tokens
        text = render(text, **names)
        if not text:
            return 0
        messages.append({"role": "system", "content": text})
        n = count(text)
        system_tokens += n
        return n

    tokens["persona"] = system(persona, _persona_tokens)
    ordered = [t for t in TIER_ORDER if t in kept] + [t for t in kept if t not in TIER_ORDER]
    for tier in ordered:
        hits = kept[tier]
        tokens[tier] = sum(h.tokens for h in hits)
        if hits:
            system(render(templates[tier], items="\n".join(h.text for h in hits)))
    system(time_text)
    for m in window:
        messages.append({"role": m["role"], "content": m["content"]})
    tokens["window"] = window_tokens if window_tokens is not None else sum(count_tokens(m["content"]) for m in window)
    messages.append({"role": "user", "content": message})
    tokens["message"] = count_tokens(message)
    tokens["total"] = system_tokens + tokens["window"] + tokens["message"]
    all_kept = tuple(h for t in ordered for h in kept[t])
    return Assembly(messages=messages, kept=all_kept, dropped=tuple(dropped), tokens=tokens)
