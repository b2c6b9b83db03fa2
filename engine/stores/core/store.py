"""CoreMemoryStore: durable facts about each user, extracted after turns, retrieved by similarity.

Reading: the orchestrator's query vector against the user's FAISS index; the top-k facts above the
threshold, each line saying when it was learned. Writing (`record`, on the background worker):
every `extract_every_turns` turns the memory LLM (or, with none, the rule-based extractor in
`rules.py`) proposes ADD / UPDATE / DELETE operations, which are applied behind a near-duplicate
guard that does not trust the LLM. UPDATE and DELETE keep the old text in the fact's history.

Concurrency: `record` runs on one worker thread while `retrieve` runs on others; each user's
state has its own lock, and the slow LLM call happens outside it, so retrieval never waits for it.

Pending turns (those since the last extraction) and the turn counter are kept in the user's
`.cache/core_pending.json`, so a restart does not drop them; deleting the cache loses at most
the turns of one extraction window.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import faiss
import numpy as np

from engine.adapters.embedder import Embedder, thresholds_for
from engine.adapters.llm import LLM
from engine.config import CoreConfig
from engine.errors import DataFileError, EngineError, LLMError
from engine.fileio import atomic_write_text, content_hash, read_text_strict
from engine.paths import CharacterPaths, UserPaths
from engine.prompts import Prompts
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.core.extract import llm_ops
from engine.stores.core.facts import Fact, Revision, dump_facts, new_fact_id, normalise_text, parse_facts
from engine.stores.core.index import FactIndex, IndexCache, sync_index
from engine.stores.core.ops import FactOp
from engine.stores.core.rules import rule_ops
from engine.stores.core.table import FactTable

log = logging.getLogger(__name__)

PENDING_FILE = "core_pending.json"
# Below this size the file is hashed on every access (catches an edit within the same mtime tick);
# above it the stat signature decides, so a 100,000-fact file is not hashed per query.
_ALWAYS_HASH_BYTES = 256 * 1024


class FactNotFoundError(EngineError, KeyError):
    """No live fact with that id for that user."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0])


@dataclass(frozen=True)
class Applied:
    """What one operation did."""

    kind: str
    """added | updated | deleted | skipped."""
    fact_id: str | None
    text: str
    note: str = ""
    """Why it was skipped or turned into an update (e.g. the near-duplicate and its cosine)."""


@dataclass
class _UserState:
    paths: UserPaths
    lock: threading.RLock = field(default_factory=threading.RLock)
    loaded: bool = False
    facts: FactTable = field(default_factory=FactTable)
    index: FactIndex | None = None
    file_hash: str = ""
    signature: tuple[int, ...] | None = None
    broken: DataFileError | None = None
    pending: list[Turn] = field(default_factory=list)
    turn_count: int = 0


