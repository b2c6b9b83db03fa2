"""SillyTavern chat logs (`chats/<character>/<chat>.jsonl`): a header line, then one message a line
(`name`, `is_user`, `is_system`, `send_date`, `mes`, `swipes`, `swipe_id`, `extra`).

`send_date` has been written in several ways over SillyTavern's versions (`SEND_DATES`, each with
its example); a time without a zone is the clock of the machine SillyTavern ran on, given as `tz`.
The chosen swipe is the message (`swipes[swipe_id]`); system and narrator lines are never the
user's words. A line kioku cannot read is an error naming the file and line: nothing is imported
from a file with one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from typing import Any, Callable, Literal

from engine.formats.sillytavern.problems import FormatError

MAX_BYTES = 256 * 1024 * 1024
MAX_LINE = 4 * 1024 * 1024
Role = Literal["user", "character", "system"]
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                        "september", "october", "november", "december"), 1)}


@dataclass(frozen=True)
class SendDate:
    pattern: re.Pattern[str]
    build: Callable[[re.Match[str], tzinfo], datetime]
    example: str


def _local(tz: tzinfo, y: str, mo: str, d: str, h: str, mi: str, s: str = "0", ms: str = "0") -> datetime:
    return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int(ms.ljust(3, "0")[:3]) * 1000, tzinfo=tz)


def _meridiem(m: re.Match[str], tz: tzinfo) -> datetime:
    hour = int(m["h"]) % 12 + (12 if m["ap"].lower() == "pm" else 0)
    month = _MONTHS.get(m["mon"].lower())
    if month is None:
        raise ValueError(f"unknown month {m['mon']!r}")
    return _local(tz, m["y"], str(month), m["d"], str(hour), m["mi"])


def _iso(m: re.Match[str], tz: tzinfo) -> datetime:
    at = datetime.fromisoformat(m[0].replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=tz)


SEND_DATES: tuple[SendDate, ...] = (
    SendDate(re.compile(r"\A\d{9,15}\Z"),
             lambda m, tz: datetime.fromtimestamp(int(m[0]) / 1000, timezone.utc), "1718000000000 (epoch ms)"),
    SendDate(re.compile(r"\A(?P<mon>[A-Za-z]+) (?P<d>\d{1,2}), (?P<y>\d{4}) (?P<h>\d{1,2}):(?P<mi>\d{2}) ?(?P<ap>am|pm)\Z", re.I),
             _meridiem, "June 19, 2023 2:20pm (1.12's getMessageTimeStamp, local)"),
    SendDate(re.compile(r"\A(\d{4})-(\d{1,2})-(\d{1,2}) ?@(\d{1,2})h ?(\d{1,2})m ?(\d{1,2})s(?: ?(\d{1,3})ms)?\Z"),
             lambda m, tz: _local(tz, *(g for g in m.groups() if g is not None)),
             "2024-6-5 @14h 56m 50s 682ms / 2024-7-12@01h31m37s (humanized, local)"),
    SendDate(re.compile(r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?\Z"),
             _iso, "2024-06-05T14:56:50.682Z (ISO 8601)"),
)


def parse_send_date(value: Any, tz: tzinfo) -> datetime:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    for form in SEND_DATES:
        m = form.pattern.match(text)
        if m:
            try:
                return form.build(m, tz)
            except (ValueError, OverflowError, OSError) as exc:
                raise ValueError(f"send_date {value!r} is not a real time ({exc})") from None
    raise ValueError(f"send_date {value!r} is in no format SillyTavern writes "
                     f"({'; '.join(f.example for f in SEND_DATES)})")


@dataclass(frozen=True)
class ChatMessage:
    line: int
    name: str
    role: Role
    text: str
    """The chosen swipe."""
    at: datetime


@dataclass(frozen=True)
class ChatLog:
    file: str
    user_name: str
    character_name: str
    messages: tuple[ChatMessage, ...]


def read_chat(data: bytes, *, file: str, tz: tzinfo) -> ChatLog:
    if len(data) > MAX_BYTES:
        raise FormatError(file, None, f"the file is {len(data):,} bytes, over the limit of {MAX_BYTES:,}")
    lines = data.split(b"\n")
    header: dict[str, Any] = {}
    messages: list[ChatMessage] = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE:
            raise FormatError(file, f"line {n}", f"{len(raw):,} bytes, over the limit of {MAX_LINE:,} for one message")
        try:
            item = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise FormatError(file, f"line {n}", f"not a JSON object: {exc}") from None
        if not isinstance(item, dict):
            raise FormatError(file, f"line {n}", "not a JSON object")
        if not header and not messages and "mes" not in item:
            header = item
            continue
        messages.append(_message(item, n, file=file, tz=tz))
    return ChatLog(file, str(header.get("user_name") or ""), str(header.get("character_name") or ""), tuple(messages))


def _message(item: dict[str, Any], n: int, *, file: str, tz: tzinfo) -> ChatMessage:
    text = item.get("mes")
    swipes, chosen = item.get("swipes"), item.get("swipe_id")
    if isinstance(swipes, list) and isinstance(chosen, int) and not isinstance(chosen, bool) and 0 <= chosen < len(swipes):
        text = swipes[chosen]
    if not isinstance(text, str):
        raise FormatError(file, f"line {n}", f"the message text must be text, got {type(text).__name__}")
    try:
        at = parse_send_date(item.get("send_date"), tz)
    except ValueError as exc:
        raise FormatError(file, f"line {n}", str(exc)) from None
    extra = item.get("extra") if isinstance(item.get("extra"), dict) else {}
    if item.get("is_system") is True or extra.get("type") == "narrator" or extra.get("isSmallSys"):
        role: Role = "system"
    else:
        role = "user" if item.get("is_user") is True else "character"
    return ChatMessage(n, str(item.get("name") or ""), role, text, at)
