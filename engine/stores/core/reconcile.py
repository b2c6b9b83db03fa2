"""The reconciler: what the memory LLM (or the offline rules) proposes, applied behind a guard.

Proposing is slow (an LLM call) and runs with no lock held; the proposal remembers the facts it
was computed from (`shown`), and is applied under the user's lock only if those are unchanged
(`unchanged`), else the caller computes it again. Applying (`apply`) does not trust the LLM: an
ADD equal to a live fact, or within the near-duplicate cosine of one, is not a second copy (it is
skipped, or becomes an UPDATE, by config); an UPDATE or DELETE of a fact that is gone is skipped.
Every change keeps the old text in the fact's history with the turns that made it, which is what
`forget` (a regenerated reply) undoes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

import numpy as np

from engine.adapters.embedder import Embedder
from engine.adapters.llm import LLM
from engine.errors import LLMError
from engine.prompts import Prompts
from engine.stores.core.llm_ops import llm_ops
from engine.stores.core.facts import MAX_FACT_CHARS, Fact, Revision, normalise_text
from engine.stores.core.ops import FactOp, ReplyError, Said
from engine.stores.core.port import View
from engine.stores.core.rules import rule_ops
from engine.stores.core.tx import Transaction

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Applied:
    """What one operation did."""

    kind: Literal["added", "updated", "deleted", "skipped"]
    fact_id: str | None
    text: str
    note: str = ""
    """Why it was skipped or turned into an update (e.g. the near-duplicate and its cosine)."""


@dataclass(frozen=True)
class Proposal:
    """Operations computed with no lock held, and what they were computed from."""

    ops: tuple[FactOp, ...]
    vectors: tuple[np.ndarray | None, ...]
    """The passage vector of each ADD / UPDATE text (None for DELETE), embedded before the lock."""
    shown: tuple[Fact, ...]
    """The facts the LLM saw; the proposal holds only while these are unchanged."""
    error: str = ""
    """Set when the memory LLM failed (then `ops` is empty and the offline rules run instead)."""


@dataclass(eq=False, kw_only=True)
class Reconciler:
    embedder: Embedder
    embed_passages: Callable[[list[str]], np.ndarray]
    """Embeds fact texts through the repository (which counts them)."""
    llm: LLM | None
    prompts: Prompts
    duplicate_threshold: float
    duplicate_action: Literal["skip", "update"]
    similar_facts_shown: int

    # ------------------------------------------------------------------ proposing (no lock)

    def query_vectors(self, turns: Sequence[Said]) -> np.ndarray:
        return self.embedder.embed([t.user for t in turns], role="query")

    def similar(self, view: View, vectors: np.ndarray) -> list[Fact]:
        """The facts most similar to what the user just said, for the LLM to reconcile against."""
        if not len(view.index) or not len(vectors):
            return []
        best: dict[str, float] = {}
        for row in view.index.search(vectors, self.similar_facts_shown):
            for fid, score in row:
                best[fid] = max(score, best.get(fid, -1.0))
        ranked = sorted(best, key=lambda fid: -best[fid])[: self.similar_facts_shown]
        return [view.facts[fid] for fid in ranked]

    def propose(self, turns: Sequence[Said], shown: Sequence[Fact], *, today: datetime) -> Proposal:
        """Ask the memory LLM (slow; call with no lock held). Failures come back as `error`."""
        assert self.llm is not None
        try:
            ops = llm_ops(self.llm, self.prompts, turns, shown, today=today)
        except (LLMError, ReplyError) as exc:
            log.warning("core memory: memory LLM failed on %d turn(s), offline rules used: %s", len(turns), exc)
            return Proposal((), (), tuple(shown), error=f"{type(exc).__name__}: {exc}")
        ops = clean_ops(ops)
        return Proposal(tuple(ops), self.embed_ops(ops), tuple(shown))

    def embed_ops(self, ops: Sequence[FactOp]) -> tuple[np.ndarray | None, ...]:
        texts = [op.text for op in ops if op.kind in ("ADD", "UPDATE")]
        vectors = iter(self.embed_passages(texts) if texts else [])
        return tuple(next(vectors) if op.kind in ("ADD", "UPDATE") else None for op in ops)

    # ------------------------------------------------------------------ applying (under the lock)

    @staticmethod
    def unchanged(tx: Transaction, shown: Sequence[Fact]) -> bool:
        """Whether every fact the LLM was shown still reads as it was shown."""
        for fact in shown:
            now = tx.get(fact.id)
            if now is None or now.text != fact.text or now.live != fact.live:
                return False
        return True

    def rules(self, tx: Transaction, turns: Sequence[Said]) -> tuple[list[FactOp], tuple[np.ndarray | None, ...]]:
        """The offline extractor's operations against the current facts (cheap: run under the lock)."""
        ops = clean_ops(rule_ops(turns, tx.live()))
        return ops, self.embed_ops(ops)

    def apply(
        self,
        tx: Transaction,
        ops: Sequence[FactOp],
        vectors: Sequence[np.ndarray | None],
        *,
        at: datetime,
        source: Sequence[str],
        dedupe: bool = True,
    ) -> list[Applied]:
        done = [self._apply_one(tx, op, vector, at=at, source=tuple(source), dedupe=dedupe)
                for op, vector in zip(ops, vectors)]
        for a in done:
            log.info("core memory: %s %s %r %s", a.kind, a.fact_id, a.text, a.note)
        return done

    def _apply_one(
        self, tx: Transaction, op: FactOp, vector: np.ndarray | None, *, at: datetime, source: tuple[str, ...],
        dedupe: bool,
    ) -> Applied:
        if op.kind == "ADD":
            same = tx.live_with_text(op.text)
            if same is not None:
                _touch(tx, same, source)
                return Applied("skipped", same.id, op.text, "same text as an existing fact")
            near = tx.index.nearest(vector) if dedupe and vector is not None else None
            if near is not None and near[1] >= self.duplicate_threshold:
                fact, score = tx.facts[near[0]], near[1]
                note = f"near-duplicate of {fact.id} {fact.text!r} (cosine {score:.3f} ≥ {self.duplicate_threshold:.2f})"
                if self.duplicate_action == "skip":
                    _touch(tx, fact, source)
                    return Applied("skipped", fact.id, op.text, note)
                done = self._apply_one(tx, FactOp("UPDATE", op.text, fact.id), vector, at=at, source=source,
                                       dedupe=dedupe)
                return replace(done, note=f"{note}; {done.note}" if done.note else note)
            fact = Fact(tx.new_id(), op.text, at, at, source)
            tx.add(fact, vector)
            return Applied("added", fact.id, fact.text)
        current = tx.get(op.fact_id or "")
        if current is None or not current.live:
            return Applied("skipped", op.fact_id, op.text, "no such live fact")
        if op.kind == "DELETE":
            tx.put(replace(current, deleted_at=at,
                           history=(*current.history, Revision(current.text, at, "delete", source))))
            return Applied("deleted", current.id, current.text)
        if normalise_text(current.text) == normalise_text(op.text):
            _touch(tx, current, source)
            return Applied("skipped", current.id, op.text, "unchanged")
        tx.put(
            replace(
                current, text=op.text, updated_at=at, source_turns=_merge(current.source_turns, source),
                history=(*current.history, Revision(current.text, at, "update", source)),
            ),
            vector,
        )
        return Applied("updated", current.id, op.text, f"was {current.text!r}")


