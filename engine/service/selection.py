"""Which character and upstream model a chat request means, from unmodified OpenAI clients.

- character: the `X-Kioku-Character` header, else the model name `<character>` or
  `<character>/<upstream model>`, else `service.default_character`. A character may be named by its
  id (the folder) or by its display name (`name:` in character.yaml, what `/v1/models` shows);
  a display name two characters share is refused with 400 (use the id);
- upstream model: the part after the slash, else a model name that names no character (with the
  header or the default character), else the character's `llm.model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.paths import validate_id
from engine.service.errors import ServiceError

CHARACTER_HEADER = "X-Kioku-Character"


@dataclass(frozen=True)
class Selection:
    character: str
    upstream_model: str | None
    """None: the character's configured `llm.model`."""


def find_character(name: str, names: Mapping[str, str]) -> str | None:
    """The id of the character `name` means (its id, or its unique display name), else None.
    `names` maps every character id to its display name."""
    name = name.strip()
    if name in names:
        return name
    matches = sorted(cid for cid, shown in names.items() if shown == name)
    if len(matches) > 1:
        raise ServiceError(400, f"{name!r} is the name of several characters ({', '.join(matches)}): use the id",
                           code="ambiguous_character")
    return matches[0] if matches else None


def select(model: str, header: str | None, *, names: Mapping[str, str], default_character: str | None) -> Selection:
    """See the module docstring. `header` is the decoded X-Kioku-Character value (None when absent)."""
    model = model.strip()
    head, _, tail = model.partition("/")
    if header:
        character = find_character(header, names) or header  # an unknown one 404s when opened
        if tail and find_character(head, names) == character:
            upstream = tail
        else:
            upstream = None if find_character(model, names) == character else model
    elif tail and (found := find_character(head, names)) is not None:
        character, upstream = found, tail
    elif (found := find_character(model, names)) is not None:
        character, upstream = found, None
    elif default_character:
        character, upstream = default_character, model
    else:
        listed = ", ".join(f"{cid} ({shown})" if shown != cid else cid for cid, shown in sorted(names.items()))
        raise ServiceError(
            404, f"model {model!r} names no character: use '<character>' or '<character>/<upstream model>' "
            f"(characters: {listed or 'none'}), or send the {CHARACTER_HEADER} header", code="model_not_found",
        )
    validate_id(character, kind="character id")
    return Selection(character, upstream or None)
