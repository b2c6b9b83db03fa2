"""Correcting the diary: find one turn's entry, rewrite its day file without it or with a new
version (forget / edit). The day file is rewritten atomically under the user's write lock, then
re-indexed, which updates the search index too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from engine.fileio import atomic_write_bytes
from engine.stores.diary.dayfile import DAY_FILE, load_day, split_items
from engine.stores.diary.entry import DiaryEntry, format_entry

if TYPE_CHECKING:
    from engine.stores.diary.store import DiaryStore
    from engine.stores.diary.userdiary import UserDiary


@dataclass(frozen=True)
class DiarySearchResult:
    """One turn found by `DiaryStore.search`."""

    turn_id: str
    at: datetime
    side: str
    """The half that matched best: "user" or "assistant"."""
    text: str
    """That half's text."""
    score: float
    why: str
    """"words", "meaning", "context" or "range"."""


@runtime_checkable
class DiaryAdminStore(Protocol):
    """What the admin surface (`engine.admin`: the inspector, the CLI, the memory API) reads and
    corrects of a diary, whichever backend holds it (`DiaryStore`, `PgDiaryStore`)."""

    def search(self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None,
               k: int = 20) -> list[DiarySearchResult]: ...

    def entries(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]: ...

    def get(self, user_id: str, turn_id: str) -> DiaryEntry | None: ...

    def get_many(self, user_id: str, turn_ids: Sequence[str]) -> dict[str, DiaryEntry]: ...

    def edit(self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None,
             tag: str | None = None) -> DiaryEntry: ...

    def forget(self, user_id: str, turn_id: str) -> int: ...

    def day_counts(self, user_id: str) -> list[tuple[date, int]]: ...

    def last_turn_time(self, user_id: str) -> datetime | None: ...

    def reindex(self, user_id: str) -> int: ...

    def user_ids(self) -> list[str]: ...


def find_entry(diary: "UserDiary", turn_id: str) -> DiaryEntry | None:
    return find_entries(diary, [turn_id]).get(turn_id)


def find_entries(diary: "UserDiary", turn_ids: Sequence[str]) -> dict[str, DiaryEntry]:
    """The entries of these turns, by id (one look at the files, one read per day file)."""
    wanted = {t.encode("utf-8") for t in turn_ids}
    if not wanted:
        return {}
    with diary.lock:
        diary.refresh(force=True)
        diary.index.flush()
        rows = np.flatnonzero(np.isin(diary.index.ids(), list(wanted)))
        return {e.id: e for e in diary.entries_for(rows) if e.id.encode("utf-8") in wanted}


def rewrite_entry(store: "DiaryStore", diary: "UserDiary", turn_id: str, replacement: DiaryEntry | None) -> int:
    """Remove (replacement None) or replace the entry `turn_id`; returns how many entries changed.
    Items of the file that do not parse are kept byte for byte (nothing the user wrote is lost)."""
    entry = find_entry(diary, turn_id)
    if entry is None:
        return 0
    name = f"{entry.local_day(store.tz):%Y-%m-%d}.yaml"
    path = diary.dir / name
    changed = 0
    with diary.lock, diary.write_lock:
        load = load_day(path, tz=store.tz, repair=True)
        if load.problems:
            # Keep the file's own text for everything but the entry: rebuild item by item.
            pieces = []
            for chunk, item in split_items(load.data, path=path, tz=store.tz):
                if item is not None and item.id == turn_id:
                    changed += 1
                    if replacement is not None:
                        pieces.append(format_entry(replacement).encode("utf-8"))
                else:
                    pieces.append(chunk)
            data = b"".join(pieces)
        else:
            out = []
            for e in load.entries:
                if e.id == turn_id:
                    changed += 1
                    if replacement is not None:
                        out.append(format_entry(replacement))
                else:
                    out.append(format_entry(e))
            data = "".join(out).encode("utf-8")
        if changed:
            atomic_write_bytes(path, data)
        diary.refresh(force=True)
    assert DAY_FILE.match(name)
    return changed
