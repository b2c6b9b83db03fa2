"""Reading, appending to and repairing one day file (`memorys/YYYY-MM-DD.yaml`).

A day file is a YAML list; each entry starts with `- ` at column 0 (hand edits may use any YAML).
Appends add one item in one write and fsync it, never rewriting the existing bytes, so a crash can
only tear the last item. On load that torn tail is detected (the whole file fails to parse, or
its last item misses fields), moved to `YYYY-MM-DD.yaml.corrupt`, and the rest of the day loads.
A bad item in the middle (a hand-edit mistake) is not moved: it is reported with its file and
line and skipped, and the file is left as the user wrote it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

import yaml

from engine.errors import DataFileError
from engine.fileio import append_bytes_durably, append_text_durably, atomic_write_bytes
from engine.stores.diary.entry import DiaryEntry, EntryError, entry_from_item, format_entry

log = logging.getLogger(__name__)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster
_ITEM_START = re.compile(rb"^- ", re.MULTILINE)
DAY_FILE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.yaml$")


@dataclass
class DayLoad:
    """What one day file held."""

    entries: list[DiaryEntry]
    """The good entries, in file order."""
    data: bytes
    """The file's bytes as read (after any repair)."""
    problems: list[str] = field(default_factory=list)
    """Items that were skipped or set aside, each naming the file and line."""


def day_file_name(day) -> str:
    return f"{day:%Y-%m-%d}.yaml"


def corrupt_path(path: Path) -> Path:
    return path.with_name(path.name + ".corrupt")


def parse_day_bytes(data: bytes, *, path: Path, tz: tzinfo) -> tuple[list[DiaryEntry], list[str], int | None]:
    """Parse a day file's bytes: (entries, problems, torn_offset).

    `torn_offset` is where an incomplete last item starts (None when the tail is whole). Items in
    the middle that do not parse are skipped and named in `problems`.
    """
    if not data.strip():
        return [], [], None
    fast = _parse_whole(data, path=path, tz=tz)
    if fast is not None:
        return fast, [], None
    # Slow path: item by item, so one bad item costs only itself.
    starts = [m.start() for m in _ITEM_START.finditer(data)]
    if not starts or starts[0] != 0:
        head_end = starts[0] if starts else len(data)
        if data[:head_end].strip() and not _only_comments(data[:head_end]):
            if not starts:
                # Not a list of items at all: nothing can be salvaged safely; say where it breaks.
                _raise_parse_error(data, path)
            starts.insert(0, 0)
    entries: list[DiaryEntry] = []
    problems: list[str] = []
    torn: int | None = None
    bounds = list(zip(starts, starts[1:] + [len(data)]))
    for n, (a, b) in enumerate(bounds):
        chunk = data[a:b]
        line = data[:a].count(b"\n") + 1
        try:
            item = _load_items(chunk)
            if not isinstance(item, list) or len(item) != 1:
                raise EntryError("expected exactly one list item")
            entries.append(entry_from_item(item[0], tz=tz))
        except (yaml.YAMLError, EntryError, UnicodeDecodeError) as exc:
            reason = _describe(exc)
            if n == len(bounds) - 1:
                torn = a
                problems.append(f"{path}:{line}: incomplete last entry (a write cut short) left out ({reason})")
            else:
                problems.append(f"{path}:{line}: entry skipped ({reason})")
    return entries, problems, torn


