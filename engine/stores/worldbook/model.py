"""The world book's data: one `Entry` per piece of lore, and `BookError` for what is wrong in a file.

Both file formats (MoeChat's `keyword: description` mapping and the extended entry list) are
normalised into the same frozen `Entry`, so matching and ranking never know which format an
entry came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from regex import Pattern

Logic = Literal["and_any", "and_all", "not_any", "not_all"]

DEFAULT_ORDER = 100


@dataclass(frozen=True)
class BookError:
    """One problem in one world-book file."""

    file: str
    """Path of the file, as found in the folder."""
    line: int | None
    """1-based line of the problem; None when it concerns the whole file (e.g. it cannot be read)."""
    message: str
    """What is wrong, with the offending value."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


def format_errors(errors: Sequence[BookError]) -> str:
    """One `file:line: message` per line, for the CLI's `check` command and logs."""
    return "\n".join(str(e) for e in errors)


@dataclass(frozen=True)
class Key:
    """One trigger: a plain string (matched with Aho-Corasick) or a compiled regex."""

    text: str
    """As written by the author, e.g. `重庆` or `/chong\\s*qing/i`."""
    regex: Pattern[str] | None = None
    """Set for `/pattern/flags` keys; compiled once when the file is parsed, with the `regex`
    package so every search can be given a timeout (an author's `/(a+)+$/` cannot run away)."""
    folded: str = ""
    """Case-folded text, as the keyword automaton holds it (plain keys)."""
    word_start: bool = False
    """Starts with a Latin letter or digit, so `whole_words` needs a boundary before it."""
    word_end: bool = False
    line: int = 0
    """1-based line of the key in its file (0 when unknown), for errors and timeouts."""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Entry:
    """One world-book entry, from either format."""

    uid: str
    """`<file name>#<n>`, n counting entries from 1 in file order; stable while the file is."""
    file: str
    line: int
    """1-based line where the entry starts (the key line in the simple format)."""
    keys: tuple[Key, ...]
    content: str
    """The text injected into the prompt (`keyword: description` for the simple format)."""
    secondary_keys: tuple[Key, ...] = ()
    logic: Logic = "and_any"
    """How secondary keys gate a primary match; ignored when there are none."""
    constant: bool = False
    enabled: bool = True
    order: int = DEFAULT_ORDER
    """Priority, as SillyTavern's insertion order: higher is shown first and trimmed last."""
    case_sensitive: bool = False
    whole_words: bool = True
    """For keys with Latin letters or digits at their edges; CJK edges never need a boundary."""
    semantic: bool = True
    """Whether the entry's plain keys are also matched by meaning."""
    threshold: float | None = None
    """Similarity needed for a semantic hit; None uses the configured / embedder default."""
    comment: str | None = None
    probability: int = 100
    """Percent chance the entry is used when it fires (SillyTavern's `probability`)."""
    group: tuple[str, ...] = ()
    """Inclusion groups: of the entries of one group that fire, one is used (`rules.py`)."""
    group_weight: int = 100
    group_override: bool = False
    """Wins its groups by `order` instead of the weighted draw."""
    prevent_recursion: bool = False
    """Its content does not fire other entries (recursion)."""
    exclude_recursion: bool = False
    """Not fired by other entries' content."""
    delay_until_recursion: bool = False
    """Fired only by other entries' content."""
    scan_depth: int | None = None
    """How many of the latest messages its keys are looked for in; None: `world_book.scan_messages`."""
    sticky: int = 0
    """Stays on for this many messages of the chat after it fired."""
    cooldown: int = 0
    """Cannot fire again for this many messages after it was on."""
    delay: int = 0
    """Cannot fire before the chat has this many messages."""
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    """Another program's fields kioku has no use for (an imported lorebook's), kept verbatim and
    written back on export."""

    @property
    def rules(self) -> bool:
        """Whether a per-prompt rule beyond matching applies (`rules.py`)."""
        return (self.probability < 100 or bool(self.group) or self.prevent_recursion or self.exclude_recursion
                or self.delay_until_recursion or self.scan_depth is not None or self.timed)

    @property
    def timed(self) -> bool:
        return bool(self.sticky or self.cooldown or self.delay)

    @property
    def semantic_keys(self) -> tuple[str, ...]:
        """Plain keys embedded for semantic search (a regex's source text has no useful meaning)."""
        if not (self.semantic and self.enabled) or self.constant:
            return ()
        return tuple(dict.fromkeys(k.text for k in self.keys if k.regex is None))
