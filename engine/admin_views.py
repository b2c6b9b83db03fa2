"""The typed results of the administration API (`engine.admin`): what the CLI, the HTTP memory
API, the inspector and the MCP tools receive, never a store itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from engine.journal import JournalStatus
from engine.stores.base import Hit
from engine.stores.diary import DiaryEntry
from engine.stores.worldbook import BookStatus


@dataclass(frozen=True)
class CharacterInfo:
    id: str
    """The folder name under `data/agents/`."""
    name: str
    """The display name from `character.yaml`."""
    language: str
    timezone: str


@dataclass(frozen=True)
class UserSummary:
    id: str
    turns: int
    """Diary turns recorded (0 with the diary off)."""
    facts: int
    """Live core facts (deleted ones kept for history are not counted)."""
    last_active: datetime | None
    """Time of the newest diary turn, if any."""


@dataclass(frozen=True)
class DayCount:
    day: date
    """A local day in the character's time zone."""
    turns: int


@dataclass(frozen=True)
class WorldBookEntryView:
    id: str
    file: str
    """Relative to the world-book folder."""
    line: int
    keys: tuple[str, ...]
    secondary_keys: tuple[str, ...]
    logic: str
    content: str
    constant: bool
    enabled: bool


@dataclass(frozen=True)
class WorldBookView:
    status: BookStatus
    entries: tuple[WorldBookEntryView, ...]


@dataclass(frozen=True)
class TryResult:
    """What one store would inject for a message, and why (nothing is recorded)."""

    hits: tuple[Hit, ...]
    diagnostics: tuple[str, ...]


@dataclass(frozen=True)
class StoreStatus:
    name: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
class MemoryStatus:
    character: str
    stores: tuple[StoreStatus, ...]
    journal: JournalStatus
    """Background work not done yet or failed, per user (from the journal files)."""

    @property
    def ok(self) -> bool:
        return self.journal.ok and not any(s.problems for s in self.stores)

    def lines(self) -> list[str]:
        out = [f"{s.name}: {p}" for s in self.stores for p in s.problems]
        return out + self.journal.lines()


@dataclass(frozen=True)
class ReindexReport:
    user_id: str
    diary_turns: int
    facts: int



@dataclass(frozen=True)
class DayDigest:
    day: date
    """A local day in the character's time zone."""
    turns: int
    """Turns of that day within the recalled range."""
    text: str
    """What the day was about: the memory LLM's digest, else the topics from the turns' tags."""
    source: str
    """`llm digest` or `digest from tags`."""


@dataclass(frozen=True)
class Recall:
    """What `MemoryAdmin.recall` found in a range: turns, or per-day digests (never both)."""

    start: datetime
    end: datetime
    """Exclusive."""
    total: int
    """Turns in the range."""
    days: int
    """Local days with turns in the range."""
    turns: tuple[DiaryEntry, ...]
    """The range's turns, oldest first (at most the `limit` asked for; `total` says how many there are)."""
    digests: tuple[DayDigest, ...]
    """One per day, oldest first, when the range was too long for its turns (the latest `limit` days)."""


@dataclass(frozen=True)
class DiaryMatch:
    """One turn the diary's search found."""

    turn: DiaryEntry
    score: float
    side: str
    """The half that matched best: "user" or "assistant"."""
    why: str
    """"words", "meaning", "context" or "range" (see `DiarySearchResult`)."""


@dataclass(frozen=True)
class MemorySearch:
    """What `MemoryAdmin.search_memory` found, per store."""

    diary: tuple[DiaryMatch, ...]
    facts: tuple[Hit, ...]
    """Core facts that clear the store's threshold, as a prompt would get them (reason: the similarity)."""
    world_book: tuple[Hit, ...]
    """Entries the text fires (reason: the keyword or the similarity)."""
    diagnostics: tuple[str, ...]
    """Degradations while asking (a store timed out, the embedder failed)."""
