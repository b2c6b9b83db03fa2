"""Parse and validate one world-book file into entries, or into errors that name file and line.

A file is YAML in one of two shapes, told apart by shape alone:

* simple (MoeChat): a mapping `关键词: 详细描述`; each pair becomes an entry whose only key is the
  keyword and whose injected text is `关键词: 详细描述`;
* extended: a list of entry mappings, either at the top level or under a single `entries:` key
  (see docs/world-book.md for every field).

The YAML is parsed once with line marks kept (the composed node tree), so every validation
error - pydantic's included - is reported at the line of the offending entry, field or key.
A file with any error yields no entries: the store keeps the file's last good version instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import regex
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import EngineError
from engine.fileio import UniqueKeyLoader, content_hash
from engine.stores.worldbook.matcher import fold, is_word_char
from engine.stores.worldbook.limits import DEFAULT_LIMITS, Limits, refuse_aliases_and_depth
from engine.stores.worldbook.model import DEFAULT_ORDER, BookError, Entry, Key

# libyaml when available: a 10,000-entry book parses several times faster than in pure Python.


class ExtendedEntry(BaseModel):
    """Schema of one entry in the extended format; unknown fields are errors (catches typos)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    keys: list[str] = []
    secondary_keys: list[str] = []
    logic: Literal["and_any", "and_all", "not_any", "not_all"] = "and_any"
    content: str
    constant: bool = False
    enabled: bool = True
    order: int = DEFAULT_ORDER
    case_sensitive: bool = False
    whole_words: bool = True
    semantic: bool = True
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    comment: str | None = None
    probability: int = Field(default=100, ge=0, le=100)
    group: list[str] = []
    group_weight: int = Field(default=100, ge=1)
    group_override: bool = False
    prevent_recursion: bool = False
    exclude_recursion: bool = False
    delay_until_recursion: bool = False
    scan_depth: int | None = Field(default=None, ge=0, le=1000)
    sticky: int = Field(default=0, ge=0)
    cooldown: int = Field(default=0, ge=0)
    delay: int = Field(default=0, ge=0)
    extra: dict[str, Any] = {}

    @field_validator("group", mode="before")
    @classmethod
    def _groups(cls, value: Any) -> Any:
        # SillyTavern writes several groups as one comma-separated string.
        if isinstance(value, str):
            return [g.strip() for g in value.split(",") if g.strip()]
        return value

    @field_validator("keys", "secondary_keys", mode="before")
    @classmethod
    def _one_key_is_a_list(cls, value: Any) -> Any:
        # `keys: 重庆` is what authors write for a single key; don't make them bracket it. A year
        # or a number (`keys: [2077]`) is a key too, not a type error.
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, list):
            return [str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in value]
        return value


FIELDS = tuple(ExtendedEntry.model_fields)

_REGEX_KEY = re.compile(r"^/(.+)/([A-Za-z]*)$", re.DOTALL)
_REGEX_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE, "u": 0, "g": 0}

@dataclass(frozen=True)
class ParsedFile:
    """The outcome of parsing one file: entries when it is valid, else errors (never both)."""

    path: Path
    digest: str
    """sha256 of the file's bytes; keys the vector cache and skips re-parsing touched files."""
    entries: tuple[Entry, ...]
    errors: tuple[BookError, ...]


def parse_file(path: Path, *, limits: Limits = DEFAULT_LIMITS) -> ParsedFile:
    try:
        with open(path, "rb") as f:
            # One byte past the cap is enough to know the file is too big (and where).
            data = f.read(limits.max_file_bytes + 1)
    except OSError as exc:
        return ParsedFile(Path(path), "", (), (BookError(str(path), None, f"cannot read the file: {exc}"),))
    return parse_bytes(data, path=Path(path), limits=limits)


def parse_bytes(data: bytes, *, path: Path, limits: Limits = DEFAULT_LIMITS) -> ParsedFile:
    """Parse a file's bytes (already read, so the caller can hash them before deciding to parse)."""
    digest = content_hash(data)
    if len(data) > limits.max_file_bytes:
        line = data[: limits.max_file_bytes].count(b"\n") + 1
        error = BookError(
            str(path), line,
            f"the file is larger than the limit of {limits.max_file_bytes:,} bytes (world_book.max_file_kb); "
            "the limit is crossed on this line: split the file",
        )
        return ParsedFile(path, digest, (), (error,))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        error = BookError(str(path), line, f"invalid UTF-8 byte 0x{data[exc.start]:02x} (save the file as UTF-8)")
        return ParsedFile(path, digest, (), (error,))
    if text.startswith("\ufeff"):
        text = text[1:]  # a BOM from Windows editors is not part of the YAML
    entries, errors = parse_text(text, file=str(path), name=path.name, limits=limits)
    return ParsedFile(path, digest, tuple(entries), tuple(errors))


