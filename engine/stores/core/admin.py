"""The typed administration interface of core memory: what the CLI, the HTTP memory API and the
inspector call to list, add, edit, delete and trace a user's facts.

Every text goes through `check_fact_text` (no control characters or lone surrogates, at most
`MAX_FACT_CHARS`), so the library, the CLI and HTTP accept the same facts. Errors:
`FactNotFoundError` (a KeyError), `FactTextError` (a ValueError), `DataFileError` (a hand edit
broke the file; nothing is written until it is fixed), `FactStoreBusyError` (a TimeoutError).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from engine.stores.core.errors import FactNotFoundError
from engine.stores.core.facts import Fact, Revision, check_fact_text, normalise_text
from engine.stores.core.ops import FactOp
from engine.stores.core.pending import PendingTurn
from engine.stores.core.reconcile import Applied, Reconciler
from engine.stores.core.port import FactRepository

MANUAL = "manual"
IMPORT = "import"


@dataclass(frozen=True)
class AddedFact:
    """The outcome of `CoreAdmin.add`."""

    fact: Fact
    """The new fact, or the existing one that made the new text redundant."""
    created: bool
    """False when an equal or near-duplicate fact already existed (it is returned instead)."""
    note: str = ""
    """Why nothing new was created (the duplicate and its cosine)."""


@dataclass(frozen=True)
class FactHistory:
    """A fact and every earlier version of it, oldest first."""

    fact: Fact
    """The fact as it stands (deleted facts included)."""
    revisions: tuple[Revision, ...]
    """Superseded versions: each text, until when it held, what changed it and which turns did."""


class CoreAdmin:
    """Administration of the facts of one character's users (see the module docstring)."""

    def __init__(self, repo: FactRepository, reconciler: Reconciler, tz: ZoneInfo) -> None:
        self._repo = repo
        self._reconciler = reconciler
        self._tz = tz

    def list(self, user_id: str, *, include_deleted: bool = False) -> list[Fact]:
        """The user's facts in file order; deleted ones (kept for history) only when asked."""
        with self._repo.reading(user_id, fresh=True) as view:
            return [f for f in view.facts.values() if include_deleted or f.live]

    def get(self, user_id: str, fact_id: str) -> Fact:
        """One live fact; `FactNotFoundError` when there is none with that id."""
        with self._repo.reading(user_id, fresh=True) as view:
            fact = view.facts.get(fact_id)
        if fact is None or not fact.live:
            raise FactNotFoundError(f"no fact {fact_id!r} for user {user_id!r}")
        return fact

    def history(self, user_id: str, fact_id: str) -> FactHistory:
        """A fact (live or deleted) with its earlier versions."""
        with self._repo.reading(user_id, fresh=True) as view:
            fact = view.facts.get(fact_id)
        if fact is None:
            raise FactNotFoundError(f"no fact {fact_id!r} for user {user_id!r}")
        return FactHistory(fact, fact.history)

    def add(self, user_id: str, text: str, *, at: datetime | None = None, dedupe: bool = True,
            source: str = MANUAL) -> AddedFact:
        """Add a fact. With `dedupe`, an equal or near-duplicate live fact is returned instead."""
        op = FactOp("ADD", text=check_fact_text(text))
        applied = self._single(user_id, op, at=at, source=source, dedupe=dedupe)
        fact = self.get(user_id, applied.fact_id or "")
        return AddedFact(fact, applied.kind == "added", applied.note)

    def edit(self, user_id: str, fact_id: str, text: str, *, at: datetime | None = None) -> Fact:
        """Replace a live fact's text; the old text goes to its history."""
        op = FactOp("UPDATE", text=check_fact_text(text), fact_id=fact_id)
        applied = self._single(user_id, op, at=at, source=MANUAL)
        if applied.fact_id is None or applied.note == "no such live fact":
            raise FactNotFoundError(f"no fact {fact_id!r} for user {user_id!r}")
        return self.get(user_id, fact_id)

    def delete(self, user_id: str, fact_id: str, *, at: datetime | None = None, purge: bool = False) -> Fact:
        """Delete a live fact: by default it stays in the file, marked deleted, for its history;
        `purge` removes it and its history entirely (e.g. the user asked to be forgotten)."""
        when = self._aware(at)
        with self._repo.writing(user_id, now=when) as tx:
            fact = tx.get(fact_id)
            if fact is None or not fact.live:
                raise FactNotFoundError(f"no fact {fact_id!r} for user {user_id!r}")
            if purge:
                return tx.purge(fact_id)
            self._reconciler.apply(tx, [FactOp("DELETE", fact_id=fact_id)], [None], at=when, source=[MANUAL])
            return tx.facts[fact_id]

    def import_facts(self, user_id: str, items: Iterable[tuple[str, datetime]]) -> list[Fact]:
        """Idempotent import (MoeChat): a text already known, now or in a fact's history, is not
        added again. One embedding call (outside the lock) and one file write for all of them."""
        wanted = [(check_fact_text(text), self._aware(when)) for text, when in items]
        with self._repo.reading(user_id, fresh=True) as view:
            known = _known_texts(view.facts.values())
        new_texts = list(dict.fromkeys(t for t, _ in wanted if normalise_text(t) not in known))
        vectors = dict(zip(new_texts, self._repo.embed_passages(new_texts))) if new_texts else {}
        with self._repo.writing(user_id, now=self._aware(None)) as tx:
            known = _known_texts(tx.facts.values())  # again: another process may have added some
            out = []
            for text, when in wanted:
                key = normalise_text(text)
                if key not in known:
                    fact = Fact(tx.new_id(), text, when, when, (IMPORT,))
                    tx.add(fact, vectors.get(text))
                    known[key] = fact.id
                out.append(tx.facts[known[key]])
            return out

    def pending(self, user_id: str) -> list[PendingTurn]:
        """Turns core memory still owes work to (waiting for a batch, or for a memory-LLM retry)."""
        return self._repo.pending(user_id, now=self._aware(None))

    def reindex(self, user_id: str) -> int:
        """Re-read the file, embed what changed, write the cache; returns how many live facts."""
        return self._repo.rebuild(user_id)

    # ------------------------------------------------------------------ helpers

    def _single(self, user_id: str, op: FactOp, *, at: datetime | None, source: str, dedupe: bool = True) -> Applied:
        when = self._aware(at)
        vectors = self._reconciler.embed_ops([op])  # before the lock
        with self._repo.writing(user_id, now=when) as tx:
            return self._reconciler.apply(tx, [op], vectors, at=when, source=[source], dedupe=dedupe)[0]

    def _aware(self, at: datetime | None) -> datetime:
        return aware(at, self._tz)


def aware(at: datetime | None, tz: ZoneInfo) -> datetime:
    """`at` in the user's zone (a naive time is local wall time); now when None."""
    if at is None:
        return datetime.now(tz).replace(microsecond=0)
    return at.replace(tzinfo=tz) if at.tzinfo is None else at.astimezone(tz)


def _known_texts(facts: Iterable[Fact]) -> dict[str, str]:
    known: dict[str, str] = {}
    for fact in facts:
        for old in (fact.text, *(r.text for r in fact.history)):
            known.setdefault(normalise_text(old), fact.id)
    return known
