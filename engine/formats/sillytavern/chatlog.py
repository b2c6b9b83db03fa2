"""SillyTavern chat logs (`chats/<character>/<chat>.jsonl`), read into typed records. Pure: bytes in,
`ChatLog` out; what kioku does with them is `engine.importers.sillytavern_chat`.

The file is JSON Lines: a header (`user_name`, `character_name`, `create_date`, `chat_metadata`),
then one message a line (`name`, `is_user`, `is_system`, `send_date`, `mes`, `swipes`,
`swipe_id`, `swipe_info`, `extra`, `force_avatar`, ...). Read as SillyTavern 1.12.6 reads it:

- the text is the chosen swipe, `swipes[swipe_id]`, else `mes`;
- `send_date` is one of the `SEND_DATES` rows; a time written without a zone is the clock of the
  machine SillyTavern ran on, read in the `tz` given; a message without one takes its chosen
  swipe's (`swipe_info[swipe_id].send_date`), else it has none (`at` is None);
- system lines (`extra.type` one of SillyTavern's system message types, or `is_system` on a line
  by "SillyTavern System" / with the system or comment avatar) and narrator lines (`/sys`,
  `extra.type == "narrator"`) get role "system": they are never the user's words. `is_system` on
  a user or character line is SillyTavern's "hide from the prompt" (`/hide`): it keeps its role
  and is marked `hidden`. `extra.isSmallSys` is only a compact display and changes nothing.

A line that is not a JSON object, has no text or has a `send_date` in no known format is a
`FormatError` naming the file and the line; nothing of such a file should be imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, Literal

from engine.formats.sillytavern.errors import FormatError, describe, read_json

__all__ = ["ChatLog", "ChatMessage", "MAX_FILE_BYTES", "MAX_LINE_BYTES", "SEND_DATES", "SendDate",
           "parse_send_date", "read_chat"]

MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest chat file read (a year of daily role-play is tens of MB)."""
MAX_LINE_BYTES = 8 * 1024 * 1024
"""Largest single line (a message with an inlined image in `extra` stays under this)."""

Role = Literal["user", "character", "system"]

SYSTEM_NAME = "SillyTavern System"
"""`systemUserName` in public/script.js."""
SYSTEM_AVATARS = frozenset({"img/five.png", "img/quill.png"})
"""`system_avatar` and `comment_avatar` in public/script.js."""
SYSTEM_TYPES = frozenset({
    "help", "welcome", "group", "empty", "generic", "narrator", "comment", "slash_commands", "formatting",
    "hotkeys", "macros", "welcome_prompt", "assistant_note",
})
"""`system_message_types` in public/script.js (1.12.6)."""

_MONTHS = {name: i for i, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"), 1)}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9


# -- send_date -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SendDate:
    """One way SillyTavern has written `send_date`: a pattern, how it becomes an instant, an example."""

    name: str
    pattern: re.Pattern[str]
    build: Callable[[re.Match[str], tzinfo], datetime]
    example: str
    """As SillyTavern writes it."""
    writer: str
    """Which SillyTavern code writes it (and so which clock)."""


def _epoch_ms(m: re.Match[str], tz: tzinfo) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=int(m[0]))


def _meridiem(m: re.Match[str], tz: tzinfo) -> datetime:
    month = _MONTHS.get(m["mon"].lower())
    if month is None:
        raise ValueError(f"no month is called {m['mon']!r}")
    hour = int(m["h"]) % 12 + (12 if m["ap"].lower() == "pm" else 0)
    return datetime(int(m["y"]), month, int(m["d"]), hour, int(m["mi"]), tzinfo=tz)


def _humanized(m: re.Match[str], tz: tzinfo) -> datetime:
    # Milliseconds are written unpadded ("5ms", "05ms", "682ms"): the number is the milliseconds.
    ms = int(m["ms"] or 0)
    return datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), ms * 1000,
                    tzinfo=tz)


def _iso(m: re.Match[str], tz: tzinfo) -> datetime:
    frac = (m["frac"] or "")[:7]  # "." and at most 6 digits: Python keeps microseconds
    text = f"{m['date']}T{m['time']}{frac}{'+00:00' if m['zone'] in ('Z', 'z') else m['zone'] or ''}"
    at = datetime.fromisoformat(text)
    return at if at.tzinfo is not None else at.replace(tzinfo=tz)


