"""What every importer does the same way: find the character, write diary entries by content id,
put the latest messages into a chat's window, show a progress bar."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from engine.character import list_characters
from engine.config import EngineConfig
from engine.factory import make_short_term_backend
from engine.paths import CharacterPaths, character_paths, validate_id
from engine.shortterm import WindowMessage
from engine.shortterm import DEFAULT_CHAT
from engine.stores.diary import DiaryEntry


def require_character(config: EngineConfig, character_id: str, *, error: type[Exception]) -> CharacterPaths:
    """The character's paths; `error` naming it and the characters there are when it does not exist."""
    paths = character_paths(config.data_dir, validate_id(character_id, kind="character id"))
    if not paths.character_file.is_file():
        have = list_characters(config.data_dir)
        raise error(f"no character {character_id!r} in {Path(config.data_dir) / 'agents'} "
                    f"(have: {', '.join(have) or 'none'}); create it first (kioku import card, or a character.yaml)")
    return paths


def append_diary(store: Any, user_id: str, entries: Sequence[DiaryEntry], *, progress: bool) -> tuple[int, int]:
    """Write the entries the diary does not hold yet (ids from content: `entry_id_for`); returns
    (written and indexed, already there)."""
    new = [e for e in entries if not store.has_entry(user_id, e.id)]
    store.append_many(user_id, new, progress=progress)
    return sum(1 for e in new if store.has_entry(user_id, e.id)), len(entries) - len(new)


def append_window(config: EngineConfig, paths: CharacterPaths, user_id: str, messages: Sequence[WindowMessage], *,
                  chat_id: str = DEFAULT_CHAT) -> tuple[int, int] | None:
    """Append to the chat's window the messages after the last one it holds already (ids from
    position or content); returns (appended, already there), or None, changing nothing, when the
    window holds none of them and later messages than the first (another history continued it)."""
    if not messages:
        return 0, 0
    backend = make_short_term_backend(config, paths)
    with backend.lock(user_id, chat_id=chat_id):
        state = backend.load(user_id, chat_id=chat_id)
        have = {m.id for m in state.messages}
        if state.brain.last_history_id:
            have.add(state.brain.last_history_id)
        last = max((i for i, m in enumerate(messages) if m.id in have), default=-1)
        new = list(messages[last + 1 :])
        if new and state.messages and last < 0 and _instant(state.messages[-1].at) > _instant(new[0].at):
            return None
        if new:
            state.brain.last_history_id = new[-1].id
            backend.append(user_id, new, state.brain, chat_id=chat_id)
    return len(new), len(messages) - len(new)


def _instant(iso: str) -> datetime:
    try:
        at = datetime.fromisoformat(iso)
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)  # an unreadable stamp counts as oldest
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def bar(items: Any, *, desc: str, unit: str, progress: bool, total: int | None = None) -> Any:
    """`items` with a progress bar when `progress` (tqdm, imported only then)."""
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=unit, total=total, leave=False)
