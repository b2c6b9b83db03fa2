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
from engine.paths import id_or_digest

USER_NAME_HEADER = "X-Kioku-User-Name"
MAX_NAME_CHARS = 64


@dataclass(frozen=True)
class Shape:
    frontend: str
    pattern: re.Pattern[str]
    """Groups `char` and `user`."""
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
                return Speakers(_clean(m.group("char")), _clean(m.group("user")), shape.frontend)
    return Speakers(None, None, "none")


def _clean(name: str | None) -> str | None:
    name = (name or "").strip()
    # A macro the frontend did not expand ("{{user}}") names nobody.
    if not name or (name.startswith("{{") and name.endswith("}}")):
        return None
    return name[:MAX_NAME_CHARS]


_MARKER = re.compile(r"\A\[[^\]\n]{1,80}\]\Z")
"""A frontend's one-line marker between prompt parts ("[Start a new Chat]")."""


def character_id_for(name: str) -> str:
    """The id a character created from a frontend's name gets: the name when it is a valid id
    (小月), with spaces as '_' (Ann_Lee), else `c-` and a digest of it."""
    return id_or_digest("_".join(name.split()), kind="character id")


def character_from(told: Speakers, system_texts: Iterable[str]) -> Character:
    """A character made from what a frontend sends: its name, the user's name, and the card text
    (its system messages but the prompt shape that named them and one-line markers) as the setting."""
    card = [t.strip() for t in system_texts
            if t.strip() and not _MARKER.match(t.strip()) and not any(s.pattern.search(t.strip()) for s in SHAPES)]
    fields: dict[str, object] = {"name": told.character or "character", "settings": "\n\n".join(card)}
    if told.user:
        fields["user_name"] = told.user
    return Character(**fields)
