"""What a world-book file may not do: be huge, nest deeply or use YAML aliases.

World books are shared and downloaded, so every file is treated as hostile. These checks run
before a file is composed into YAML nodes, in one linear pass over its events.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from engine.fileio import is_libyaml_depth_error

_EventLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# World-book files never need more than four levels (entries: / list / entry / keys); deeper
# nesting is a mistake or an attack (100,000 `[` make libyaml's recursive composer overflow
# the C stack), so it is refused before composing.
MAX_DEPTH = 20
_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep; a world-book file needs at most 4"


@dataclass(frozen=True)
class Limits:
    """Size caps for one world-book file; a file over them is reported, never half-loaded."""

    max_file_bytes: int = 2 * 1024 * 1024
    max_entry_chars: int = 5000
    """Longest `content` (or simple-format description); the prompt's world-book budget is far smaller."""
    max_key_chars: int = 500
    """Longest key, regex source included."""


DEFAULT_LIMITS = Limits()


def refuse_aliases_and_depth(text: str) -> tuple[int, str] | None:
    """(line, problem) for the first alias or over-deep nesting, from one pass over the events.

    Aliases are refused outright: the formats never need them, and a few hundred bytes of
    nested aliases expand to gigabytes (a "billion laughs"). The event pass is iterative and
    linear in the text, so neither an alias bomb nor deep nesting costs anything here.
    """
    try:
        return _first_alias_or_depth(text)
    except yaml.scanner.ScannerError as exc:
        if not is_libyaml_depth_error(exc):
            raise
        return exc.problem_mark.line + 1, _TOO_DEEP


def _first_alias_or_depth(text: str) -> tuple[int, str] | None:
    depth = 0
    for event in yaml.parse(text, Loader=_EventLoader):
        kind = type(event)
        if kind is yaml.AliasEvent:
            line = event.start_mark.line + 1
            return line, "YAML anchors and aliases (&name, *name, <<) are not allowed in world-book files; write the value out"
        if kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            depth += 1
            if depth > MAX_DEPTH:
                return event.start_mark.line + 1, _TOO_DEEP
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            depth -= 1
    return None