def parse_text(
    text: str, *, file: str, name: str, limits: Limits = DEFAULT_LIMITS
) -> tuple[list[Entry], list[BookError]]:
    """Entries and errors of one file's text; `file` is reported in errors, `name` prefixes uids."""
    try:
        refused = refuse_aliases_and_depth(text)
        if refused is not None:
            return [], [BookError(file, *refused)]
        loader = UniqueKeyLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return [], [BookError(file, line, _yaml_problem(exc, text, line))]
    except yaml.YAMLError as exc:
        return [], [BookError(file, None, f"invalid YAML: {exc}")]
    except (EngineError, ValueError) as exc:
        # The shared loader may refuse a document itself (aliases, sizes); keep its file and line.
        return [], [BookError(file, getattr(exc, "line", None), str(exc))]
    parser = _FileParser(file, name, limits)
    if node is None or not data:
        parser.error(
            node.start_mark.line + 1 if node is not None else 1,
            "the file has no entries; write `keyword: description` lines or a list of entries",
        )
    elif isinstance(data, list):
        parser.extended(data, node)
    elif isinstance(data, dict) and isinstance(data.get("entries"), list):
        parser.wrapped(data, node)
    elif isinstance(data, dict):
        parser.simple(data, node)
    else:
        parser.error(
            node.start_mark.line + 1,
            f"the top level must be a mapping (keyword: description) or a list of entries, "
            f"got {_kind(data)} {data!r}",
        )
    # A file with any error contributes nothing; the store keeps its last good version.
    return (parser.entries if not parser.errors else []), parser.errors


def _yaml_problem(exc: yaml.MarkedYAMLError, text: str, line: int | None) -> str:
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem and exc.context not in problem:
        problem = f"{problem} ({exc.context})"
    lines = text.splitlines()
    # libyaml's messages do not say *why*; the two commonest causes deserve a hint.
    if line is not None and 0 < line <= len(lines) and "\t" in lines[line - 1]:
        problem += "; this line has a tab: YAML indentation must use spaces"
    elif "not allowed here" in problem or "mapping values are not allowed" in problem:
        problem += "; check the indentation of this line and the one above"
    return problem


def _kind(value: Any) -> str:
    return {list: "a list", dict: "a mapping", str: "text", bool: "a boolean", type(None): "nothing"}.get(
        type(value), f"a {type(value).__name__}"
    )


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


