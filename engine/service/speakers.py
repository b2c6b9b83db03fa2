"""Who a frontend says is speaking: the character and the user's name, when the request tells.

A connection serves every character and persona of a frontend when the request names them:
- headers: `X-Kioku-Character` (the character, `selection.py`) and `X-Kioku-User-Name` (the name
  the character calls the user by), which newer SillyTavern versions fill from their `{{char}}` /
  `{{user}}` macros in the connection's headers;
- else the prompt shapes of frontends that name both in a system message (`SHAPES`, rows with their
  example), for versions whose headers cannot carry macros (SillyTavern 1.12).
A name found in the prompt selects a character only when kioku knows it; the user's name is used
as it is (shortened to `MAX_NAME_CHARS`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engine.character import Character
from engine.stores.worldbook.matcher import is_cjk

USER_NAME_HEADER = "X-Kioku-User-Name"
MAX_NAME_CHARS = 64


@dataclass(frozen=True)
class Shape:
    """One text shape a frontend writes, with an example it matches."""

    name: str
    """A main-prompt shape's frontend; a card line's `Character` field."""
    pattern: re.Pattern[str]
    """Groups `char` and `user` (main prompts), `text` (card lines)."""
    example: str


SHAPES: tuple[Shape, ...] = (
    Shape("sillytavern main prompt",
          re.compile(r"\AWrite (?P<char>[^\n]{1,64}?)'s next reply in a fictional chat between (?P=char) and "
                     r"(?P<user>[^\n]{1,64}?)\.", re.DOTALL),
          "Write 小月's next reply in a fictional chat between 小月 and 林舟."),
)


@dataclass(frozen=True)
class Speakers:
    character: str | None
    """The character's name as the frontend shows it (None: not told)."""
    user: str | None
    """The user's name as the frontend shows it (None: not told)."""
    source: str
    """Where they came from: "headers", a shape's frontend, or "none"."""


def speakers(system_texts: Iterable[str], *, character_header: str | None, user_header: str | None) -> Speakers:
    """The names the request tells (see the module docstring); headers first."""
    character, user = _clean(character_header), _clean(user_header)
    if character or user:
        return Speakers(character, user, "headers")
    for text in system_texts:
        for shape in SHAPES:
            m = shape.pattern.search(text.strip())
            if m:
                return Speakers(_clean(m.group("char")), _clean(m.group("user")), shape.name)
    return Speakers(None, None, "none")


def _clean(name: str | None) -> str | None:
    name = (name or "").strip()
    # A macro the frontend did not expand ("{{user}}") names nobody.
    if not name or (name.startswith("{{") and name.endswith("}}")):
        return None
    return name[:MAX_NAME_CHARS]


_MARKER = re.compile(r"\A\[[^\]\n]{1,80}\]\Z")
"""A frontend's one-line marker between prompt parts ("[Start a new Chat]")."""


CARD_LINES: tuple[Shape, ...] = (
    # SillyTavern's default story string wraps the card's personality and scenario in these.
    Shape("personality", re.compile(r"\A\[[^\n\]]{1,64}'s personality: (?P<text>.+)\]\Z", re.DOTALL),
          "[小雪's personality: 活泼、细心、有点爱操心]"),
    Shape("settings", re.compile(r"\A\[Circumstances and context of the dialogue: (?P<text>.+)\]\Z", re.DOTALL),
          "[Circumstances and context of the dialogue: 放学后的画室]"),
)


def character_from(told: Speakers, system_texts: Iterable[str]) -> Character:
    """A character made from what a frontend sends: its name, the user's name, and the card text:
    lines of a known card shape (`CARD_LINES`) to their field, the rest (but the prompt shape that
    named them and one-line markers) as the setting. A card with no Chinese or Japanese in it
    makes an English character (kioku's own prompt text follows `language`)."""
    fields: dict[str, list[str]] = {"settings": [], "personality": []}
    for text in (t.strip() for t in system_texts):
        if not text or any(s.pattern.search(text) for s in SHAPES):
            continue
        line = next(((c.name, m) for c in CARD_LINES if (m := c.pattern.match(text))), None)
        if line is not None:
            fields[line[0]].append(line[1].group("text").strip())
        elif not _MARKER.match(text):
            fields["settings"].append(text)
    made: dict[str, object] = {"name": told.character or "character",
                               **{k: "\n\n".join(v) for k, v in fields.items() if v}}
    if not any(is_cjk(ch) for ch in "".join(str(v) for v in made.values())):
        made["config"] = {"language": "en"}  # the card's script, not the user's name, decides
    if told.user:
        made["user_name"] = told.user
    return Character(**made)
