"""Reading MoeChat's data folder: pure parsing, no writes, and never any pickle.

MoeChat keeps, under `<root>/data/agents/<char>/`:

- `history.yaml`: YAML lists of `{role, content}`, appended dump after dump;
- `memorys/<Y>-<m>-<d>.yaml` (not zero-padded): `yaml.safe_dump({epoch: {text_tag, msg}})`
  appended per turn, so the same integer key can repeat (two turns in one second);
- `core_mem.yml`: `{10-char id: {time, text}}`, maybe after comment lines;
- `data_base/*.yaml`: the world book (`keyword: description`); `data_base/tmp/` and every
  `.pkl` beside the files are derived caches and are ignored.

Files that are appended to are split into top-level chunks (a line at column 0 starts one) and
each chunk is parsed on its own, so duplicate keys survive (a YAML loader would keep only the
last) and a broken chunk loses only itself, reported with its file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

import yaml

from engine.fileio import BoundedLoader as _Loader

DAY_FILE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})\.ya?ml\Z")
_TIME_LINE = re.compile(r"^\s*(?:时间|時間|time)\s*[：:]\s*(.+?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Problem:
    """Something in the MoeChat folder that could not be imported."""

    where: str
    """`file:line` (or just the file when the whole file is concerned)."""
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True)
class MoeTurn:
    """One diary entry of a MoeChat day file."""

    at: datetime
    """Aware: the `时间：` line read in the import's zone, else the epoch key."""
    tag: str
    """MoeChat's `text_tag`, unchanged."""
    user: str
    assistant: str
    where: str
    """`file:line` of the entry, for the report."""


@dataclass(frozen=True)
class MoeFact:
    """One core-memory item of `core_mem.yml`."""

    id: str
    text: str
    learned_at: datetime | None
    """None when the item's time is missing or unreadable."""
    where: str


@dataclass(frozen=True)
class MoeMessage:
    """One message of `history.yaml`, with its position in the whole history."""

    index: int
    role: str
    content: str


@dataclass(frozen=True)
class Chunk:
    line: int
    """1-based line where the chunk starts."""
    text: str


def chunks(text: str) -> Iterator[Chunk]:
    """Split appended YAML into top-level pieces: a new one starts at every line that begins at
    column 0 and is not a comment, a document marker or a bare `[]`/`{}` (an empty dump)."""
    start: int | None = None
    buf: list[str] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        head = line[:1]
        top = bool(head) and not head.isspace() and head != "#"
        if top:
            if buf and start is not None:
                yield Chunk(start, "".join(buf))
            buf, start = [], None
            stripped = line.strip()
            if stripped in ("---", "...", "[]", "{}") or stripped.startswith(("--- ", "... ")):
                continue
            start = number
            buf = [line]
        elif start is not None:
            buf.append(line)
    if buf and start is not None:
        yield Chunk(start, "".join(buf))


def load_chunk(chunk: Chunk) -> Any:
    return yaml.load(chunk.text, Loader=_Loader)  # noqa: S506 - a safe loader


def describe_yaml_error(exc: Exception, chunk_line: int) -> tuple[int, str]:
    """(absolute line, problem) for a YAML error raised while parsing a chunk."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = chunk_line + (mark.line if mark is not None else 0)
        return line, exc.problem or exc.context or "invalid YAML"
    return chunk_line, f"invalid YAML: {exc}"


def _yaml_problem(exc: Exception, chunk_line: int) -> str:
    line, problem = describe_yaml_error(exc, chunk_line)
    return problem if line == chunk_line else f"{problem} (line {line})"


def read_text(path: Path) -> str:
    """UTF-8 text (a BOM dropped); invalid bytes raise ValueError naming the line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValueError(f"line {line}: invalid UTF-8 byte 0x{data[exc.start]:02x}") from None
    return text[1:] if text.startswith("\ufeff") else text


# -- config.yaml -------------------------------------------------------------------------------


