"""CoreMemoryStore: the `Store` adapter of core memory (durable facts about each user).

It joins the parts, each in its own module:

- `repo.py`       the fact repository: `core_mem.yml`, vectors, cache, locks across processes;
- `reconcile.py`  the reconciler: LLM / rule operations behind the near-duplicate guard, forget;
- `extraction.py` recording turns: idempotent by turn id, no LLM under a lock, LLM retries;
- `relevance.py`  which facts a message should see;
- `admin.py`      the typed administration interface (`store.admin`) for the CLI, HTTP, inspector.

The older method names (`facts`, `add_fact`, `update_fact`, `delete_fact`, `import_fact(s)`,
`apply`) stay as thin wrappers over `admin` for existing callers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from engine.adapters.embedder import Embedder, thresholds_for
from engine.adapters.llm import LLM
from engine.config import CoreConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Hit, Message, Query, Turn
from engine.stores.core.admin import MANUAL, CoreAdmin, aware
from engine.stores.core.errors import FactNotFoundError
from engine.stores.core.extraction import Extraction
from engine.stores.core.facts import Fact
from engine.stores.core.ops import FactOp
from engine.stores.core.reconcile import Applied, Reconciler, forget_turn
from engine.stores.core.relevance import MAX_MESSAGE_CHARS, Relevance
from engine.stores.core.port import FactRepository

__all__ = ["Applied", "CoreMemoryStore", "FactNotFoundError"]


class CoreMemoryStore:
    """The core-memory tier. `name` is also its template (`prompts/<lang>/core.txt`) and budget key."""

    name = "core"
    needs_vector = True
    """Facts are found by meaning only: when the embedder fails the reader skips and names this store."""

    def __init__(
        self,
        *,
        repo: FactRepository,
        paths: CharacterPaths,
        config: CoreConfig,
        embedder: Embedder,
        llm: LLM | None,
        prompts: Prompts,
        tz: ZoneInfo,
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        """`repo`: where the facts are kept (`engine.factory` picks it); `paths`: the character's
        folder (its cache holds the relevance calibration); `wall_clock`: now, for extraction."""
        self.paths = paths
        self.config = config
        self.embedder = embedder
        self.llm = llm
        self.prompts = prompts
        self.tz = tz
        self.duplicate_threshold = thresholds_for(embedder, "core_duplicate", config.duplicate_threshold)
        self.repo = repo
        self.reconciler = Reconciler(
            embedder=embedder, embed_passages=self.repo.embed_passages, llm=llm, prompts=prompts,
            duplicate_threshold=self.duplicate_threshold, duplicate_action=config.duplicate_action,
            similar_facts_shown=config.similar_facts_shown,
        )
        self.extraction = Extraction(self.repo, self.reconciler, config, tz, wall_clock=wall_clock)
        self.relevance = Relevance(embedder, min_lift=config.min_lift, top_k=config.top_k, floor=config.threshold,
                                   cache_dir=paths.cache_dir)
        self.admin = CoreAdmin(self.repo, self.reconciler, tz)
        """Typed administration: list, add, edit, delete, history, import, pending, reindex."""

    @property
    def embedded(self) -> int:
        """How many fact texts this store has embedded (a hand edit should add only the changed ones)."""
        return self.repo.embedded

    # ------------------------------------------------------------------ Store protocol

    def query_texts(self, message: str, recent: Sequence[Message]) -> list[str]:
        """The message alone: whether a fact is relevant is decided on what was just said, not on
        the previous turns the orchestrator's query text carries along."""
        text = message.strip()[:MAX_MESSAGE_CHARS]
        return [text] if self.config.enabled and text else []

    def retrieve(self, query: Query) -> list[Hit]:
        if not self.config.enabled:
            return []
        texts, vectors = query.pieces.get(self.name, ((), None))
        vector = vectors[0] if texts and vectors is not None and len(vectors) else query.vector
        with self.repo.reading(query.user_id) as view:
            picks = self.relevance.pick(view.index, vector)
            facts = [(view.facts[p.fact_id], p) for p in picks]
        if query.exclude:
            # A fact only an excluded turn stated is that turn coming back.
            facts = [(f, p) for f, p in facts if not (f.source_turns and set(f.source_turns) <= query.exclude)]
        return [self._hit(fact, pick.score, pick.reason) for fact, pick in facts]

    def record(self, turn: Turn) -> None:
        """Extract facts from a finished turn; idempotent by turn id (see `extraction.py`)."""
        if self.config.enabled:
            self.relevance.reference()  # embedded here on the background worker, not in a prompt
            self.extraction.record(turn)

    def forget(self, user_id: str, turn_id: str) -> int:
        """Withdraw what a turn did to the facts (a regenerated reply): facts only it stated are
        deleted, texts it replaced or deleted come back; history keeps every step. Returns how many
        facts were deleted or reverted."""
        with self.repo.writing(user_id, now=aware(None, self.tz)) as tx:
            return forget_turn(tx, turn_id, at=tx.now)

    def problems(self) -> list[str]:
        """Real degradations of the users this process has opened: a fact file that does not parse
        (file:line; facts are not written until it is fixed), turns waiting for a memory-LLM retry,
        an unreadable pending-turns file that was set aside."""
        out = []
        for user_id, user in self.repo.loaded_users():
            with user.lock:
                if user.broken is not None:
                    out.append(f"user {user_id}: fact file unreadable, not updated until fixed: {user.broken}")
                if user.pending_problem:
                    out.append(f"user {user_id}: {user.pending_problem}")
                waiting = [p for p in user.pending if p.wait == "llm"]
            if waiting:
                last = waiting[-1]
                out.append(
                    f"user {user_id}: {len(waiting)} turn(s) await a memory-LLM retry (offline rules used meanwhile; "
                    f"{last.attempts} attempt(s) on the latest, next after {last.next_try:%Y-%m-%d %H:%M:%S}): "
                    f"{last.error}"
                )
        return out

    def close(self) -> None:
        self.repo.save_caches()

    def retry(self, user_id: str) -> int:
        """Offer the turns waiting for a memory-LLM retry to the LLM now (those due); returns how many."""
        return self.extraction.retry(user_id)

    # ------------------------------------------------------------------ older names (see `admin`)

    def facts(self, user_id: str, *, include_deleted: bool = False) -> list[Fact]:
        return self.admin.list(user_id, include_deleted=include_deleted)

    def add_fact(self, user_id: str, text: str, *, at: datetime | None = None, source: str | None = None,
                 dedupe: bool = True) -> Fact:
        return self.admin.add(user_id, text, at=at, source=source or MANUAL, dedupe=dedupe).fact

    def update_fact(self, user_id: str, fact_id: str, text: str, *, at: datetime | None = None) -> Fact:
        return self.admin.edit(user_id, fact_id, text, at=at)

    def delete_fact(self, user_id: str, fact_id: str, *, at: datetime | None = None, purge: bool = False) -> Fact:
        return self.admin.delete(user_id, fact_id, at=at, purge=purge)

    def import_fact(self, user_id: str, text: str, learned_at: datetime) -> Fact:
        return self.admin.import_facts(user_id, [(text, learned_at)])[0]

    def import_facts(self, user_id: str, items: Iterable[tuple[str, datetime]]) -> list[Fact]:
        return self.admin.import_facts(user_id, items)

    def apply(self, user_id: str, ops: Sequence[FactOp], *, at: datetime | None = None,
              source: Sequence[str] = ()) -> list[Applied]:
        """Apply operations (as an extractor would) behind the near-duplicate guard."""
        when = aware(at, self.tz)
        vectors = self.reconciler.embed_ops(ops)
        with self.repo.writing(user_id, now=when) as tx:
            return self.reconciler.apply(tx, ops, vectors, at=when, source=list(source))

    # ------------------------------------------------------------------ rendering

    def _hit(self, fact: Fact, score: float, reason: str) -> Hit:
        # The date of the current text: a fact updated yesterday was learned, as it stands, yesterday.
        date = fact.updated_at.astimezone(self.tz).date().isoformat()
        return Hit(
            store=self.name,
            text=self.prompts.render("core_item", text=fact.text, date=date),
            score=score,
            reason=reason,
            meta={"fact_id": fact.id, "learned_at": fact.learned_at.isoformat(), "updated_at": fact.updated_at.isoformat()},
        )