class CoreMemoryStore:
    """The core-memory tier. `name` is also its template (`prompts/<lang>/core.txt`) and budget key."""

    name = "core"

    def __init__(
        self,
        *,
        paths: CharacterPaths,
        config: CoreConfig,
        embedder: Embedder,
        llm: LLM | None,
        prompts: Prompts,
        tz: ZoneInfo,
    ) -> None:
        self.paths = paths
        self.config = config
        self.embedder = embedder
        self.llm = llm
        self.prompts = prompts
        self.tz = tz
        self.threshold = thresholds_for(embedder, "core", config.threshold)
        self.duplicate_threshold = thresholds_for(embedder, "core_duplicate", config.duplicate_threshold)
        # One query is a single flat scan; a second OpenMP thread only adds sync cost (~3x slower here).
        faiss.omp_set_num_threads(1)
        self._users: dict[str, _UserState] = {}
        self._users_lock = threading.Lock()
        self.embedded = 0
        """How many fact texts this store has embedded (a hand edit should add only the changed ones)."""

    # ------------------------------------------------------------------ Store protocol

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        return []

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        user = self._open(query.user_id)
        with user.lock:
            self._refresh(user)
            assert user.index is not None
            found = user.index.search(query.vector, self.config.top_k)[0]
            facts = [(user.facts[fid], score) for fid, score in found if score >= self.threshold]
        return [self._hit(fact, score) for fact, score in facts]

    def record(self, turn: Turn) -> None:
        if not self.config.enabled:
            return
        user = self._open(turn.user_id)
        with user.lock:
            user.pending.append(turn)
            user.turn_count += 1
            self._cap_pending(user)
            self._save_pending(user)
            if user.turn_count % self.config.extract_every_turns != 0:
                return
            batch = list(user.pending)
            shown = self._similar_facts(user, batch) if self.llm is not None else list(self._live(user))
        try:
            if self.llm is None:
                ops: list[FactOp] | None = rule_ops(batch, shown)
            else:
                # The slow call runs outside the lock: retrieval goes on meanwhile.
                ops = llm_ops(self.llm, self.prompts, batch, shown, today=turn.at.astimezone(self.tz))
        except LLMError:
            raise  # reported by the worker; the turns stay pending for the next extraction
        with user.lock:
            if ops:
                self._apply(user, ops, at=turn.at.astimezone(self.tz), source=[t.id for t in batch])
            del user.pending[: len(batch)]
            self._save_pending(user)

    def problems(self) -> list[str]:
        """A broken file already fails retrieval with its file and line; nothing else degrades quietly."""
        return []

    def close(self) -> None:
        with self._users_lock:
            users = list(self._users.values())
        for user in users:
            with user.lock:
                if user.loaded:
                    self._save_pending(user)

    # ------------------------------------------------------------------ library API

    def facts(self, user_id: str, *, include_deleted: bool = False) -> list[Fact]:
        """The user's facts in file order; deleted ones (kept for history) only when asked."""
        user = self._open(user_id)
        with user.lock:
            self._refresh(user)
            return [f for f in user.facts.values() if include_deleted or f.live]

    def add_fact(
        self, user_id: str, text: str, *, at: datetime | None = None, source: str | None = None, dedupe: bool = True
    ) -> Fact:
        """Add a fact. With `dedupe`, an existing equal or near-duplicate fact is returned instead."""
        return self._single(user_id, FactOp("ADD", text=_clean(text)), at=at, source=source or "manual", dedupe=dedupe)

    def update_fact(self, user_id: str, fact_id: str, text: str, *, at: datetime | None = None) -> Fact:
        """Replace a fact's text; the old text goes to its history."""
        self._require(user_id, fact_id)
        return self._single(user_id, FactOp("UPDATE", text=_clean(text), fact_id=fact_id), at=at, source="manual")

    def delete_fact(self, user_id: str, fact_id: str, *, at: datetime | None = None, purge: bool = False) -> Fact:
        """Delete a fact: by default it stays in the file, marked deleted, for its history;
        `purge` removes it and its history entirely (e.g. the user asked to be forgotten)."""
        fact = self._require(user_id, fact_id)
        user = self._open(user_id)
        with user.lock:
            if purge:
                self._refresh(user)
                self._writable(user)
                del user.facts[fact_id]
                assert user.index is not None
                user.index.remove([fact_id])
                self._write(user)
                return fact
        return self._single(user_id, FactOp("DELETE", fact_id=fact_id), at=at, source="manual")

    def import_fact(self, user_id: str, text: str, learned_at: datetime) -> Fact:
        """Idempotent import (MoeChat): a text already known, now or in a fact's history, is not added again."""
        return self.import_facts(user_id, [(text, learned_at)])[0]

    def import_facts(self, user_id: str, items: Iterable[tuple[str, datetime]]) -> list[Fact]:
        """Batch form of `import_fact`: one file write and one embedding call for all of them."""
        user = self._open(user_id)
        with user.lock:
            self._refresh(user)
            self._writable(user)
            known: dict[str, Fact] = {}
            for fact in user.facts.values():
                for old in (fact.text, *(r.text for r in fact.history)):
                    known.setdefault(normalise_text(old), fact)
            out, new = [], []
            for text, learned_at in items:
                text = _clean(text)
                key = normalise_text(text)
                if key not in known:
                    when = self._aware(learned_at)
                    known[key] = Fact(new_fact_id(user.facts), text, when, when, ("import",))
                    user.facts[known[key].id] = known[key]
                    new.append(known[key])
                out.append(known[key])
            if new:
                self._sync(user)
                self._write(user)
            return out

    def apply(
        self, user_id: str, ops: Sequence[FactOp], *, at: datetime | None = None, source: Sequence[str] = ()
    ) -> list[Applied]:
        """Apply operations (as an extractor would) behind the near-duplicate guard."""
        user = self._open(user_id)
        with user.lock:
            return self._apply(user, ops, at=self._aware(at), source=list(source))

    # ------------------------------------------------------------------ applying operations

    def _apply(
        self, user: _UserState, ops: Sequence[FactOp], *, at: datetime, source: list[str], dedupe: bool = True
    ) -> list[Applied]:
        self._refresh(user)
        self._writable(user)
        index = user.index
        assert index is not None
        texts = [op.text for op in ops if op.kind in ("ADD", "UPDATE")]
        vectors = iter(self.embedder.embed(texts, role="passage") if texts else [])
        self.embedded += len(texts)
        before = dict(user.facts)
        done: list[Applied] = []
        for op in ops:
            vector = next(vectors) if op.kind in ("ADD", "UPDATE") else None
            done.append(self._apply_one(user, op, vector, at=at, source=source, dedupe=dedupe))
        if user.facts != before:
            self._write(user)
        for a in done:
            log.info("core memory %s: %s %s %r %s", user.paths.root.name, a.kind, a.fact_id, a.text, a.note)
        return done

    def _apply_one(
        self, user: _UserState, op: FactOp, vector: np.ndarray | None, *, at: datetime, source: list[str], dedupe: bool
    ) -> Applied:
        index = user.index
        assert index is not None
        if op.kind == "ADD":
            assert vector is not None
            same = next((f for f in self._live(user) if normalise_text(f.text) == normalise_text(op.text)), None)
            if same is not None:
                self._touch(user, same, source)
                return Applied("skipped", same.id, op.text, "same text as an existing fact")
            best = index.search(vector, 1)[0] if dedupe else []
            if best and best[0][1] >= self.duplicate_threshold:
                near, score = user.facts[best[0][0]], best[0][1]
                note = f"near-duplicate of {near.id} {near.text!r} (cosine {score:.3f} ≥ {self.duplicate_threshold:.2f})"
                if self.config.duplicate_action == "skip":
                    self._touch(user, near, source)
                    return Applied("skipped", near.id, op.text, note)
                return self._apply_one(user, FactOp("UPDATE", op.text, near.id), vector, at=at, source=source,
                                       dedupe=dedupe)
            fact = Fact(new_fact_id(user.facts), op.text, at, at, tuple(source))
            user.facts[fact.id] = fact
            index.add([fact], vector[None, :])
            return Applied("added", fact.id, fact.text)
        current = user.facts.get(op.fact_id or "")
        if current is None or not current.live:
            return Applied("skipped", op.fact_id, op.text, "no such live fact")
        if op.kind == "DELETE":
            user.facts[current.id] = replace(
                current, deleted_at=at, history=(*current.history, Revision(current.text, at, "delete"))
            )
            index.remove([current.id])
            return Applied("deleted", current.id, current.text)
        if normalise_text(current.text) == normalise_text(op.text):
            self._touch(user, current, source)
            return Applied("skipped", current.id, op.text, "unchanged")
        assert vector is not None
        updated = replace(
            current,
            text=op.text,
            updated_at=at,
            history=(*current.history, Revision(current.text, at, "update")),
            source_turns=_merge(current.source_turns, source),
        )
        user.facts[current.id] = updated
        index.add([updated], vector[None, :])
        return Applied("updated", current.id, op.text, f"was {current.text!r}")

    def _touch(self, user: _UserState, fact: Fact, source: list[str]) -> None:
        # A restated fact records where it was said again; its text and times stay.
        user.facts[fact.id] = replace(fact, source_turns=_merge(fact.source_turns, source))

    def _single(self, user_id: str, op: FactOp, *, at: datetime | None, source: str, dedupe: bool = True) -> Fact:
        user = self._open(user_id)
        with user.lock:
            applied = self._apply(user, [op], at=self._aware(at), source=[source], dedupe=dedupe)[0]
            if applied.fact_id is None or applied.fact_id not in user.facts:
                raise FactNotFoundError(f"no fact {op.fact_id!r} for user {user_id!r}")
            return user.facts[applied.fact_id]

    def _require(self, user_id: str, fact_id: str) -> Fact:
        user = self._open(user_id)
        with user.lock:
            self._refresh(user)
            fact = user.facts.get(fact_id)  # one lookup, not a listing of every fact
        if fact is None or not fact.live:
            raise FactNotFoundError(f"no fact {fact_id!r} for user {user_id!r}")
        return fact

    # ------------------------------------------------------------------ reading helpers

    def _hit(self, fact: Fact, score: float) -> Hit:
        # The date of the current text: a fact updated yesterday was learned, as it stands, yesterday.
        date = fact.updated_at.astimezone(self.tz).date().isoformat()
        return Hit(
            store=self.name,
            text=self.prompts.render("core_item", text=fact.text, date=date),
            score=score,
            reason=f"cosine {score:.3f} ≥ {self.threshold:.2f}",
            meta={"fact_id": fact.id, "learned_at": fact.learned_at.isoformat(), "updated_at": fact.updated_at.isoformat()},
        )

    def _similar_facts(self, user: _UserState, turns: Sequence[Turn]) -> list[Fact]:
        """The facts most similar to what the user just said, for the LLM to reconcile against."""
        self._refresh(user)
        assert user.index is not None
        if not len(user.index):
            return []
        vectors = self.embedder.embed([t.user for t in turns], role="query")
        best: dict[str, float] = {}
        for row in user.index.search(vectors, self.config.similar_facts_shown):
            for fid, score in row:
                best[fid] = max(score, best.get(fid, -1.0))
        ranked = sorted(best, key=lambda fid: -best[fid])[: self.config.similar_facts_shown]
        return [user.facts[fid] for fid in ranked]

    @staticmethod
    def _live(user: _UserState) -> Iterable[Fact]:
        return (f for f in user.facts.values() if f.live)

    def _aware(self, at: datetime | None) -> datetime:
        if at is None:
            return datetime.now(self.tz).replace(microsecond=0)
        return at.replace(tzinfo=self.tz) if at.tzinfo is None else at.astimezone(self.tz)

    # ------------------------------------------------------------------ files and cache

    def _open(self, user_id: str) -> _UserState:
        with self._users_lock:
            user = self._users.get(user_id)
            if user is None:
                user = self._users[user_id] = _UserState(paths=self.paths.user(user_id))
                self._load_pending(user)
        return user

    def _refresh(self, user: _UserState) -> None:
        """Load the user on first use; afterwards pick up a hand edit of core_mem.yml."""
        path = user.paths.core_file
        signature = _signature(path)
        small = signature is not None and signature[1] < _ALWAYS_HASH_BYTES
        if user.loaded and signature == user.signature and not small and user.broken is None:
            return
        # The hash of the raw bytes is the hash of the decoded text (content_hash encodes to UTF-8);
        # decoding and re-encoding 20 MB only to compare it would be wasted when nothing changed.
        file_hash = content_hash(path.read_bytes() if signature is not None else b"")
        if user.loaded and file_hash == user.file_hash and user.broken is None:
            user.signature = signature
            return
        cache = IndexCache(user.paths.cache, self.embedder)
        if not user.loaded:
            cached = cache.load()
            if cached is not None and cached.file_hash == file_hash and cached.facts is not None:
                # Fast path: the file is what the cache was built from; no YAML is parsed.
                user.facts = cached.facts
                user.index, user.file_hash, user.signature, user.loaded = cached.index, file_hash, signature, True
                return
            user.index = cached.index if cached is not None else FactIndex(int(self.embedder.dim))
        # Read again as text: reports bad UTF-8 with its line, and the hash is of what is parsed
        # (the file may have changed since the read above).
        data = read_text_strict(path) if signature is not None else ""
        file_hash = content_hash(data)
        try:
            facts = parse_facts(data, path=path, tz=self.tz, default_time=_mtime(path, self.tz))
        except DataFileError as exc:
            # Refuse to write until a person fixes the file; never overwrite their edit.
            user.broken = exc
            raise
        user.broken = None
        user.facts = FactTable(facts)
        user.file_hash, user.signature, user.loaded = file_hash, signature, True
        self._sync(user)
        if user.facts or path.exists():
            cache.save(user.index, file_hash=file_hash, facts=user.facts.values())

    def _sync(self, user: _UserState) -> None:
        assert user.index is not None
        self.embedded += sync_index(user.index, user.facts.values(), self.embedder)

    def _writable(self, user: _UserState) -> None:
        if user.broken is not None:
            raise DataFileError(
                f"{user.broken.reason}; not writing core memory until the file is fixed",
                path=user.broken.path,
                line=user.broken.line,
            )

    def _write(self, user: _UserState) -> None:
        # Rewrites the whole file and cache, under the user's lock: at 100,000 facts one write takes
        # ~15 s (almost all in PyYAML's representer), and that user's retrieval waits meanwhile.
        assert user.index is not None
        text = dump_facts(user.facts.values())
        atomic_write_text(user.paths.core_file, text)
        user.file_hash = content_hash(text)
        user.signature = _signature(user.paths.core_file)
        cache = IndexCache(user.paths.cache, self.embedder)
        cache.save(user.index, file_hash=user.file_hash, facts=user.facts.values())

    def _load_pending(self, user: _UserState) -> None:
        path = user.paths.cache / PENDING_FILE
        if not path.exists():
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            user.turn_count = int(data["turn_count"])
            user.pending = [
                Turn(id=t["id"], user_id=t["user_id"], at=datetime.fromisoformat(t["at"]), user=t["user"],
                     assistant=t["assistant"])
                for t in data["pending"]
            ]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("core memory: pending turns in %s unreadable (%s); starting afresh", path, exc)

    def _save_pending(self, user: _UserState) -> None:
        data = {
            "turn_count": user.turn_count,
            "pending": [
                {"id": t.id, "user_id": t.user_id, "at": t.at.isoformat(), "user": t.user, "assistant": t.assistant}
                for t in user.pending
            ],
        }
        atomic_write_text(user.paths.cache / PENDING_FILE, json.dumps(data, ensure_ascii=False))

    def _cap_pending(self, user: _UserState) -> None:
        excess = len(user.pending) - self.config.max_pending_turns
        if excess > 0:
            log.warning("core memory: memory LLM unavailable; dropping the %d oldest pending turns", excess)
            del user.pending[:excess]


def _signature(path: Path) -> tuple[int, ...] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _mtime(path: Path, tz: ZoneInfo) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz).replace(microsecond=0)
    except FileNotFoundError:
        return datetime.now(tz).replace(microsecond=0)


def _merge(old: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    return (*old, *(s for s in new if s not in old))


def _clean(text: str) -> str:
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("a fact needs some text")
    return text