def read_agent_section(root: Path) -> tuple[dict[str, Any], list[Problem]]:
    """MoeChat's `config.yaml` `Agent` section ({} when the file or the section is missing)."""
    path = root / "config.yaml"
    if not path.is_file():
        return {}, [Problem(str(path), "no config.yaml; the persona and switches are not imported")]
    try:
        data = yaml.load(read_text(path), Loader=_Loader)  # noqa: S506 - a safe loader
    except ValueError as exc:
        return {}, [Problem(str(path), str(exc))]
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc, 1)
        return {}, [Problem(f"{path}:{line}", problem)]
    agent = data.get("Agent") if isinstance(data, dict) else None
    if not isinstance(agent, dict):
        return {}, [Problem(str(path), "no `Agent` section; the persona and switches are not imported")]
    return agent, []


# -- diary day files ---------------------------------------------------------------------------


def day_files(folder: Path) -> list[tuple[date, Path]]:
    """`<Y>-<m>-<d>.yaml` files of a `memorys/` folder, by date (file system order is arbitrary)."""
    out: list[tuple[date, Path]] = []
    if not folder.is_dir():
        return out
    for path in folder.iterdir():
        m = DAY_FILE.match(path.name)
        if m and path.is_file():
            try:
                out.append((date(int(m[1]), int(m[2]), int(m[3])), path))
            except ValueError:
                continue
    return sorted(out)


def parse_day_file(
    path: Path, *, tz: tzinfo, user_names: tuple[str, ...], char_names: tuple[str, ...]
) -> tuple[list[MoeTurn], list[Problem]]:
    """Every entry of one MoeChat day file, in file order; broken entries become problems."""
    turns: list[MoeTurn] = []
    problems: list[Problem] = []
    for where, key, value in keyed_entries(path, "entry", "`<epoch seconds>: {text_tag, msg}`", problems):
        try:
            turns.append(_turn(key, value, tz=tz, where=where, user_names=user_names, char_names=char_names))
        except ValueError as exc:
            problems.append(Problem(where, f"entry skipped: {exc}"))
    return turns, problems


def keyed_entries(path: Path, what: str, shape: str, problems: list[Problem]) -> Iterator[tuple[str, Any, Any]]:
    """(file:line, key, value) of each top-level `key: value` entry of an appended MoeChat file,
    read one entry at a time so duplicate keys survive and a broken entry loses only itself."""
    for where, data in loaded_chunks(path, what, problems):
        if not isinstance(data, dict) or len(data) != 1:
            problems.append(Problem(where, f"{what} skipped: expected {shape}"))
            continue
        ((key, value),) = data.items()
        yield where, key, value


def loaded_chunks(path: Path, what: str, problems: list[Problem]) -> Iterator[tuple[str, Any]]:
    """(file:line, data) of each appended YAML chunk of `path`. A file that cannot be read, or a
    chunk that is not YAML (`<what> skipped: ...`), is recorded in `problems` and passed over."""
    try:
        text = read_text(path)
    except (OSError, ValueError) as exc:
        problems.append(Problem(str(path), str(exc)))
        return
    for chunk in chunks(text):
        where = f"{path}:{chunk.line}"
        try:
            data = load_chunk(chunk)
        except yaml.YAMLError as exc:
            problems.append(Problem(where, f"{what} skipped: {_yaml_problem(exc, chunk.line)}"))
            continue
        yield where, data


def _turn(
    key: Any, value: Any, *, tz: tzinfo, where: str, user_names: tuple[str, ...], char_names: tuple[str, ...]
) -> MoeTurn:
    if not isinstance(value, dict):
        raise ValueError(f"the value of key {key!r} is not a mapping with text_tag and msg")
    msg = value.get("msg")
    if not isinstance(msg, str):
        raise ValueError(f"key {key!r} has no `msg` text")
    time_text, user, assistant = split_msg(msg, user_names=user_names, char_names=char_names)
    at = None
    if time_text is not None:
        at = parse_local_time(time_text, tz)
    if at is None:
        try:
            at = datetime.fromtimestamp(int(key), tz)
        except (TypeError, ValueError, OverflowError, OSError):
            raise ValueError(f"no readable `时间：` line and the key {key!r} is not epoch seconds") from None
    tag = value.get("text_tag")
    return MoeTurn(at=at, tag="" if tag is None else str(tag), user=user, assistant=assistant, where=where)


