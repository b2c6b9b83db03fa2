"""The library's administration API: what the CLI, the HTTP memory API and the inspector page call
to look at and correct one character's memory. Typed results, errors from `engine.errors`.

    with MemoryOrchestrator.from_config("xiaoyue") as orch:
        for user in orch.admin.users():
            print(user.id, user.turns, user.facts)
        orch.admin.facts.add("linzhou", "喜欢喝乌龙茶")
        orch.admin.search_diary("linzhou", "吉他")

Each store keeps its own typed interface (`CoreAdmin` for facts, the diary's search / edit /
forget, the world book's entries); this module joins them per character and adds what spans
stores (users, status, reindex). The surfaces never reach past it into a store; what they get
back is one of `engine.admin_views`' typed results.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from engine.character import Character, list_characters, load_character
from engine.admin_views import (
    CharacterInfo, DayCount, DayDigest, DiaryMatch, MemorySearch, MemoryStatus, Recall, ReindexReport, StoreStatus,
    TryResult, UserSummary, WorldBookEntryView, WorldBookView,
)
from engine.config import EngineConfig
from engine.errors import EngineError
from engine.fileio import atomic_write_text, dump_yaml
from engine.journal import JournalStatus
from engine.paths import CharacterPaths, character_paths, validate_id
from engine.shortterm import DEFAULT_CHAT, ShortTermMemory, validate_chat_id
from engine.shortterm.state import State
from engine.stores.base import Hit, Store
from engine.stores.core import CoreAdmin, CoreMemoryStore, Fact, FactNotFoundError, FactStoreBusyError, FactTextError
from engine.stores.diary import DiaryEntry, DiaryStore
from engine.stores.diary.answer import day_digest, digested
from engine.stores.diary.results import DiarySearchResult
from engine.stores.worldbook import WorldBookStore, format_errors, validate_folder


class MemoryHost(Protocol):
    """What the admin API reads of the engine it administers (`MemoryOrchestrator` is one)."""

    paths: CharacterPaths
    stores: list[Store]
    short_term: ShortTermMemory

    def journal_status(self, user_id: str | None = None) -> JournalStatus: ...

    def explain(self, message: str, *, store: str, user_id: str | None = None,
                now: datetime | None = None) -> tuple[list[Hit], list[str]]: ...

    def explain_stores(self, message: str, *, stores: Sequence[str], user_id: str | None = None,
                       now: datetime | None = None) -> tuple[dict[str, list[Hit]], list[str], np.ndarray | None]: ...


log = logging.getLogger(__name__)

__all__ = [
    "MemoryAdmin", "StoreDisabledError", "TurnNotFoundError", "FactNotFoundError", "FactStoreBusyError",
    "FactTextError", "Fact", "Hit", "check_world_book_folder",
]


class StoreDisabledError(EngineError, LookupError):
    """The operation needs a store the character has switched off (`<store>.enabled: false`)."""


class TurnNotFoundError(EngineError, KeyError):
    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ""


def characters(config: EngineConfig) -> list[CharacterInfo]:
    """Every character folder under the data folder, with its display name."""
    out = []
    for char_id in list_characters(config.data_dir):
        try:
            c = load_character(character_paths(config.data_dir, char_id))
        except (EngineError, ValueError, OSError) as exc:
            log.warning("character %s does not load: %s", char_id, exc)
            continue
        settings = c.config if isinstance(c.config, dict) else {}
        out.append(CharacterInfo(char_id, c.name, str(settings.get("language", config.language)),
                                 str(settings.get("timezone", config.timezone))))
    return out


def create_character(config: EngineConfig, character_id: str, character: Character) -> bool:
    """Write a new character's folder (its character.yaml, persona fields only); False, and nothing
    changes, when a character with this id exists. The folder is made first, atomically: two
    requests creating the same character write it once."""
    paths = character_paths(config.data_dir, validate_id(character_id, kind="character id"))
    paths.root.parent.mkdir(parents=True, exist_ok=True)
    try:
        paths.root.mkdir()
    except FileExistsError:
        return False
    atomic_write_text(paths.character_file, dump_yaml(character.model_dump(exclude_defaults=True)))
    log.info("admin: created character %s (%s)", character_id, character.name)
    return True


def clear_cache(config: EngineConfig, character_id: str) -> Path | None:
    """Delete the character's `.cache/` (derived data only; rebuilt on the next open). Call it before
    opening the character. Returns the folder removed, if there was one."""
    import shutil

    paths = character_paths(config.data_dir, character_id)
    if not paths.cache_dir.exists():
        return None
    shutil.rmtree(paths.cache_dir)
    return paths.cache_dir


class MemoryAdmin:
    """Administration of one character's memory (see the module docstring)."""

    def __init__(self, orch: MemoryHost) -> None:
        self._orch = orch

    # -- stores ---------------------------------------------------------------------------------

    def _store(self, name: str, kind: type) -> object:
        for store in self._orch.stores:
            if store.name == name and isinstance(store, kind):
                return store
        raise StoreDisabledError(f"the {name} store is off for character {self._orch.paths.root.name!r} "
                                 f"({name}.enabled: false)")

    @property
    def _diary(self) -> DiaryStore:
        return self._store("diary", DiaryStore)  # type: ignore[return-value]

    @property
    def facts(self) -> CoreAdmin:
        """Facts: list, get, history, add, edit, delete, import (typed, see `CoreAdmin`)."""
        return self._store("core", CoreMemoryStore).admin  # type: ignore[attr-defined]

    @property
    def _world_book(self) -> WorldBookStore:
        return self._store("world_book", WorldBookStore)  # type: ignore[return-value]

    def _has(self, name: str) -> bool:
        return any(s.name == name for s in self._orch.stores)

    # -- users ----------------------------------------------------------------------------------

    def user_ids(self) -> list[str]:
        """Every user of the character: those with a folder here, and those the diary's backend
        holds (on Postgres a user recorded through another host has no folder on this one)."""
        ids = set(self._orch.paths.user_ids())
        if self._has("diary"):
            ids.update(self._diary.user_ids())
        return sorted(ids)

    def users(self) -> list[UserSummary]:
        out = []
        for uid in self.user_ids():
            days = self.diary_days(uid) if self._has("diary") else []
            turns = sum(d.turns for d in days)
            last = self._diary.last_turn_time(uid) if turns else None
            facts = len(self.facts.list(uid)) if self._has("core") else 0
            out.append(UserSummary(uid, turns, facts, last))
        return out

    # -- short term -----------------------------------------------------------------------------

    def short_term(self, user_id: str, *, chat_id: str | None = None) -> State:
        """A chat's stored window and rolling summary (the default chat when `chat_id` is None)."""
        validate_id(user_id, kind="user id")
        chat = DEFAULT_CHAT if chat_id is None else validate_chat_id(chat_id)
        return self._orch.short_term.state(user_id, chat_id=chat)

    # -- diary ----------------------------------------------------------------------------------

    def diary_days(self, user_id: str) -> list[DayCount]:
        validate_id(user_id, kind="user id")
        return [DayCount(d, n) for d, n in self._diary.day_counts(user_id)]

    def diary(self, user_id: str, start: datetime, end: datetime) -> list[DiaryEntry]:
        validate_id(user_id, kind="user id")
        return self._diary.entries(user_id, start, end)

    def search_diary(self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None,
                     k: int = 20, vector: np.ndarray | None = None) -> list[DiarySearchResult]:
        validate_id(user_id, kind="user id")
        return self._diary.search(user_id, text, start=start, end=end, k=k, vector=vector)

    def diary_turn(self, user_id: str, turn_id: str) -> DiaryEntry:
        entry = self._diary.get(user_id, turn_id)
        if entry is None:
            raise TurnNotFoundError(f"no diary turn {turn_id!r} for user {user_id!r}")
        return entry

    def diary_turns(self, user_id: str, turn_ids: Sequence[str]) -> list[DiaryEntry]:
        """The entries of these turns in the order given; turns that are gone are left out."""
        validate_id(user_id, kind="user id")
        found = self._diary.get_many(user_id, turn_ids)
        return [found[t] for t in turn_ids if t in found]

    def edit_turn(self, user_id: str, turn_id: str, *, user: str | None = None, assistant: str | None = None,
                  tag: str | None = None) -> DiaryEntry:
        validate_id(user_id, kind="user id")
        try:
            entry = self._diary.edit(user_id, turn_id, user=user, assistant=assistant, tag=tag)
        except KeyError:
            raise TurnNotFoundError(f"no diary turn {turn_id!r} for user {user_id!r}") from None
        log.info("admin: edited diary turn %s of %s/%s", turn_id, self._orch.paths.root.name, user_id)
        return entry

    def delete_turn(self, user_id: str, turn_id: str) -> None:
        validate_id(user_id, kind="user id")
        if not self._diary.forget(user_id, turn_id):
            raise TurnNotFoundError(f"no diary turn {turn_id!r} for user {user_id!r}")
        log.info("admin: deleted diary turn %s of %s/%s", turn_id, self._orch.paths.root.name, user_id)

    # -- world book -----------------------------------------------------------------------------

    def world_book(self) -> WorldBookView:
        store = self._world_book
        entries = tuple(
            WorldBookEntryView(e.uid, e.file, e.line, tuple(str(k) for k in e.keys),
                               tuple(str(k) for k in e.secondary_keys), e.logic, e.content, e.constant, e.enabled)
            for e in store.entries()
        )
        return WorldBookView(store.status(), entries)

    def world_book_summary(self) -> list[str]:
        if not self._has("world_book"):
            return []
        status = self._world_book.status()
        lines = [f"world book: {status.entries} entries from {status.files_loaded} of {status.files} files"]
        return lines + [f"world book: {e}" for e in status.errors]

    def try_world_book(self, message: str, *, now: datetime | None = None) -> TryResult:
        """Which world-book entries a message fires, and why; records nothing."""
        hits, diagnostics = self._orch.explain(message, store="world_book", now=now)
        return TryResult(tuple(hits), tuple(diagnostics))

    # -- upkeep ---------------------------------------------------------------------------------

    def status(self) -> MemoryStatus:
        stores = tuple(StoreStatus(s.name, tuple(s.problems())) for s in self._orch.stores)
        return MemoryStatus(self._orch.paths.root.name, stores, self._orch.journal_status())

    def reindex(self, user_id: str, *, progress: bool = False) -> ReindexReport:
        """Rebuild the derived indexes of one user from the files (`.cache/` is always safe to delete)."""
        validate_id(user_id, kind="user id")
        turns = self._diary.reindex(user_id) if self._has("diary") else 0
        facts = self.facts.reindex(user_id) if self._has("core") else 0
        return ReindexReport(user_id, turns, facts)

    def redate(self, user_id: str) -> int:
        """Resolve every diary turn's dates again by the rules of this version (`kioku reindex
        --dates`): a turn keeps the dates resolved when it was written, and later versions read some
        expressions better. A turn whose dates change is edited with nothing else changed, which dates
        it again (files: its day file atomically, under the write lock; Postgres: its row, nothing
        re-embedded). Returns how many turns changed."""
        validate_id(user_id, kind="user id")
        if not self._has("diary"):
            return 0
        changed = self._diary.redate(user_id)
        if changed:
            log.info("admin: re-dated %d diary turns of %s/%s", changed, self._orch.paths.root.name, user_id)
        return changed

    # == across stores: a range recalled, everything searched (issue 40; the MCP tools ask these) ==

    def recall(self, user_id: str, start: datetime, end: datetime, *, limit: int = 50) -> Recall:
        """What was said in [start, end): its turns, or one digest per day when the range holds
        more than `diary.digest_over_turns` turns over several days (as a prompt shows a named
        range, without the token budget). At most `limit` turns (the first) or days (the latest).
        The range is read as the prompt reads it (the day index's columns: no day file is parsed
        for a digest)."""
        validate_id(user_id, kind="user id")
        diary = self._diary
        source = diary.backend.source(user_id)
        with source.hold():
            span = source.span(math.ceil(start.timestamp()), math.ceil(end.timestamp()), None, lambda n, dropped: "")
            days = list(dict.fromkeys(span.day.tolist()))  # in time order
            if not digested(diary.config, span):
                turns = tuple(source.entries(span.rows[:limit]))
                return Recall(start, end, len(span), len(days), turns, ())
            digests = []
            for day in days[-limit:]:
                tags = span.tag[span.day == day].tolist()
                text, source_of = day_digest(source, day, tags, language=diary.prompts.language)
                digests.append(DayDigest(date.fromisoformat(day), len(tags), text, source_of))
        return Recall(start, end, len(span), len(days), (), tuple(digests))

    def search_memory(self, user_id: str, text: str, *, start: datetime | None = None, end: datetime | None = None,
                      k: int = 10, now: datetime | None = None) -> MemorySearch:
        """Every store asked about `text`: the diary's hybrid search (within [start, end) when given),
        the facts and the world-book entries it would bring into a prompt, each with why. A store
        that is off adds nothing; nothing is recorded."""
        validate_id(user_id, kind="user id")
        # One embedding call: the facts' and the world book's previews embed the text, and the
        # diary's search reuses that vector.
        stores = [name for name in ("core", "world_book") if self._has(name)]
        hits: dict[str, list[Hit]] = {}
        diagnostics: list[str] = []
        vector = None
        if stores:
            hits, notes, vector = self._orch.explain_stores(text, stores=stores, user_id=user_id, now=now)
            diagnostics = list(dict.fromkeys(notes))
        matches: tuple[DiaryMatch, ...] = ()
        if self._has("diary"):
            found = self.search_diary(user_id, text, start=start, end=end, k=k, vector=vector)
            turns = {e.id: e for e in self.diary_turns(user_id, [r.turn_id for r in found])}
            matches = tuple(DiaryMatch(turns[r.turn_id], r.score, r.side, r.why) for r in found if r.turn_id in turns)
        return MemorySearch(matches, tuple(hits.get("core", [])[:k]), tuple(hits.get("world_book", [])[:k]),
                            tuple(diagnostics))


def check_world_book_folder(folder: Path) -> str | None:
    """The problems of a world-book folder as an author reads them (file:line each), or None when
    every file loads; needs no character (`kioku check`)."""
    errors = validate_folder(folder)
    return format_errors(errors) if errors else None