SEND_DATES: tuple[SendDate, ...] = (
    SendDate(
        "epoch milliseconds", re.compile(r"\A\d{1,16}\Z"), _epoch_ms, "1718000000000",
        "Date.now(): TavernAI chats, branches and clones (`clone.send_date = Date.now()`); a number or digits",
    ),
    SendDate(
        "meridiem", re.compile(
            r"\A(?P<mon>[A-Za-z]+)\s+(?P<d>\d{1,2}),\s*(?P<y>\d{4})\s+(?P<h>\d{1,2}):(?P<mi>\d{1,2})\s*(?P<ap>[ap]m)\Z",
            re.IGNORECASE),
        _meridiem, "June 19, 2023 2:20pm",
        "getMessageTimeStamp() (RossAscends-mods.js, up to 1.13): every message sent in the browser; local clock",
    ),
    SendDate(
        "humanized", re.compile(
            r"\A(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})\s*@(?P<h>\d{1,2})h\s*(?P<mi>\d{1,2})m\s*(?P<s>\d{1,2})s"
            r"(?:\s*(?P<ms>\d{1,3})ms)?\Z"),
        _humanized, "2024-6-5 @14h 56m 50s 682ms",
        "humanizedISO8601DateTime() on the server (imported chats, create_date; '2024-6-5 @14h 56m 50s 682ms') and "
        "humanizedDateTime() in the browser (system lines in 2023, chat names; '2024-07-12@01h31m37s'); local clock",
    ),
    SendDate(
        "ISO 8601", re.compile(
            r"\A(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<time>\d{2}:\d{2}(?::\d{2})?)(?P<frac>\.\d{1,9})?"
            r"(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?\Z"),
        _iso, "2025-11-23T14:05:09.123Z",
        "getMessageTimeStamp() from SillyTavern PR #4806 (Date.toISOString(), UTC); without a zone it is local",
    ),
)
"""Every `send_date` form, in the order tried (the patterns do not overlap)."""


