"""The one error of SillyTavern's files (which file, where in it, what is wrong) and the guarded
JSON decode every reader of those files shares."""

from __future__ import annotations

import json
from typing import Any

from engine.errors import EngineError

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted. Real cards and lorebooks stay under ten; the cap
keeps a hostile file from exhausting the recursion of anything that walks the result later."""


class FormatError(EngineError, ValueError):
    """A file kioku cannot read as the format it claims, or a value it cannot write in one.

    `str()` is "file: where: message", e.g.
    "ann.png: chunk 'ccv3': field data.tags: must be a list of strings (got str 'a, b')"."""

    def __init__(self, file: str, where: str | None, message: str) -> None:
        # args keeps all three so the error pickles and copies like any builtin exception.
        super().__init__(file, where, message)
        self.file = file
        """The file (a path or the name the caller gave for bytes)."""
        self.where = where
        """Where in the file: "chunk 'ccv3'", "entry 3 (uid 7)", "line 12", "field data.name"."""
        self.message = message
        """What is wrong, with the offending value."""

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.message}" if self.where else f"{self.file}: {self.message}"


def describe(value: Any) -> str:
    """The offending value for a message, shortened: `str 'a, b'`, `int 5`, `list of 3`."""
    kind = type(value).__name__ if value is not None else "null"
    if isinstance(value, (list, dict)):
        return f"{kind} of {len(value)}"
    if value is None:
        return kind
    text = repr(value)
    return f"{kind} {text[:60] + '...' if len(text) > 60 else text}"


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python accepts them by default and would write them back.
    raise ValueError(f"{name} is not a JSON value")


def read_json(data: bytes, *, file: str, where: str | None = None) -> Any:
    """Decodes UTF-8 JSON (a leading BOM is allowed) with the nesting bounded by `MAX_JSON_DEPTH`.

    Every failure is a FormatError naming `file` and `where`: bad UTF-8 (with the byte offset),
    bad JSON (with line and column), NaN/Infinity, nesting too deep."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(file, where, f"not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise FormatError(file, where, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise FormatError(file, where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # NaN/Infinity, or an integer over Python's digit limit
        raise FormatError(file, where, f"not valid JSON: {exc}") from None
    if _depth_over(value, MAX_JSON_DEPTH):
        raise FormatError(file, where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _depth_over(value: Any, limit: int) -> bool:
    # Iterative, so checking a deep value cannot itself hit the recursion limit.
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
