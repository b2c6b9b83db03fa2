"""`WorldBookStore`: the world-book tier of the memory engine.

Per `build_prompt`: refresh the book if a file changed (a stat per file), then collect
constant entries, keyword triggers over the last `scan_messages` messages, semantic hits of the
message's sentence pieces (embedded by the orchestrator in its single batch), and optionally
entries triggered recursively by the content of those; rank by `order` and score and trim to
the token budget from the end. `record()` does nothing: authors write the book, not the chat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from engine.conversation import normalize
from engine.adapters.embedder import Embedder, thresholds_for
from engine.adapters.jio import split_sentences
from engine.config import WorldBookConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.worldbook.book import Book, Snapshot
from engine.stores.worldbook.matcher import RegexBudget, secondary_ok
from engine.stores.worldbook.model import BookError, Entry
from engine.stores.worldbook.rules import Timing, by_chance, by_group, matched_at, timing
from engine.stores.worldbook.limits import Limits
from engine.stores.worldbook.semantic import Background, calibration_for, matches
from engine.stores.worldbook.vectors import KeyVectors
from engine.tokens import count_tokens

log = logging.getLogger(__name__)

# Sort rank among hits of equal order and score: what the author asked for directly comes first.
_RANK = {"constant": 0, "keyword": 1, "recursion": 2, "semantic": 3}


@dataclass(frozen=True)
class BookStatus:
    """What the HTTP service and the CLI show about a character's world book."""

    folder: str
    files: int
    """World-book files in the folder."""
    files_loaded: int
    """Files with entries active (a broken file counts when its last good version is kept)."""
    entries: int
    semantic_keys: int
    """Rows of the semantic index (one per entry and plain key)."""
    errors: tuple[BookError, ...]
    embed_error: str | None
    """Why some keys have no vectors (their files are matched by keyword only), if any."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Active:
    entry: int
    kind: str
    score: float
    reason: str
    meta: dict[str, Any]


class WorldBookStore:
    """Author-written lore for one character, matched by keyword and by meaning."""

    name = "world_book"

    def __init__(
        self,
        *,
        paths: CharacterPaths,
        config: WorldBookConfig,
        embedder: Embedder,
        prompts: Prompts,
        budget_tokens: int,
    ) -> None:
        self.config = config
        self.prompts = prompts
        self.budget_tokens = budget_tokens
        self.threshold = thresholds_for(embedder, self.name, config.threshold) if config.semantic else 1.0
        self.calibration = calibration_for(config, embedder.model_id)
        """The margin decision; None when an absolute `threshold` decides (configured, or no
        calibration is known for this embedder)."""
        self.vectors = KeyVectors(embedder, paths.cache_dir / "world_book") if config.semantic else None
        limits = Limits(max_file_bytes=config.max_file_kb * 1024, max_entry_chars=config.max_entry_chars)
        self.book = Book(paths.world_book_dir, vectors=self.vectors, limits=limits, content=config.semantic_content,
                         check_interval_s=config.check_interval_s)
        self._background = (
            Background(KeyVectors(embedder, paths.cache_dir / "world_book_baseline"))
            if self.calibration and config.semantic else None
        )
        self._tokens: dict[str, int] = {}
        # Regex keys that ran out of time, by (file, line, key): how often, for `problems()`.
        self._slow: dict[tuple[str, int, str], int] = {}
        self._slow_lock = threading.Lock()
        self._budget_spent = 0
        """Prompts on which the regex budget ran out before every regex key was tried."""
        if config.enabled:
            self.book.refresh(force=True)
            if self._background is not None:
                self._background.vectors()

    # -- Store protocol --------------------------------------------------------------------
    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        """The message's sentence pieces, when some entry can be matched by meaning."""
        if not (self.config.enabled and self.config.semantic):
            return []
        self.book.refresh()
        if not self.book.snapshot.searchable or not message.strip():
            return []
        pieces = list(dict.fromkeys(split_sentences(message)))
        return pieces[: self.config.max_pieces]

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        self.book.refresh()
        snap = self.book.snapshot
        if not snap.count:
            return []
        active: dict[int, _Active] = {}
        for i in snap.constants:
            active[i] = _Active(i, "constant", 1.0, "constant entry", {})
        matched_secondary: dict[int, set[str]] = {}
        messages = self._messages(query, self._deepest(snap))
        budget = RegexBudget(self.config.regex_timeout_ms / 1000, self.config.regex_budget_ms / 1000)
        self._keywords(snap, messages, active, matched_secondary, budget)
        if self.config.semantic:
            self._semantic(snap, query, active)
        if self.config.recursion_depth:
            self._recurse(snap, active, matched_secondary, budget)
        if snap.ruled:
            self._rules(snap, query, active, budget)
        self._note_slow(snap, budget)
        if query.client_text:
            # The frontend sent these itself: not twice, and their room goes to the next entries.
            sent = normalize(query.client_text)
            active = {i: a for i, a in active.items() if normalize(snap.entry(i).content) not in sent}
        return self._ranked(snap, active)

    def record(self, turn: Turn) -> None:
        """Nothing to write: the world book is edited by its authors."""

    def forget(self, user_id: str, turn_id: str) -> int:
        """Nothing to undo: no turn ever changes the world book (0 things removed)."""
        return 0

    def close(self) -> None:
        """Nothing is held open: the vector cache is written when computed, files are read whole."""

    # -- extras for the service and the CLI ------------------------------------------------
    def refresh(self) -> bool:
        """Re-read changed files now (not throttled); True when the active entries changed."""
        return self.book.refresh(force=True)

    def problems(self) -> list[str]:
        out = [str(e) for e in self.book.errors()]
        if self.book.embed_error:
            out.append(f"semantic matching degraded: {self.book.embed_error}")
        if self._background is not None and self._background.error:
            out.append(f"semantic matching off (baseline words not embedded): {self._background.error}")
        live = {(e.file, k.line, k.text) for e, k in self.book.snapshot.regex_keys()}
        with self._slow_lock:
            slow = [(where, n) for where, n in self._slow.items() if where in live]
            spent = self._budget_spent
        if spent:
            out.append(f"the {self.config.regex_budget_ms:g} ms regex budget ran out on {spent} prompt(s); "
                       "some regex keys were not tried (world_book.regex_budget_ms)")
        for (file, line, key), n in slow:
            out.append(
                f"{file}:{line}: regex key {key!r} ran out of its {self.config.regex_timeout_ms:g} ms "
                f"on {n} message(s) and was skipped there; simplify it (nested repeats like (a+)+ backtrack)"
            )
        return out

    def entries(self) -> list[Entry]:
        """Every live entry, in file order (the inspector's list; O(book), not for prompts)."""
        self.book.refresh(force=True)
        return sorted((e for _, e in self.book.snapshot.entries()), key=lambda e: (e.file, e.line))

    def status(self) -> BookStatus:
        self.book.refresh(force=True)
        files = self.book.files
        snap = self.book.snapshot
        return BookStatus(
            folder=str(self.book.folder),
            files=len(files),
            files_loaded=sum(1 for f in files if f.entries),
            entries=snap.count,
            semantic_keys=snap.key_rows,
            errors=tuple(self.book.errors()),
            embed_error=self.book.embed_error,
        )

    # -- matching --------------------------------------------------------------------------
    def _messages(self, query: Query, deepest: int) -> list[tuple[str, str]]:
        """(label, text) of the scanned messages, newest first: the current one is message 0; as
        many as the deepest scan asks (`scan_messages`, or an entry's own `scan_depth`)."""
        out = [("message 0 (current)", query.message)]
        paused = query.since_last is not None and query.since_last > timedelta(minutes=self.config.scan_pause_minutes)
        earlier = list(query.recent)[-(deepest - 1) :] if deepest > 1 and not paused else []
        for n, msg in enumerate(reversed(earlier), 1):
            text = _text_of(msg.get("content"))
            if text:
                out.append((f"message {n} ({msg.get('role', '?')})", text))
        return out

    def _deepest(self, snap: Snapshot) -> int:
        depths = [d for i in snap.ruled if (d := snap.entry(i).scan_depth) is not None]
        return max([self.config.scan_messages, *depths])

    def _keywords(
        self,
        snap: Snapshot,
        texts: list[tuple[str, str]],
        active: dict[int, _Active],
        matched_secondary: dict[int, set[str]],
        budget: RegexBudget,
        *,
        depth: int = 0,
    ) -> list[int]:
        """Activate entries whose primary key is in `texts` and whose secondary logic holds; in the
        first pass (`depth` 0, `texts` the messages newest first) within each entry's scan depth."""
        first: dict[int, tuple[str, str]] = {}
        ruled = snap.ruled_set
        for n, (label, text) in enumerate(texts):
            # Beyond `scan_messages` (scanned for an entry's deeper `scan_depth`) every entry is
            # checked; within it only entries with rules can be out of reach.
            deep = depth == 0 and n >= self.config.scan_messages
            for m in snap.scan(text, budget):
                if (deep or m.entry in ruled) and not self._reachable(snap.entry(m.entry), n, depth):
                    continue
                if m.secondary:
                    matched_secondary.setdefault(m.entry, set()).add(m.key)
                elif m.entry not in active and m.entry not in first:
                    first[m.entry] = (m.key, label)
        new = []
        for i, (key, label) in first.items():
            if not secondary_ok(snap.entry(i), matched_secondary.get(i, ())):
                continue
            kind = "recursion" if depth else "keyword"
            reason = f'key "{key}" in {label}' + (f" (recursion {depth})" if depth else "")
            active[i] = _Active(i, kind, 1.0, reason, {"key": key, "where": label})
            new.append(i)
        return new

    def _reachable(self, entry: Entry, n: int, depth: int) -> bool:
        """Whether a key of `entry` found in text `n` of recursion round `depth` may fire it."""
        if depth:
            return not entry.exclude_recursion
        return n < self._scan_depth(entry) and not entry.delay_until_recursion

    def _scan_depth(self, entry: Entry) -> int:
        return self.config.scan_messages if entry.scan_depth is None else entry.scan_depth

    def _semantic(self, snap: Snapshot, query: Query, active: dict[int, _Active]) -> None:
        texts, vectors = query.pieces.get(self.name, ((), None))
        found = matches(snap, texts, vectors, query.message, active, calibration=self.calibration,
                        background=self._background, threshold=self.threshold, top_k=self.config.top_k)
        for i, score, reason, meta in found:
            active[i] = _Active(i, "semantic", score, reason, meta)

    def _recurse(
        self, snap: Snapshot, active: dict[int, _Active], matched_secondary: dict[int, set[str]], budget: RegexBudget
    ) -> None:
        frontier = list(active)
        for depth in range(1, self.config.recursion_depth + 1):
            texts = [(f"entry {snap.entry(i).uid}", snap.entry(i).content) for i in frontier
                     if not snap.entry(i).prevent_recursion]
            frontier = self._keywords(snap, texts, active, matched_secondary, budget, depth=depth)
            if not frontier:
                return

    def _rules(self, snap: Snapshot, query: Query, active: dict[int, _Active], budget: RegexBudget) -> None:
        """Timed effects, then chance, then inclusion groups (`rules.py`), on the entries that have them."""
        timed = [i for i in snap.ruled if snap.entry(i).timed]
        sticky: set[int] = set()
        if timed:
            for i, t in self._timings(snap, query, timed, budget).items():
                if t.state == "sticky":
                    sticky.add(i)
                    active.setdefault(i, _Active(i, "keyword", 1.0, t.reason, {"timed": t.state}))
                elif t.state != "free":
                    active.pop(i, None)
        seed = f"{query.user_id}\0{len(query.recent)}\0{query.message}"
        ruled = {i: snap.entry(i) for i in snap.ruled if i in active}
        lost = by_chance({i: e for i, e in ruled.items() if i not in sticky}, seed)
        lost |= by_group({i: e for i, e in ruled.items() if i not in lost}, seed, keep=sticky)
        for i in lost:
            active.pop(i, None)

    def _timings(self, snap: Snapshot, query: Query, timed: list[int], budget: RegexBudget) -> dict[int, Timing]:
        """Each timed entry's state now, worked out from the window's messages (`rules.timing`)."""
        texts = [_text_of(m.get("content")) for m in query.recent]
        wanted = set(timed)
        scans: list[tuple[set[int], dict[int, set[str]]]] = []
        for text in texts:
            primary: set[int] = set()
            secondary: dict[int, set[str]] = {}
            for m in snap.scan(text, budget) if text else ():
                if m.entry in wanted:
                    if m.secondary:
                        secondary.setdefault(m.entry, set()).add(m.key)
                    else:
                        primary.add(m.entry)
            scans.append((primary, secondary))
        users = [n for n, m in enumerate(query.recent) if m.get("role") == "user"]
        ok = lambda i, found: secondary_ok(snap.entry(i), found)  # noqa: E731
        out: dict[int, Timing] = {}
        for i in timed:
            entry = snap.entry(i)
            depth = self._scan_depth(entry)
            moments = [(n + 1, matched_at(i, scans, n, depth, ok)) for n in users]
            out[i] = timing(entry, moments, len(query.recent) + 1)
        return out

    def _note_slow(self, snap: Snapshot, budget: RegexBudget) -> None:
        """Remember regex keys that ran out of time, for `problems()` (and the log, once per key)."""
        if budget.skipped:
            log.warning("world book: %d regex searches skipped, the %g ms regex budget of this prompt was spent",
                        budget.skipped, self.config.regex_budget_ms)
            with self._slow_lock:
                self._budget_spent += 1
        if not budget.timed_out:
            return
        with self._slow_lock:
            if len(self._slow) > 1000:
                self._slow.clear()  # bounded: problems() re-learns the ones still timing out
            for i, key in budget.timed_out:
                where = (snap.entry(i).file, key.line, key.text)
                self._slow[where] = self._slow.get(where, 0) + 1
                if self._slow[where] == 1:
                    log.warning("world book: %s:%d: regex key %r timed out and was skipped", *where)

    # -- ranking and budget ----------------------------------------------------------------
    def _ranked(self, snap: Snapshot, active: dict[int, _Active]) -> list[Hit]:
        def sort_key(a: _Active) -> tuple[int, int, float, int, str, int]:
            pinned = 0 if a.kind == "constant" else 1
            entry = snap.entry(a.entry)
            return (pinned, -entry.order, -a.score, _RANK[a.kind], entry.file, entry.line)

        hits: list[Hit] = []
        used = 0
        for a in sorted(active.values(), key=sort_key):
            entry = snap.entry(a.entry)
            tokens = self._count(entry.content)
            pinned = a.kind == "constant"
            if not pinned and used + tokens > self.budget_tokens:
                # Trim from the end: everything ranked below the first entry that does not fit.
                dropped = len(active) - len(hits)
                log.debug("world book: budget %d tokens reached; %d entries left out", self.budget_tokens, dropped)
                break
            used += tokens
            meta = {"uid": entry.uid, "file": entry.file, "line": entry.line, "kind": a.kind, **a.meta}
            hits.append(Hit(self.name, entry.content, a.score, a.reason, tokens, pinned, meta))
        return hits

    def _count(self, text: str) -> int:
        if len(self._tokens) > 50_000:
            self._tokens.clear()
        n = self._tokens.get(text)
        if n is None:
            n = self._tokens[text] = count_tokens(text)
        return n


def _text_of(content: Any) -> str:
    """Message content as text; OpenAI content may be a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