def parse_send_date(value: Any, tz: tzinfo) -> datetime:
    """The instant a `send_date` value names (aware); a zone-less time is local in `tz`.
    ValueError, naming the value and the known forms, when it is in none of `SEND_DATES`."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"send_date {value!r} is not text or a number")
    if isinstance(value, float):
        if value != value or value < 0:
            raise ValueError(f"send_date {value!r} is not a time")
        value = str(int(value))
    text = str(value).strip()
    for form in SEND_DATES:
        m = form.pattern.match(text)
        if m is None:
            continue
        try:
            return form.build(m, tz)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"send_date {value!r} ({form.name}) is not a real time: {exc}") from None
    known = "; ".join(f"{f.name} like {f.example!r}" for f in SEND_DATES)
    raise ValueError(f"send_date {value!r} is in no form SillyTavern writes ({known})")


# -- records ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatMessage:
    """One message line of a chat log."""

    line: int
    """1-based line of the file."""
    name: str
    """Who SillyTavern shows as the speaker."""
    role: Role
    """user | character | system (system, narrator and comment lines: never anyone's words)."""
    text: str
    """The chosen swipe: `swipes[swipe_id]` when there is one, else `mes`."""
    at: datetime | None
    """When it was sent (aware); None when the line has no send_date at all."""
    is_narrator: bool = False
    """A narrator line (`/sys`); its role is "system"."""
    system_kind: str = ""
    """SillyTavern's `extra.type` of a system line ("narrator", "comment", "help", ...), else ""."""
    hidden: bool = False
    """A user or character line hidden from SillyTavern's prompt (`is_system`, `/hide`)."""
    swipe_id: int = 0
    """Which swipe is the text (0 without swipes)."""
    swipes: int = 1
    """How many swipes the message had."""


@dataclass(frozen=True)
class ChatLog:
    """A whole chat log."""

    file: str
    """The file as named in errors."""
    user_name: str
    """The header's `user_name` ("" without a header)."""
    character_name: str
    """The header's `character_name`."""
    create_date: datetime | None
    """The header's `create_date`, when it is in a known form."""
    chat_metadata: Mapping[str, Any] = field(default_factory=dict)
    """The header's `chat_metadata`, as read."""
    messages: tuple[ChatMessage, ...] = ()
    """In file order."""


# -- reading ---------------------------------------------------------------------------------------


def read_chat(data: bytes, *, file: str, tz: tzinfo) -> ChatLog:
    """Parse a chat log; FormatError naming `file` and the line for the first line it cannot read."""
    if len(data) > MAX_FILE_BYTES:
        raise FormatError(file, None, f"the file is {len(data):,} bytes, over the limit of {MAX_FILE_BYTES:,}")
    header: dict[str, Any] | None = None
    messages: list[ChatMessage] = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        where = f"line {n}"
        if len(raw) > MAX_LINE_BYTES:
            raise FormatError(file, where, f"{len(raw):,} bytes, over the limit of {MAX_LINE_BYTES:,} for one line")
        item = _json_object(raw, file=file, where=where)
        if header is None and not messages and "mes" not in item and "swipes" not in item:
            header = item
            continue
        messages.append(_message(item, n, file=file, tz=tz))
    header = header or {}
    metadata = header.get("chat_metadata")
    return ChatLog(
        file=file,
        user_name=_text(header.get("user_name")),
        character_name=_text(header.get("character_name")),
        create_date=_optional_date(header.get("create_date"), tz),
        chat_metadata=dict(metadata) if isinstance(metadata, dict) else {},
        messages=tuple(messages),
    )


def _json_object(raw: bytes, *, file: str, where: str) -> dict[str, Any]:
    item = read_json(raw, file=file, where=where)
    if not isinstance(item, dict):
        raise FormatError(file, where, f"a message must be a JSON object, not {describe(item)}")
    return item


def _message(item: dict[str, Any], n: int, *, file: str, tz: tzinfo) -> ChatMessage:
    where = f"line {n}"
    swipes = item.get("swipes")
    chosen = item.get("swipe_id")
    count = len(swipes) if isinstance(swipes, list) else 1
    if (isinstance(swipes, list) and isinstance(chosen, int) and not isinstance(chosen, bool)
            and 0 <= chosen < len(swipes) and isinstance(swipes[chosen], str)):
        text, swipe = swipes[chosen], chosen
    else:
        text, swipe = item.get("mes"), 0
    if not isinstance(text, str):
        raise FormatError(file, where, f"the message has no text ('mes' is {type(text).__name__})")

    try:
        at = _send_date(item, swipe, tz)
    except ValueError as exc:
        raise FormatError(file, where, str(exc)) from None

    extra = item.get("extra") if isinstance(item.get("extra"), dict) else {}
    kind = extra.get("type") if isinstance(extra.get("type"), str) else ""
    is_system = item.get("is_system") is True
    is_user = item.get("is_user") is True
    name = _text(item.get("name"))
    system = kind in SYSTEM_TYPES or (
        is_system and not is_user and (name == SYSTEM_NAME or item.get("force_avatar") in SYSTEM_AVATARS))
    role: Role = "system" if system else "user" if is_user else "character"
    return ChatMessage(
        line=n, name=name, role=role, text=text, at=at,
        is_narrator=kind == "narrator", system_kind=kind if system else "",
        hidden=is_system and not system, swipe_id=swipe, swipes=max(count, 1),
    )


def _send_date(item: dict[str, Any], swipe: int, tz: tzinfo) -> datetime | None:
    value = item.get("send_date")
    if value is None or value == "":
        info = item.get("swipe_info")
        if isinstance(info, list) and 0 <= swipe < len(info) and isinstance(info[swipe], dict):
            value = info[swipe].get("send_date")
    if value is None or value == "":
        return None
    return parse_send_date(value, tz)


def _optional_date(value: Any, tz: tzinfo) -> datetime | None:
    if value is None or value == "" or value == 0:
        return None
    try:
        return parse_send_date(value, tz)
    except ValueError:
        return None  # the header's date is shown, never used for a message's time


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
