"""The short-term state of one chat (window messages + summary brain) and how it is written down.

Shared by both backends: one message per line as JSON (`lines.dumps_line`, so U+2028 or a lone
surrogate in a message cannot split or break a line), and the brain's fields checked by type with
the file and line named.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

import yaml

from engine.errors import DataFileError
from engine.fileio import BoundedLoader as _Loader  # aliases and oversized values refused
from engine.fileio import dump_yaml, parse_yaml
from engine.shortterm.lines import dumps_line
from engine.shortterm.summarizer import SummaryUpdate
from engine.tokens import count_tokens

_SURROGATE = re.compile("[\ud800-\udfff]")
_ID_FIELDS = ("last_history_id", "summarized_through", "updated_at")


@dataclass(frozen=True)
class WindowMessage:
    """One message of the short-term window."""

    id: str
    """`<turn id>:u` or `<turn id>:a` for recorded turns; imported messages have their own ids."""
    role: str
    content: str
    at: str
    """ISO time with UTC offset."""
    tokens: int
    """cl100k_base count, stored with the message so it is counted once."""

    def to_openai(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class Brain:
    """The rolling-summary state of one chat (BrainMemory's fields)."""

    historical_summary: str = ""
    last_history_id: str | None = None
    """Id of the last message appended (re-derived from the window on load)."""
    summarized_through: str | None = None
    """Id of the last message folded into the summary; older messages leave the window."""
    updated_at: str | None = None
    is_dirty: bool = field(default=False, compare=False)
    """Changed since loaded; only a changed brain is written (BrainMemory's is_dirty)."""


@dataclass
class State:
    messages: list[WindowMessage]
    brain: Brain
    problems: tuple[str, ...] = ()
    """Unreadable lines skipped, an unreadable summary left out: shown in the prompt's diagnostics."""
    brain_ok: bool = True
    """False when the stored summary could not be read: it is left out of prompts, and no fold
    overwrites it (a person must look at it first)."""


@dataclass(frozen=True)
class Fold:
    """A summary fold computed outside any lock, to apply only if its base is unchanged."""

    evicted_ids: tuple[str, ...]
    """The ids of the oldest window messages it folded, in order; they must still head the window."""
    base_summary: str
    base_through: str | None
    """The summary and `summarized_through` it was computed from."""
    brain: Brain
    """The new brain (summary, summarized_through, updated_at)."""
    update: SummaryUpdate
    """How the summary was written (LLM or offline fallback, and why)."""


def reconcile(messages: list[WindowMessage], brain: Brain, problems: tuple[str, ...] = (), brain_ok: bool = True) -> State:
    """The state as stored, healed in memory: a crash between writing the summary and rewriting the
    window leaves messages already folded into the summary; they are dropped here (the file is
    rewritten by the next fold, never by a reader)."""
    return state_of(unfolded(messages, brain), brain, problems, brain_ok)


def unfolded(messages: list[WindowMessage], brain: Brain) -> list[WindowMessage]:
    """`messages` without those already folded into the summary (see `reconcile`)."""
    if brain.summarized_through is not None:
        ids = [m.id for m in messages]
        if brain.summarized_through in ids:
            return messages[ids.index(brain.summarized_through) + 1 :]
    return messages


def state_of(messages: list[WindowMessage], brain: Brain, problems: tuple[str, ...] = (), brain_ok: bool = True) -> State:
    """The state of a window already without its folded messages (`unfolded`)."""
    if messages:
        brain.last_history_id = messages[-1].id
    return State(messages, brain, problems, brain_ok)


def message_from_dict(d: dict) -> WindowMessage:
    """Raises KeyError / TypeError / ValueError for a dict that is not a message."""
    if not isinstance(d["content"], str) or not isinstance(d["role"], str):
        raise TypeError("role and content must be text")
    content = d["content"]
    # A hand-written line may lack the stored count; counting it here keeps budgets honest.
    tokens = int(d.get("tokens") or 0) or count_tokens(content)
    return WindowMessage(id=str(d["id"]), role=d["role"], content=content, at=str(d.get("at", "")), tokens=tokens)


def message_json(m: WindowMessage) -> str:
    return dumps_line(asdict(m))


def message_to_line(m: WindowMessage) -> str:
    # JSON is valid YAML flow style; one line per message keeps appends atomic in effect.
    return "- " + message_json(m) + "\n"


def parse_line(line: str) -> WindowMessage | None:
    """One line of history.yaml (without its newline), or None if it is not a message."""
    stripped = line.strip()
    d = None
    if stripped.startswith("- {"):
        # What we write is JSON; json is ~20x faster than YAML on long histories.
        try:
            d = json.loads(stripped[2:])
        except ValueError:
            d = None
    if d is None:
        # A hand-edited line may be any YAML flow mapping.
        try:
            data = yaml.load(line, Loader=_Loader)  # noqa: S506 - safe loader
        except yaml.YAMLError:
            return None
        if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
            return None
        d = data[0]
    if not isinstance(d, dict):
        return None
    try:
        return message_from_dict(d)
    except (KeyError, TypeError, ValueError):
        return None


# -- the brain --------------------------------------------------------------------------------


def brain_to_dict(brain: Brain) -> dict[str, object]:
    data: dict[str, object] = {"historical_summary": brain.historical_summary}
    if _SURROGATE.search(brain.historical_summary):
        # YAML cannot hold a lone surrogate (libyaml refuses even the escape). The readable field
        # shows U+FFFD; the exact text rides along as a JSON string, used while the two agree.
        data["historical_summary"] = _SURROGATE.sub("\ufffd", brain.historical_summary)
        data["historical_summary_json"] = dumps_line(brain.historical_summary)
    data.update({k: getattr(brain, k) for k in _ID_FIELDS})
    return data


def brain_to_yaml(brain: Brain) -> str:
    return dump_yaml(brain_to_dict(brain))


def brain_from_dict(data: object, *, path: str, text: str = "") -> Brain:
    """A Brain from parsed data; a wrong type is a DataFileError naming the field's file and line."""
    if data is None:
        return Brain()
    if not isinstance(data, dict):
        raise DataFileError(
            f"expected a mapping of summary fields (historical_summary: ...), got {_kind(data)}", path=path, line=1
        )
    summary = data.get("historical_summary")
    if summary is None:
        summary = ""
    if not isinstance(summary, str):
        raise DataFileError(
            f"historical_summary must be text, got {_kind(summary)} {_short(summary)}",
            path=path, line=_line_of(text, "historical_summary"),
        )
    exact = data.get("historical_summary_json")
    if isinstance(exact, str):
        try:
            decoded = json.loads(exact)
        except ValueError:
            decoded = None
        # Used only while the readable field is what we wrote (not edited by hand since).
        if isinstance(decoded, str) and _SURROGATE.sub("\ufffd", decoded) == summary:
            summary = decoded
    values: dict[str, str | None] = {}
    for key in _ID_FIELDS:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (str, int, type(None))):
            raise DataFileError(
                f"{key} must be text or empty, got {_kind(value)} {_short(value)}", path=path, line=_line_of(text, key)
            )
        values[key] = None if value is None else str(value)
    return Brain(historical_summary=summary, **values)


def parse_brain(text: str, *, path: str) -> Brain:
    return brain_from_dict(parse_yaml(text, path=path), path=path, text=text)


def _line_of(text: str, key: str) -> int | None:
    m = re.search(rf"^[ \t]*['\"]?{re.escape(key)}['\"]?[ \t]*:", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else (1 if text else None)


def _kind(value: object) -> str:
    return {list: "a list", dict: "a mapping", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), f"a {type(value).__name__}"
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