class _FileParser:
    """Collects entries and errors for one file; one method per shape."""

    def __init__(self, file: str, name: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.file = file
        self.name = name
        self.limits = limits
        self.entries: list[Entry] = []
        self.errors: list[BookError] = []

    def error(self, line: int | None, message: str) -> None:
        self.errors.append(BookError(self.file, line, message))

    def _uid(self) -> str:
        return f"{self.name}#{len(self.entries) + 1}"

    # -- simple format ---------------------------------------------------------------------
    def simple(self, data: dict[Any, Any], node: yaml.MappingNode) -> None:
        pairs = node.value if len(node.value) == len(data) else [(node, node)] * len(data)
        for (key, value), (key_node, value_node) in zip(data.items(), pairs):
            if isinstance(key, bool) or not isinstance(key, (str, int, float)) or not str(key).strip():
                self.error(_line(key_node), f"a keyword must be text, got {_kind(key)} {key!r}")
                continue
            keyword = str(key).strip()
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                hint = " (an extended entry list goes at the top level or under `entries:`)" if isinstance(
                    value, (list, dict)
                ) else ""
                self.error(
                    _line(value_node),
                    f"the description of {keyword!r} must be text, got {_kind(value)}{hint}",
                )
                continue
            description = str(value).strip()
            if not description:
                self.error(_line(value_node), f"the description of {keyword!r} is empty")
                continue
            if not self._size_ok(description, _line(value_node), f"the description of {keyword!r}"):
                continue
            made = self._key(keyword, _line(key_node))
            if made is not None:
                self.entries.append(
                    Entry(self._uid(), self.file, _line(key_node), (made,), f"{keyword}: {description}")
                )

    # -- extended format -------------------------------------------------------------------
    def wrapped(self, data: dict[Any, Any], node: yaml.MappingNode) -> None:
        entries_node = node
        for key_node, value_node in node.value:
            if key_node.value == "entries":
                entries_node = value_node
            elif key_node.value == "extra":
                # An imported lorebook's own fields (name, scan settings), kept for export.
                if not isinstance(data["extra"], dict):
                    self.error(_line(value_node), f"`extra` must be a mapping, got {_kind(data['extra'])}")
            else:
                self.error(
                    _line(key_node),
                    f"unknown top-level key {key_node.value!r}: a file with `entries:` holds that list "
                    "and, optionally, `extra:`",
                )
        self.extended(data["entries"], entries_node)

    def extended(self, items: list[Any], node: yaml.Node) -> None:
        nodes = node.value if isinstance(node, yaml.SequenceNode) and len(node.value) == len(items) else None
        if not items:
            self.error(_line(node), "the entry list is empty")
        for n, item in enumerate(items, 1):
            item_node = nodes[n - 1] if nodes else node
            if not isinstance(item, dict):
                self.error(
                    _line(item_node),
                    f"entry {n} must be a mapping with `keys:` and `content:`, got {_kind(item)}",
                )
                continue
            self._entry(n, item, item_node)

    def _entry(self, n: int, item: dict[Any, Any], node: yaml.Node) -> None:
        fields: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        if isinstance(node, yaml.MappingNode):
            fields = {str(k.value): (k, v) for k, v in node.value}
        start = _line(node)
        before = len(self.errors)
        try:
            spec = ExtendedEntry.model_validate(item)
        except ValidationError as exc:
            for err in exc.errors():
                self.error(*self._describe(n, err, fields, start))
            return
        keys = self._keys(spec.keys, fields.get("keys"), start)
        secondary = self._keys(spec.secondary_keys, fields.get("secondary_keys"), start)
        if not spec.keys and not spec.constant and spec.enabled:  # a switched-off entry may wait for its keys
            self.error(start, f"entry {n} has no keys: add `keys:` or set `constant: true`")
        if not spec.content.strip():
            self.error(_line(fields["content"][1]), f"entry {n} has empty `content`")
        else:
            self._size_ok(spec.content.strip(), _line(fields["content"][1]), f"entry {n}: `content`")
        if len(self.errors) > before:
            return
        self.entries.append(
            Entry(
                uid=self._uid(),
                file=self.file,
                line=start,
                keys=keys,
                content=spec.content.strip(),
                secondary_keys=secondary,
                group=tuple(spec.group),
                # logic, constant, enabled, order, ...: the switches are the same fields on both
                **spec.model_dump(exclude={"keys", "secondary_keys", "content", "group"}),
            )
        )

    def _describe(
        self, n: int, err: Any, fields: dict[str, tuple[yaml.Node, yaml.Node]], start: int
    ) -> tuple[int, str]:
        loc = err["loc"]
        name = str(loc[0]) if loc else ""
        line = start
        if name in fields:
            key_node, value_node = fields[name]
            line = _line(key_node)
            if len(loc) > 1 and isinstance(value_node, yaml.SequenceNode) and isinstance(loc[1], int):
                if loc[1] < len(value_node.value):
                    line = _line(value_node.value[loc[1]])
            elif err["type"] != "extra_forbidden":
                line = _line(value_node)
        if err["type"] == "extra_forbidden":
            return line, f"entry {n}: unknown field {name!r} (fields: {', '.join(FIELDS)})"
        if err["type"] == "missing":
            return line, f"entry {n}: missing field {name!r}"
        where = ".".join(str(p) for p in loc)
        return line, f"entry {n}: field {where!r}: {err['msg']} (got {err.get('input')!r})"

    def _keys(
        self, texts: list[str], nodes: tuple[yaml.Node, yaml.Node] | None, start: int
    ) -> tuple[Key, ...]:
        value_node = nodes[1] if nodes else None
        out: list[Key] = []
        for i, text in enumerate(texts):
            line = start
            if isinstance(value_node, yaml.SequenceNode) and i < len(value_node.value):
                line = _line(value_node.value[i])
            elif value_node is not None:
                line = _line(value_node)
            made = self._key(text, line)
            if made is not None:
                out.append(made)
        return tuple(out)

    def _size_ok(self, text: str, line: int, what: str) -> bool:
        if len(text) <= self.limits.max_entry_chars:
            return True
        self.error(line, f"{what} is {len(text):,} characters, over the limit of "
                         f"{self.limits.max_entry_chars:,} (world_book.max_entry_chars): split it into several entries")
        return False

    def _key(self, text: str, line: int) -> Key | None:
        """A plain key, or a `/pattern/flags` regex compiled now (once per file version)."""
        text = text.strip()
        if not text:
            self.error(line, "empty key")
            return None
        if len(text) > self.limits.max_key_chars:
            self.error(line, f"key {text[:40]!r}… is {len(text):,} characters, over the limit of {self.limits.max_key_chars}")
            return None
        found = _REGEX_KEY.match(text)
        if found is None:
            # Folding and edge checks are done here, once per file version, so rebuilding the
            # book-wide automaton after an edit is only a loop of `add_word`.
            return Key(text, None, fold(text), is_word_char(text[0]), is_word_char(text[-1]), line)
        pattern, letters = found.groups()
        flags = 0
        for letter in letters:
            if letter not in _REGEX_FLAGS:
                self.error(line, f"unknown regex flag {letter!r} in key {text!r} (use i, m, s or x)")
                return None
            flags |= _REGEX_FLAGS[letter]
        try:
            return Key(text, regex.compile(pattern, flags), line=line)
        except (regex.error, OverflowError, RecursionError, ValueError) as exc:
            self.error(line, f"bad regex in key {text!r}: {exc}")
            return None
