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
from typing import Any

import numpy as np

from engine.adapters.embedder import Embedder, thresholds_for
from engine.adapters.jio import split_sentences
from engine.config import WorldBookConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.worldbook.book import Book, Snapshot
from engine.stores.worldbook.matcher import RegexBudget, secondary_ok
from engine.stores.worldbook.model import BookError
from engine.stores.worldbook.parse import Limits
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
        self.vectors = KeyVectors(embedder, paths.cache_dir / "world_book") if config.semantic else None
        limits = Limits(max_file_bytes=config.max_file_kb * 1024, max_entry_chars=config.max_entry_chars)
        self.book = Book(paths.world_book_dir, vectors=self.vectors, limits=limits)
        self._tokens: dict[str, int] = {}
        # Regex keys that ran out of time, by (file, line, key): how often, for `problems()`.
        self._slow: dict[tuple[str, int, str], int] = {}
        self._slow_lock = threading.Lock()
        self._budget_spent = 0
        """Prompts on which the regex budget ran out before every regex key was tried."""
        if config.enabled:
            self.book.refresh()

    # -- Store protocol --------------------------------------------------------------------
    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        """The message's sentence pieces, when some entry can be matched by meaning."""
        if not (self.config.enabled and self.config.semantic):
            return []
        self.book.refresh()
        if self.book.snapshot.index is None or not message.strip():
            return []
        pieces = list(dict.fromkeys(split_sentences(message)))
        return pieces[: self.config.max_pieces]

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        self.book.refresh()
        snap = self.book.snapshot
        if not snap.entries:
            return []
        active: dict[int, _Active] = {}
        for i in snap.constants:
            active[i] = _Active(i, "constant", 1.0, "constant entry", {})
        matched_secondary: dict[int, set[str]] = {}
        messages = self._messages(query)
        budget = RegexBudget(self.config.regex_timeout_ms / 1000, self.config.regex_budget_ms / 1000)
        self._keywords(snap, messages, active, matched_secondary, budget)
        if self.config.semantic:
            self._semantic(snap, query, active)
        if self.config.recursion_depth:
            self._recurse(snap, active, matched_secondary, budget)
        self._note_slow(snap, budget)
        return self._ranked(snap, active)

    def record(self, turn: Turn) -> None:
        """Nothing to write: the world book is edited by its authors."""

    def close(self) -> None:
        """Nothing is held open: the vector cache is written when computed, files are read whole."""

    # -- extras for the service and the CLI ------------------------------------------------
    def refresh(self) -> bool:
        """Re-read changed files now; True when the active entries changed."""
        return self.book.refresh()

    def problems(self) -> list[str]:
        out = [str(e) for e in self.book.errors()]
        if self.book.embed_error:
            out.append(f"semantic matching degraded: {self.book.embed_error}")
        live = {(e.file, k.line, k.text) for e in self.book.snapshot.entries for k in e.keys + e.secondary_keys}
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

    def status(self) -> BookStatus:
        self.book.refresh()
        files = self.book.files
        snap = self.book.snapshot
        return BookStatus(
            folder=str(self.book.folder),
            files=len(files),
            files_loaded=sum(1 for f in files if f.entries),
            entries=len(snap.entries),
            semantic_keys=len(snap.row_key),
            errors=tuple(self.book.errors()),
            embed_error=self.book.embed_error,
        )

    # -- matching --------------------------------------------------------------------------
    def _messages(self, query: Query) -> list[tuple[str, str]]:
        """(label, text) of the scanned messages, newest first: the current one is message 0."""
        out = [("message 0 (current)", query.message)]
        earlier = list(query.recent)[-(self.config.scan_messages - 1) :] if self.config.scan_messages > 1 else []
        for n, msg in enumerate(reversed(earlier), 1):
            text = _text_of(msg.get("content"))
            if text:
                out.append((f"message {n} ({msg.get('role', '?')})", text))
        return out

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
        """Activate entries whose primary key is in `texts` and whose secondary logic holds."""
        first: dict[int, tuple[str, str]] = {}
        for label, text in texts:
            for m in snap.matcher.scan(text, budget):
                if m.secondary:
                    matched_secondary.setdefault(m.entry, set()).add(m.key)
                elif m.entry not in active and m.entry not in first:
                    first[m.entry] = (m.key, label)
        new = []
        for i, (key, label) in first.items():
            if not secondary_ok(snap.entries[i], matched_secondary.get(i, ())):
                continue
            kind = "recursion" if depth else "keyword"
            reason = f'key "{key}" in {label}' + (f" (recursion {depth})" if depth else "")
            active[i] = _Active(i, kind, 1.0, reason, {"key": key, "where": label})
            new.append(i)
        return new

    def _semantic(self, snap: Snapshot, query: Query, active: dict[int, _Active]) -> None:
        texts, vectors = query.pieces.get(self.name, ((), None))
        if snap.index is None or vectors is None or not len(texts):
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        # Several rows can belong to one entry (one per key), so look a little further than top_k.
        k = min(snap.index.ntotal, self.config.top_k * 4)
        scores, rows = snap.index.search(vectors, k)
        best: dict[int, tuple[float, str, str]] = {}
        for p, piece in enumerate(texts):
            for score, row in zip(scores[p].tolist(), rows[p].tolist()):
                if row < 0:
                    continue
                i = int(snap.row_entry[row])
                entry = snap.entries[i]
                needed = entry.threshold if entry.threshold is not None else self.threshold
                if i in active or score < needed:
                    continue
                if i not in best or score > best[i][0]:
                    best[i] = (score, piece, snap.row_key[row])
        ranked = sorted(best.items(), key=lambda item: -item[1][0])[: self.config.top_k]
        for i, (score, piece, key) in ranked:
            reason = f'piece "{piece}" ~ key "{key}" {score:.3f}'
            active[i] = _Active(i, "semantic", score, reason, {"key": key, "piece": piece})

    def _recurse(
        self, snap: Snapshot, active: dict[int, _Active], matched_secondary: dict[int, set[str]], budget: RegexBudget
    ) -> None:
        frontier = list(active)
        for depth in range(1, self.config.recursion_depth + 1):
            texts = [(f"entry {snap.entries[i].uid}", snap.entries[i].content) for i in frontier]
            frontier = self._keywords(snap, texts, active, matched_secondary, budget, depth=depth)
            if not frontier:
                return

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
                where = (snap.entries[i].file, key.line, key.text)
                self._slow[where] = self._slow.get(where, 0) + 1
                if self._slow[where] == 1:
                    log.warning("world book: %s:%d: regex key %r timed out and was skipped", *where)

    # -- ranking and budget ----------------------------------------------------------------
    def _ranked(self, snap: Snapshot, active: dict[int, _Active]) -> list[Hit]:
        def sort_key(a: _Active) -> tuple[int, int, float, int, int]:
            pinned = 0 if a.kind == "constant" else 1
            return (pinned, -snap.entries[a.entry].order, -a.score, _RANK[a.kind], a.entry)

        hits: list[Hit] = []
        used = 0
        for a in sorted(active.values(), key=sort_key):
            entry = snap.entries[a.entry]
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
