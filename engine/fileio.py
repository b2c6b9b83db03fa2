"""Durable file primitives: atomic replace, fsynced append, YAML with file:line errors."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.errors import DataFileError
from engine.tempfiles import clean_stale_temp_files, make_temp


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new file, never half.

    The temp file's name says which host and process wrote it, so leftovers of a killed writer
    are removed by a later write into the same folder (`engine.tempfiles`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temp_files(path.parent)
    fd, tmp = make_temp(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def append_text_durably(path: Path, text: str) -> None:
    """Append and fsync: the existing bytes are never rewritten, so a crash can only tear the tail."""
    append_bytes_durably(path, text.encode("utf-8"))


def append_bytes_durably(path: Path, data: bytes) -> None:
    """As `append_text_durably`, for bytes that may not be valid text (a torn tail set aside)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    with open(path, "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if created:
        _fsync_dir(path.parent)


def fsync_path(path: Path) -> None:
    """Flush a file (or folder) to disk; a missing one has nothing to flush."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    # A rename or a new file is durable only once its directory entry is; some file systems
    # cannot flush a folder, and the data itself is already flushed.
    try:
        fsync_path(folder)
    except OSError:
        pass


_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data: Any) -> str:
    # libyaml writes the same text as the pure-Python dumper, ~3x faster on big fact files.
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000)


def atomic_write_yaml(path: Path, data: Any) -> None:
    atomic_write_text(path, dump_yaml(data))


@dataclass(frozen=True)
class YAMLLimits:
    """Bounds on one YAML text, checked on its event stream before anything is built from it."""

    max_bytes: int
    """Longest file (bytes; for text already in memory, characters)."""
    max_depth: int = 32
    """Deepest nesting of lists and mappings (kioku's formats need 4; libyaml's composer
    overflows the C stack around 50,000 and Python's constructor recurses too)."""
    max_nodes: int = 250_000
    """Most scalars, lists and mappings: reading costs ~0.35 KB and ~5-10 µs per value whatever
    the file's size, so a dense 2 MB file of a million values would cost ~350 MB."""
    max_scalar_chars: int = 1_048_576
    """Longest single value (one diary text, one fact, one world-book entry)."""


# config.yaml, character.yaml, environment values.
SMALL_LIMITS = YAMLLimits(max_bytes=1 << 20, max_nodes=50_000)
# Diary day files, world-book files, history and summary files, MoeChat files (the loaders'
# default): a 5,000-entry world book is ~50k values.
DATA_FILE_LIMITS = YAMLLimits(max_bytes=16 << 20)
# core_mem.yml (parse_yaml's default): ~15 values per fact, so up to ~160k facts (~0.9 GB to read).
LARGE_LIMITS = YAMLLimits(max_bytes=64 << 20, max_nodes=2_500_000)


class YAMLLimitError(yaml.MarkedYAMLError):
    """The text uses an alias or exceeds a YAMLLimits bound; `problem_mark` is where."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_yaml(text: str | bytes, limits: YAMLLimits = DATA_FILE_LIMITS) -> None:
    """Walk the event stream (libyaml's parser is iterative; ~12% of a full load) and raise
    YAMLLimitError at the first alias or exceeded bound, before any node is composed.

    kioku's formats never need aliases: refusing them makes a file's memory linear in its size
    (a 600-byte file of nested aliases otherwise expands to gigabytes)."""
    if len(text) > limits.max_bytes:
        raise YAMLLimitError(
            f"the text is {len(text)} {'bytes' if isinstance(text, bytes) else 'characters'} long, "
            f"over the limit of {limits.max_bytes}",
            _start_mark(),
        )
    parser = _Base(text)
    try:
        _walk(parser, limits)
    except yaml.scanner.ScannerError as exc:
        if not is_libyaml_depth_error(exc):
            raise
        raise YAMLLimitError(f"nested deeper than {limits.max_depth} levels", exc.problem_mark) from None
    finally:
        parser.dispose()


def is_libyaml_depth_error(exc: yaml.YAMLError) -> bool:
    """libyaml's own nesting bound (1,000 levels, in the libyaml that PyYAML 6.0.4's wheels ship),
    which its scanner may hit before an event pass sees the level past kioku's far lower bound: the
    same problem, to be reported as kioku's own whichever check fires first."""
    return isinstance(exc, yaml.scanner.ScannerError) and "maximum nesting depth" in (exc.problem or "")


def _walk(parser: Any, limits: YAMLLimits) -> None:
    """`check_yaml`'s pass over the events."""
    depth = nodes = 0
    while (event := parser.get_event()) is not None:
        kind = event.__class__
        if kind is yaml.ScalarEvent:
            nodes += 1
            if len(event.value) > limits.max_scalar_chars:
                raise YAMLLimitError(
                    f"a value of {len(event.value)} characters, over the limit of {limits.max_scalar_chars}",
                    event.start_mark,
                )
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            nodes += 1
            depth += 1
            if depth > limits.max_depth:
                raise YAMLLimitError(f"nested deeper than {limits.max_depth} levels", event.start_mark)
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            depth -= 1
        elif kind is yaml.AliasEvent:
            raise YAMLLimitError(
                f"YAML aliases (*{event.anchor}) are not allowed in kioku files: write the value out "
                "(an alias can expand a small file into gigabytes)",
                event.start_mark,
            )
        if nodes > limits.max_nodes:
            raise YAMLLimitError(f"more than {limits.max_nodes} values", event.start_mark)


def _start_mark() -> Any:
    return yaml.Mark("<text>", 0, 0, 0, None, None)


class BoundedLoader(_Base):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml when available) every kioku YAML file is read with: the text
    is checked with `check_yaml` against `limits` before it is composed, so an alias or an
    exceeded bound raises YAMLLimitError (a MarkedYAMLError, with the line) and nothing is built.

    Use it wherever `yaml.load(text, Loader=...)` is called; `BoundedLoader.with_limits(...)`
    gives a loader with other bounds."""

    limits: YAMLLimits = DATA_FILE_LIMITS

    def __init__(self, stream: Any) -> None:
        if not isinstance(stream, (str, bytes)):
            stream = stream.read()
        self._source = stream
        self._checked = False
        self._bad: YAMLLimitError | None = None
        try:
            super().__init__(stream)
        except UnicodeEncodeError as exc:
            # A lone surrogate (text decoded with surrogateescape, e.g. from the environment);
            # raised when the loader is used, like every other problem, with its line.
            line = stream[: exc.start].count("\n")
            self._bad = YAMLLimitError(
                f"character U+{ord(stream[exc.start]):04X} is not valid text (a lone surrogate)",
                yaml.Mark("<text>", exc.start, line, 0, None, None),
            )
            super().__init__("")

    def _check(self) -> None:
        if self._bad is not None:
            raise self._bad
        if not self._checked:
            check_yaml(self._source, self.limits)
            self._checked = True
            self._source = None

    def get_single_node(self) -> Any:
        self._check()
        return super().get_single_node()

    def check_node(self) -> Any:
        self._check()
        return super().check_node()

    def get_node(self) -> Any:
        self._check()
        return super().get_node()

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        # PyYAML's own constructors raise plain ValueError for `2026-02-30` (a day that does not
        # exist) and AttributeError for `!!timestamp x`; make every bad value a YAML error with its line.
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, OverflowError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"unreadable value {node.value!r:.80}: {exc}", node.start_mark
            ) from None

    @classmethod
    def with_limits(cls, limits: YAMLLimits) -> type["BoundedLoader"]:
        return _with_limits(cls, limits)


@functools.cache
def _with_limits(cls: type[BoundedLoader], limits: YAMLLimits) -> type[BoundedLoader]:
    return type(f"{cls.__name__}_{limits.max_bytes}", (cls,), {"limits": limits})


class UniqueKeyLoader(BoundedLoader):
    """BoundedLoader that also refuses duplicate mapping keys instead of silently keeping the last one."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be text, got {type(key).__name__}", key_node.start_mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(
    text: str, *, path: Path | str, unique_keys: bool = True, limits: YAMLLimits = LARGE_LIMITS
) -> Any:
    """Parse YAML text within `limits`; any problem (syntax, alias, size, depth, duplicate key)
    becomes a DataFileError naming the file and the 1-based line."""
    loader = (UniqueKeyLoader if unique_keys else BoundedLoader).with_limits(limits)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - bounded safe loaders
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise DataFileError(problem, path=str(path), line=line) from exc
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1 if isinstance(exc.position, int) else None
        char = exc.character
        code = char if isinstance(char, int) else ord(char[:1] or "\0")
        raise DataFileError(f"character U+{code:04X} is not allowed in YAML ({exc.reason})", path=str(path), line=line) from exc
    except yaml.YAMLError as exc:
        raise DataFileError(f"invalid YAML: {' '.join(str(exc).split())}", path=str(path)) from exc


def read_bytes_capped(path: Path, *, max_bytes: int = LARGE_LIMITS.max_bytes) -> bytes:
    """The file's bytes; DataFileError naming the file when it is larger than `max_bytes`
    (checked before reading, and again on what was read, in case it grew meanwhile)."""
    path = Path(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise DataFileError(f"the file is {size} bytes, over the limit of {max_bytes}", path=str(path))
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise DataFileError(f"the file is over the limit of {max_bytes} bytes", path=str(path))
    return data


def read_text_strict(path: Path, *, max_bytes: int = LARGE_LIMITS.max_bytes) -> str:
    """Read UTF-8 text of at most `max_bytes`; invalid bytes are reported with the file and line."""
    data = read_bytes_capped(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFileError(
            f"invalid UTF-8 byte 0x{data[exc.start]:02x}", path=str(path), line=line
        ) from exc


def load_yaml_file(path: Path, *, unique_keys: bool = True, limits: YAMLLimits = LARGE_LIMITS) -> Any:
    text = read_text_strict(path, max_bytes=limits.max_bytes)
    return parse_yaml(text, path=path, unique_keys=unique_keys, limits=limits)


def content_hash(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()
