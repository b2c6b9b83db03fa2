"""Turns that core memory still owes work to, kept next to the facts: `users/<id>/core_pending.json`.

Two kinds of turn wait here, never in `.cache/` (which `kioku reindex` deletes):

- `batch`: recorded, but `extract_every_turns` asks for more turns before an extraction;
- `llm`: the memory LLM failed on it (unreachable, timeout, unreadable reply twice); the offline
  rules already ran, and the LLM is asked again later, with a backoff, until it answers.

Nothing is dropped: no cap, no give-up after N failures. The file is rewritten atomically under
the user's lock (it is small: only turns not yet done). JSON with ASCII escapes, so any text a
chat carries (U+2028, lone surrogates) round-trips. An unreadable file is set aside with a
warning, never overwritten, and listed in the store's problems until a person looks at it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from engine.errors import DataFileError
from engine.fileio import atomic_write_text

log = logging.getLogger(__name__)

PENDING_FILE = "core_pending.json"
Wait = Literal["batch", "llm"]
_BACKOFF_FIRST = timedelta(seconds=30)
_BACKOFF_MAX = timedelta(hours=6)


@dataclass(frozen=True)
class PendingTurn:
    """A turn core memory has not finished with."""

    id: str
    at: datetime
    user: str
    assistant: str
    wait: Wait = "batch"
    """`batch`: waiting for more turns; `llm`: the memory LLM failed on it, rules already applied."""
    attempts: int = 0
    """Failed memory-LLM attempts so far."""
    error: str = ""
    """The last failure, for diagnostics."""
    next_try: datetime | None = None
    """Not before this time (exponential backoff from 30 s up to 6 h)."""

    def failed(self, error: str, now: datetime) -> PendingTurn:
        attempts = self.attempts + 1
        delay = min(_BACKOFF_FIRST * 2 ** (attempts - 1), _BACKOFF_MAX)
        return replace(self, wait="llm", attempts=attempts, error=error[:300], next_try=now + delay)

    def due(self, now: datetime) -> bool:
        return self.next_try is None or self.next_try <= now


def pending_path(user_root: Path) -> Path:
    return Path(user_root) / PENDING_FILE


def read_pending(path: Path) -> list[PendingTurn]:
    """The pending turns in `path` ([] when it does not exist). Raises DataFileError with the line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
            raise ValueError("expected an object with a 'turns' list")
        return [_from_dict(item) for item in data["turns"]]
    except json.JSONDecodeError as exc:
        raise DataFileError(f"unreadable pending turns: {exc.msg}", path=str(path), line=exc.lineno) from None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise DataFileError(f"unreadable pending turns: {exc}", path=str(path)) from None


def write_pending(path: Path, turns: list[PendingTurn]) -> None:
    if not turns:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        return
    data = {"turns": [_to_dict(t) for t in turns]}
    atomic_write_text(path, json.dumps(data, ensure_ascii=True, indent=1) + "\n")


def set_aside(path: Path, error: DataFileError, now: datetime) -> Path:
    """Move an unreadable pending file out of the way, keeping every byte of it."""
    aside = path.with_name(f"{path.name}.unreadable-{now:%Y%m%dT%H%M%S}")
    path.replace(aside)
    log.warning("core memory: %s; kept as %s", error, aside)
    return aside


def _to_dict(turn: PendingTurn) -> dict[str, Any]:
    out = asdict(turn)
    out["at"] = turn.at.isoformat()
    out["next_try"] = turn.next_try.isoformat() if turn.next_try else None
    return out


def _from_dict(item: Any) -> PendingTurn:
    if not isinstance(item, dict):
        raise ValueError(f"a pending turn must be an object, got {item!r:.80}")
    wait = item.get("wait", "batch")
    if wait not in ("batch", "llm"):
        raise ValueError(f"'wait' must be batch or llm (got {wait!r:.40})")
    at = datetime.fromisoformat(item["at"])
    if at.tzinfo is None:
        raise ValueError(f"'at' must carry a time zone (got {item['at']!r})")
    next_try = item.get("next_try")
    return PendingTurn(
        id=str(item["id"]),
        at=at,
        user=str(item["user"]),
        assistant=str(item.get("assistant", "")),
        wait=wait,
        attempts=int(item.get("attempts", 0)),
        error=str(item.get("error", "")),
        next_try=datetime.fromisoformat(next_try) if next_try else None,
    )
