"""Turning recorded turns into facts: idempotent by turn id, no LLM call under a lock, no turn dropped.

`record(turn)` (run by the journal / background worker, possibly again for the same turn after a
crash or a failure):

1. Under the user's lock, cheaply: a turn already applied (its id is in some fact's sources or
   revisions) or already waiting in `core_pending.json` is a no-op. With `extract_every_turns`
   > 1 the turn waits in that file until the batch is full.
2. With no lock: the facts most similar to what was said are looked up, the memory LLM is asked,
   and the texts it proposes are embedded.
3. Under the lock again: if the facts the LLM saw are unchanged the operations are applied,
   else steps 2-3 run again (at most `_ATTEMPTS` times).

When the LLM fails (unreachable, timeout, HTTP error, an unreadable reply twice) the offline rules
extract what they can at once, and the turns wait in `core_pending.json` as `llm` turns; each
later `record` (or `retry`) of that user offers the due ones to the LLM again, oldest first, with
an exponential backoff, until it answers. With no LLM configured the rules are the extractor.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from zoneinfo import ZoneInfo

from engine.config import CoreConfig
from engine.stores.base import Turn
from engine.stores.core.pending import PendingTurn
from engine.stores.core.reconcile import Proposal, Reconciler
from engine.stores.core.port import FactRepository
from engine.stores.core.tx import Transaction

log = logging.getLogger(__name__)

_ATTEMPTS = 3


class Extraction:
    def __init__(
        self,
        repo: FactRepository,
        reconciler: Reconciler,
        config: CoreConfig,
        tz: ZoneInfo,
        *,
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.repo = repo
        self.reconciler = reconciler
        self.config = config
        self.tz = tz
        self.wall_clock = wall_clock or (lambda: datetime.now(tz))

    def record(self, turn: Turn) -> None:
        at = turn.at.astimezone(self.tz)
        entry = PendingTurn(turn.id, at, turn.user, turn.assistant)
        batch = self._enqueue(turn.user_id, entry)
        if batch:
            self._extract(turn.user_id, batch, at=at)

    def retry(self, user_id: str) -> int:
        """Offer the due `llm` turns to the memory LLM now; returns how many were offered."""
        if self.reconciler.llm is None:
            return 0
        now = self.wall_clock()
        due = [p for p in self.repo.pending(user_id, now=now) if p.wait == "llm" and p.due(now)]
        due = due[: self.config.max_turns_per_extraction]
        if due:
            self._extract(user_id, due, at=due[-1].at)
        return len(due)

    # ------------------------------------------------------------------ steps

    def _enqueue(self, user_id: str, entry: PendingTurn) -> list[PendingTurn]:
        """Step 1: the turns to extract now ([] when the turn is done or must wait for more)."""
        now = self.wall_clock()
        with self.repo.writing(user_id, now=entry.at) as tx:
            pending = tx.pending
            if tx.knows_turn(entry.id) or any(p.id == entry.id for p in pending):
                log.info("core memory: turn %s already recorded; nothing to do", entry.id)
                return []
            waiting = [p for p in pending if p.wait == "batch"] + [entry]
            if len(waiting) < self.config.extract_every_turns:
                tx.pending = [*pending, entry]
                return []
            if self.reconciler.llm is None:
                self._rules_only(tx, waiting, at=entry.at)
                return []
            room = max(0, self.config.max_turns_per_extraction - len(waiting))
            due = [p for p in pending if p.wait == "llm" and p.due(now)][:room]
            return [*due, *waiting]

    def _extract(self, user_id: str, batch: list[PendingTurn], *, at: datetime) -> None:
        """Steps 2 and 3."""
        proposal: Proposal | None = None
        for _ in range(_ATTEMPTS):
            vectors = self.reconciler.query_vectors(batch)
            with self.repo.reading(user_id, fresh=True) as view:
                shown = self.reconciler.similar(view, vectors)
            proposal = self.reconciler.propose(batch, shown, today=at)
            with self.repo.writing(user_id, now=at) as tx:
                live = _still_owed(tx, batch)
                if not live:
                    return  # another process (or a replay) did them meanwhile
                if proposal.error:
                    self._fallback(tx, live, error=proposal.error, at=at)
                    return
                if self.reconciler.unchanged(tx, proposal.shown) and len(live) == len(batch):
                    self.reconciler.apply(tx, proposal.ops, proposal.vectors, at=at, source=[t.id for t in batch])
                    done = {t.id for t in batch}
                    tx.pending = [p for p in tx.pending if p.id not in done]
                    return
                batch = live  # the facts moved under us: ask again about what is still owed
        with self.repo.writing(user_id, now=at) as tx:
            live = _still_owed(tx, batch)
            if live:
                self._fallback(tx, live, error="facts kept changing while the memory LLM was asked", at=at)

    def _fallback(self, tx: Transaction, turns: Sequence[PendingTurn], *, error: str, at: datetime) -> None:
        """The LLM failed: rules now for the turns that have not had them, an LLM retry later for all."""
        now = self.wall_clock()
        fresh = [t for t in turns if t.wait != "llm"]
        failed = {t.id: t.failed(error, now) for t in turns}
        # Marked before the rules' facts are written (see tx.commit), so a crash between the two
        # leaves the turns to retry rather than marked done.
        kept = [failed.pop(p.id, p) for p in tx.pending]
        tx.pending = kept + list(failed.values())
        if fresh:
            ops, vectors = self.reconciler.rules(tx, fresh)
            self.reconciler.apply(tx, ops, vectors, at=at, source=[t.id for t in fresh])

    def _rules_only(self, tx: Transaction, turns: Sequence[PendingTurn], *, at: datetime) -> None:
        ops, vectors = self.reconciler.rules(tx, turns)
        self.reconciler.apply(tx, ops, vectors, at=at, source=[t.id for t in turns])
        done = {t.id for t in turns}
        tx.pending = [p for p in tx.pending if p.id not in done]


def _still_owed(tx: Transaction, batch: Sequence[PendingTurn]) -> list[PendingTurn]:
    """The turns of `batch` not done by someone else since it was taken: still in the pending
    file (with their current state), or never put there and not applied."""
    pending = {p.id: p for p in tx.pending}
    out = []
    for turn in batch:
        if turn.id in pending:
            out.append(pending[turn.id])
        elif turn.wait == "batch" and turn.attempts == 0 and not tx.knows_turn(turn.id):
            out.append(replace(turn))
    return out