def split_items(data: bytes, *, path: Path, tz: tzinfo) -> list[tuple[bytes, DiaryEntry | None]]:
    """The file cut at each `- ` item start: (the item's bytes, its entry or None when it does not
    parse), so a rewrite can keep the items it does not touch byte for byte."""
    starts = [m.start() for m in _ITEM_START.finditer(data)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    out: list[tuple[bytes, DiaryEntry | None]] = []
    for a, b in zip(starts, starts[1:] + [len(data)]):
        chunk = data[a:b]
        try:
            item = _load_items(chunk)
            entry = entry_from_item(item[0], tz=tz) if isinstance(item, list) and len(item) == 1 else None
        except (yaml.YAMLError, EntryError, UnicodeDecodeError):
            entry = None
        out.append((chunk, entry))
    return out


_FAST_ENTRY = re.compile(
    r'- id: ("(?:[^"\\\n]|\\.)*")\n  time: ("(?:[^"\\\n]|\\.)*")\n  tag: ("(?:[^"\\\n]|\\.)*")\n'
    r'  user: ("(?:[^"\\\n]|\\.)*")\n  assistant: ("(?:[^"\\\n]|\\.)*")\n'
    r'(?:  dates: (\[[^\n]*\])\n)?'
)


def _parse_fast(text: str, tz: tzinfo) -> list[DiaryEntry] | None:
    """Files exactly as `format_entry` writes them, read with json (~10x faster than YAML).
    None at the first byte that is not in that form: the caller then parses the file as YAML."""
    out: list[DiaryEntry] = []
    pos = 0
    match = _FAST_ENTRY.match
    try:
        while pos < len(text):
            m = match(text, pos)
            if m is None:
                return None
            id_, at, tag, user, reply, dates = (None if g is None else json.loads(g) for g in m.groups())
            item = {"id": id_, "time": at, "tag": tag, "user": user, "assistant": reply, "dates": dates}
            out.append(entry_from_item(item, tz=tz))
            pos = m.end()
    except (ValueError, EntryError):
        return None
    return out


def _parse_whole(data: bytes, *, path: Path, tz: tzinfo) -> list[DiaryEntry] | None:
    try:
        fast = _parse_fast(data.decode("utf-8"), tz)
    except UnicodeDecodeError:
        return None
    if fast is not None:
        return fast
    try:
        items = _load_items(data)
    except (yaml.YAMLError, UnicodeDecodeError):
        return None
    if items is None:
        return []
    if not isinstance(items, list):
        raise DataFileError(
            f"a day file must be a YAML list of entries (got a {type(items).__name__})", path=str(path), line=1
        )
    try:
        return [entry_from_item(item, tz=tz) for item in items]
    except EntryError:
        return None


def _load_items(data: bytes) -> Any:
    return yaml.load(data.decode("utf-8"), Loader=_Loader)  # noqa: S506 - a safe loader


def _only_comments(data: bytes) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith(b"#") for ln in data.splitlines())


def _describe(exc: Exception) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        return exc.problem or exc.context or "invalid YAML"
    if isinstance(exc, UnicodeDecodeError):
        return "invalid UTF-8"
    return str(exc)


def _raise_parse_error(data: bytes, path: Path) -> None:
    try:
        _load_items(data)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise DataFileError(_describe(exc), path=str(path), line=mark.line + 1 if mark else None) from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DataFileError(_describe(exc), path=str(path)) from exc
    raise DataFileError("a day file must be a YAML list of entries", path=str(path), line=1)


def load_day(path: Path, *, tz: tzinfo, repair: bool = True) -> DayLoad:
    """Load a day file; with `repair`, a torn tail is moved to the `.corrupt` file first.

    The repair rewrites the file atomically with its good prefix, and only if the file has not
    grown since it was read (another writer may be mid-append)."""
    data = path.read_bytes()
    entries, problems, torn = parse_day_bytes(data, path=path, tz=tz)
    for problem in problems:
        log.warning("diary: %s", problem)
    if torn is not None and repair:
        data = set_aside_tail(path, data, torn)
    return DayLoad(entries, data, problems)


def set_aside_tail(path: Path, data: bytes, offset: int) -> bytes:
    """Move `data[offset:]` to the `.corrupt` file and cut the day file back to `data[:offset]`."""
    if path.stat().st_size != len(data):
        return data  # changed under us; the next load looks again
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    tail = data[offset:]
    header = f"# set aside from {path.name} at {stamp} ({len(tail)} bytes)\n".encode()
    append_bytes_durably(corrupt_path(path), header + (tail if tail.endswith(b"\n") else tail + b"\n"))
    good = data[:offset]
    atomic_write_bytes(path, good)
    return good


def append_entry(path: Path, entry: DiaryEntry) -> int:
    """Append one entry (one write, fsynced); returns the file size afterwards."""
    append_text_durably(path, format_entry(entry))
    return path.stat().st_size


def prepare_for_append(path: Path, *, tz: tzinfo) -> None:
    """Make sure the next append lands on a clean line after whole entries: set aside a torn tail
    left by a crash, and end a hand-edited file that lacks a final newline."""
    if not path.exists():
        return
    load = load_day(path, tz=tz, repair=True)
    if load.data and not load.data.endswith(b"\n"):
        append_text_durably(path, "\n")
