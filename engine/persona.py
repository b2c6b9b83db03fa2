"""The fixed parts of every prompt: the persona, a new user's opening lines, the current time.

Pure functions of the character, the prompt templates and the clock (split from the orchestrator).
"""

from __future__ import annotations

import re
from datetime import datetime

from engine.character import Character
from engine.prompts import Prompts
from engine.stores.base import Message

_WEEKDAYS = {
    "zh": ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"],
    "en": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
}
_HEADING = re.compile(r"^\s*(【[^】]*】|\[[^\]]*\])\s*$")


def persona_text(character: Character, prompts: Prompts) -> str:
    c = character
    text = prompts.render(
        "persona",
        settings=c.settings, personality=c.personality, user_mask=c.user_mask,
        message_examples=c.message_examples, prompt=c.prompt,
    )
    return _drop_empty_sections(text)


def opening_lines(character: Character) -> list[Message]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": line} for i, line in enumerate(character.opening_lines)]


def time_text(prompts: Prompts, now: datetime, *, language: str, zone: str) -> str:
    weekday = _WEEKDAYS.get(language, _WEEKDAYS["en"])[now.weekday()]
    return prompts.render("time", now=now.strftime("%Y-%m-%d %H:%M"), weekday=weekday, timezone=zone)


def _drop_empty_sections(text: str) -> str:
    """Remove template headings whose section came out empty (a character without examples)."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text)]
    kept = [b for b in blocks if b and not _HEADING.match(b)]
    return "\n\n".join(kept)
