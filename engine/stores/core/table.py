"""The facts of one user in memory, and their column snapshot in the cache.

Opening a user whose `core_mem.yml` is unchanged must not parse YAML, and must not build 100,000
`Fact` objects either: the snapshot is stored as columns (`to_snapshot`), decoded in one
`json.loads` of a few flat lists, and `FactTable` makes a `Fact` only when one is asked for
(a retrieval hit, a listing, a write). Building every object up front cost ~2 s at 100,000 facts,
mostly in the garbage collector walking the freshly made objects.

Snapshot layout (JSON, inside `core_state.json`; rows are in file order)::

    {"id": [...], "text": [...], "learned_at": [...],
     "updated_at": [null | iso, ...],       # null: same as learned_at (the usual case)
     "sources": [[turn ids], ...],          # each distinct source_turns list once
     "source_of": [row's index into sources, ...],
     "history": {"<row>": [[text, until, change, by], ...]},   # only facts that have one
     "deleted_at": {"<row>": iso}}                          # only deleted facts

Times are written with `isoformat(timespec="seconds")`, as in `core_mem.yml`, so a fact read back
from the snapshot equals the one parsed from the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from datetime import datetime
from typing import Any

from engine.stores.core.facts import Fact, Revision

_KEYS = ("id", "text", "learned_at", "updated_at", "sources", "source_of", "history", "deleted_at")


class FactTable(MutableMapping[str, Fact]):
    """Fact id -> Fact, in file order. Rows from a snapshot become `Fact`s on first access.

    Not thread-safe on its own (a read may fill in a row): use it under the user's lock, as every
    other piece of a user's state is.
    """

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        # A value is a Fact, or the int row of a snapshot fact not built yet. Replacing a row by
        # its Fact keeps the key's position, so the order stays the file's.
        self._items: dict[str, Fact | int] = {f.id: f for f in facts}
        self._columns: Mapping[str, Any] = {}
        self._unbuilt = 0
        self._build: Callable[[int], Fact] | None = None

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any]) -> FactTable:
        """Raises ValueError, KeyError or TypeError on a snapshot that is not well formed."""
        if not isinstance(snapshot, Mapping) or set(snapshot) != set(_KEYS):
            raise ValueError("the facts snapshot does not have the expected columns")
        ids = snapshot["id"]
        n = len(ids)
        if any(len(snapshot[k]) != n for k in ("text", "learned_at", "updated_at", "source_of")):
            raise ValueError("the facts snapshot columns differ in length")
        # Rows are built later, outside the cache's error handling: check here what can be checked
        # without building them, so that a damaged cache is rebuilt rather than failing a query.
        source_of = snapshot["source_of"]
        if n and not (min(source_of) >= 0 and max(source_of) < len(snapshot["sources"])):
            raise ValueError("the facts snapshot points at a source list it does not have")
        if not all(0 <= int(row) < n for row in (*snapshot["history"], *snapshot["deleted_at"])):
            raise ValueError("the facts snapshot has history for a row it does not have")
        table = cls()
        table._items = dict(zip(ids, range(n)))
        if len(table._items) != n:
            raise ValueError("the facts snapshot repeats a fact id")
        table._columns = snapshot
        table._unbuilt = n
        return table

    # ------------------------------------------------------------------ mapping

    def __getitem__(self, fact_id: str) -> Fact:
        value = self._items[fact_id]
        if type(value) is int:
            value = self._items[fact_id] = self._builder()(value)
            self._unbuilt -= 1
        return value  # type: ignore[return-value]

    def __setitem__(self, fact_id: str, fact: Fact) -> None:
        self._items[fact_id] = fact

    def __delitem__(self, fact_id: str) -> None:
        del self._items[fact_id]

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list[Fact]:  # type: ignore[override]
        """Every fact, in file order (a list: each caller iterates all of them once)."""
        if self._unbuilt:
            # One tight loop: per-row __getitem__ calls cost ~3x more at 100,000 facts.
            build, items = self._builder(), self._items
            for fact_id, row in [(k, v) for k, v in items.items() if type(v) is int]:
                items[fact_id] = build(row)  # type: ignore[arg-type]
            self._unbuilt, self._columns, self._build = 0, {}, None
        return list(self._items.values())  # type: ignore[arg-type]

    # ------------------------------------------------------------------ snapshot

    def _builder(self) -> Callable[[int], Fact]:
        """The function making row `i`'s Fact, with the columns bound once."""
        if self._build is None:
            c = self._columns
            ids, texts, learned_at, updated_at, source_of = (
                c["id"], c["text"], c["learned_at"], c["updated_at"], c["source_of"]
            )
            # One shared tuple per distinct source list (immutable, so sharing is safe).
            sources = [tuple(str(s) for s in turns) for turns in c["sources"]]
            history, deleted_at, parse = c["history"], c["deleted_at"], datetime.fromisoformat

            def build(row: int) -> Fact:
                learned = parse(learned_at[row])
                updated = updated_at[row]
                revisions, deleted = (), None
                if history or deleted_at:  # sparse columns: most users have few such facts
                    key = str(row)
                    revisions = tuple(Revision(r[0], parse(r[1]), r[2], tuple(r[3]) if len(r) > 3 else ())
                                      for r in history.get(key, ()))
                    deleted = deleted_at.get(key)
                return Fact(
                    ids[row],
                    texts[row],
                    learned,
                    learned if updated is None else parse(updated),
                    sources[source_of[row]],
                    revisions,
                    None if deleted is None else parse(deleted),
                )

            self._build = build
        return self._build


def to_snapshot(facts: Iterable[Fact]) -> dict[str, Any]:
    """The column form of `facts` (see the module docstring); inverse of `FactTable.from_snapshot`."""
    columns: dict[str, Any] = {k: [] for k in ("id", "text", "learned_at", "updated_at", "source_of")}
    sources: dict[tuple[str, ...], int] = {}
    history: dict[str, list[list[str]]] = {}
    deleted: dict[str, str] = {}
    for row, fact in enumerate(facts):
        learned = _iso(fact.learned_at)
        updated = _iso(fact.updated_at)
        columns["id"].append(fact.id)
        columns["text"].append(fact.text)
        columns["learned_at"].append(learned)
        columns["updated_at"].append(None if updated == learned else updated)
        columns["source_of"].append(sources.setdefault(tuple(fact.source_turns), len(sources)))
        if fact.history:
            history[str(row)] = [[r.text, _iso(r.until), r.change, list(r.by)] for r in fact.history]
        if fact.deleted_at is not None:
            deleted[str(row)] = _iso(fact.deleted_at)
    columns["sources"] = [list(s) for s in sources]
    columns["history"] = history
    columns["deleted_at"] = deleted
    return columns


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds")