def forget_turn(tx: Transaction, turn_id: str, *, at: datetime) -> int:
    """Withdraw what turn `turn_id` did: delete the facts only it stated, put back the text it
    replaced, restore what it deleted (each recorded in history as `forget`), and drop it from
    the sources of facts others stated too. Returns how many facts were deleted or reverted."""
    changed = 0
    withdrawn = (turn_id,)
    for fact in list(tx.facts.values()):
        last = fact.history[-1] if fact.history else None
        if fact.live and fact.source_turns == withdrawn:
            tx.put(replace(fact, deleted_at=at, history=(*fact.history, Revision(fact.text, at, "forget", withdrawn))))
        elif fact.live and last is not None and last.change == "update" and turn_id in last.by:
            before = fact.history[-2].until if len(fact.history) > 1 else fact.learned_at
            tx.put(replace(
                fact, text=last.text, updated_at=before, source_turns=_without(fact.source_turns, turn_id),
                history=(*fact.history, Revision(fact.text, at, "forget", withdrawn)),
            ))
        elif not fact.live and last is not None and last.change == "delete" and turn_id in last.by:
            tx.put(replace(fact, deleted_at=None, history=(*fact.history, Revision(fact.text, at, "forget", withdrawn))))
        else:
            if turn_id in fact.source_turns and len(fact.source_turns) > 1:
                tx.put(replace(fact, source_turns=_without(fact.source_turns, turn_id)))
            continue
        changed += 1
    tx.pending = [p for p in tx.pending if p.id != turn_id]
    return changed


def clean_ops(ops: Sequence[FactOp]) -> list[FactOp]:
    """Texts a file can hold: control characters out, lone surrogates replaced, whitespace
    collapsed, length bounded; an ADD or UPDATE left empty is dropped."""
    out = []
    for op in ops:
        if op.kind in ("ADD", "UPDATE"):
            text = clean_extracted(op.text)
            if not text:
                log.warning("core memory: %s with no usable text dropped", op.kind)
                continue
            op = replace(op, text=text)
        out.append(op)
    return out


def clean_extracted(text: str) -> str:
    chars = ("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    kept = "".join(c for c in chars if c.isspace() or not (ord(c) < 32 or 0x7F <= ord(c) <= 0x9F))
    return " ".join(kept.split())[:MAX_FACT_CHARS]


def _touch(tx: Transaction, fact: Fact, source: tuple[str, ...]) -> None:
    # A restated fact records where it was said again; its text and times stay.
    merged = _merge(fact.source_turns, source)
    if merged != fact.source_turns:
        tx.put(replace(fact, source_turns=merged))


def _merge(old: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    return (*old, *(s for s in new if s not in old))


def _without(sources: Sequence[str], turn_id: str) -> tuple[str, ...]:
    return tuple(s for s in sources if s != turn_id)
