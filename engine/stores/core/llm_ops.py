"""Fact extraction with the memory LLM: build the prompt, ask, parse, retry an unreadable reply once.

The LLM sees the recent turns and the existing facts most similar to them (not merely the last
N facts), each under a short integer alias; `parse_reply` maps the aliases back to real ids.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from engine.adapters.llm import LLM, Message
from engine.prompts import Prompts
from engine.stores.core.facts import Fact
from engine.stores.core.ops import FactOp, ReplyError, Said, parse_reply

log = logging.getLogger(__name__)


def build_messages(prompts: Prompts, turns: Sequence[Said], shown: Sequence[Fact], *, today: datetime) -> list[Message]:
    empty = "(无)" if prompts.language == "zh" else "(none)"
    facts = "\n".join(f"[{i}] {f.text}" for i, f in enumerate(shown, start=1)) or empty
    user_label, bot_label = ("用户", "助手") if prompts.language == "zh" else ("User", "Assistant")
    lines = []
    for turn in turns:
        lines.append(f"{user_label}: {turn.user}")
        lines.append(f"{bot_label}: {turn.assistant}")
    return [
        {"role": "system", "content": prompts.render("core_extract")},
        {
            "role": "user",
            "content": prompts.render(
                "core_extract_input", facts=facts, turns="\n".join(lines), today=today.date().isoformat()
            ),
        },
    ]


def llm_ops(
    llm: LLM, prompts: Prompts, turns: Sequence[Said], shown: Sequence[Fact], *, today: datetime
) -> list[FactOp]:
    """The operations the LLM proposes. An unreadable reply is retried once with the parse error
    shown to the LLM; a second raises `ReplyError`. `LLMError` (unreachable, timeout, HTTP
    error) propagates. Either way the caller falls back to the offline rules and retries later.
    """
    aliases = {i: f.id for i, f in enumerate(shown, start=1)}
    messages = build_messages(prompts, turns, shown, today=today)
    for attempt in (1, 2):
        reply = llm.complete(messages, temperature=0.0)
        try:
            return parse_reply(reply, aliases)
        except ReplyError as exc:
            log.warning("core memory: unreadable extraction reply (attempt %d of 2): %s", attempt, exc)
            if attempt == 2:
                raise
            messages = [
                *messages,
                {"role": "assistant", "content": reply[:4000]},
                {"role": "user", "content": prompts.render("core_retry", error=str(exc)[:200])},
            ]
    raise AssertionError("unreachable")