def split_msg(msg: str, *, user_names: tuple[str, ...], char_names: tuple[str, ...]) -> tuple[str | None, str, str]:
    """(time text or None, user text, assistant text) of a MoeChat `msg`:
    `时间：…` / `{{user}}：…` / `{{char}}：…`, with `：` or `:`, placeholders or the real names."""
    lines = msg.split("\n")
    time_text = None
    if lines and (m := _TIME_LINE.match(lines[0])):
        time_text = m[1]
        lines = lines[1:]
    body = "\n".join(lines).strip("\n")
    user_re = _speaker(("{{user}}", *user_names))
    char_re = _speaker(("{{char}}", *char_names))
    um = re.match(user_re, body)
    if not um:
        raise ValueError(f"msg does not start with `{{{{user}}}}：` after the time line (got {body[:40]!r})")
    cm = re.search(r"\n" + char_re, body[um.end() :])
    if not cm:
        raise ValueError("msg has no `{{char}}：` line")
    user = body[um.end() : um.end() + cm.start()]
    assistant = body[um.end() + cm.end() :]
    return time_text, user.strip(), assistant.strip()


def _speaker(names: tuple[str, ...]) -> str:
    alts = "|".join(re.escape(n) for n in dict.fromkeys(n for n in names if n))
    return rf"(?:{alts})\s*[：:]\s?"


def parse_local_time(value: Any, tz: tzinfo) -> datetime | None:
    """`YYYY-MM-DD HH:MM:SS` (MoeChat writes the machine's local time) read in `tz`; None if unreadable."""
    if isinstance(value, datetime):
        at = value
    else:
        text = str(value).strip()
        at = None
        for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M:%S"):
            try:
                at = datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
        if at is None:
            try:
                at = datetime.fromisoformat(text)
            except ValueError:
                return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=tz)
    return at.astimezone(tz).replace(microsecond=0)


# -- core_mem.yml ------------------------------------------------------------------------------


def parse_core_file(path: Path, *, tz: tzinfo) -> tuple[list[MoeFact], list[Problem]]:
    """The facts of `core_mem.yml` in file order (comment lines are fine; a broken item loses only itself)."""
    facts: list[MoeFact] = []
    problems: list[Problem] = []
    for where, key, value in keyed_entries(path, "fact", "`<id>: {time, text}`", problems):
        if not isinstance(value, dict) or value.get("text") in (None, ""):
            problems.append(Problem(where, f"fact skipped: {key!r} has no `text`"))
            continue
        text_value = value["text"]
        if not isinstance(text_value, (str, int, float)):
            problems.append(Problem(where, f"fact skipped: the text of {key!r} is a {type(text_value).__name__}"))
            continue
        learned = parse_local_time(value.get("time"), tz) if value.get("time") is not None else None
        facts.append(MoeFact(str(key), str(text_value).strip(), learned, where))
    return facts, problems


# -- history.yaml ------------------------------------------------------------------------------


def parse_history(path: Path) -> tuple[list[MoeMessage], list[Problem]]:
    """Every message of the appended `history.yaml`, numbered in order over the whole file."""
    out: list[MoeMessage] = []
    problems: list[Problem] = []
    for where, data in loaded_chunks(path, "message", problems):
        items = data if isinstance(data, list) else [data]
        for item in items:
            if (
                not isinstance(item, dict)
                or item.get("role") not in ("user", "assistant", "system")
                or not isinstance(item.get("content"), str)
            ):
                problems.append(Problem(where, "message skipped: expected `- role: user|assistant` with `content`"))
                continue
            if item["role"] == "system":
                continue
            out.append(MoeMessage(len(out), item["role"], item["content"]))
    return out, problems


# -- the folder --------------------------------------------------------------------------------


def agent_folders(root: Path) -> list[Path]:
    folder = root / "data" / "agents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def world_book_files(folder: Path) -> list[Path]:
    """`data_base/*.yaml|*.yml` (not `tmp/`, not hidden files, never the `.pkl` caches)."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in (".yaml", ".yml")
    )
