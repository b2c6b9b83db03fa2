"""The search index over diary turns in PostgreSQL: vectors + lexical, fused by reciprocal rank.

Vectors, with pgvector (`SchemaState.vector_mode == "pgvector"`):
- a user's search reads only that user's rows: an exact scan over the `(owner_id, at)` index
  (the time range, when given, narrows it). One HNSW index over all users cannot do this:
  pgvector (0.6) filters *after* the graph walk; measured on 1,000 users x 100 turns
  (bench/bench_pg.py), recall@10 against exact is 0.15 / 0.35 / 0.70 at ef_search 40 / 200 / 1000;
- a user past `hnsw_min_rows` turns gets a partial HNSW index of their own
  (`WHERE owner_id = <id> AND live`, built by `ensure_owner_index`, a background job); queries
  without a time range use it with `ef_search` (100: recall@10 0.996 against exact, 10 ms at
  100,000 turns, where the exact scan takes ~350 ms on a loaded 2-core machine).
Without pgvector ("worker" mode) vectors are float32 bytes in the table; each worker keeps a
user's matrix in memory (LRU-bounded), fetches only rows changed since its last look (by `seq`),
and scores with numpy.

Lexical: a `tsvector` of the jieba-segmented texts in a GIN index. Each row also holds the owner
lexeme `'owner <id>'` (with a space, which the text parser never produces), so a query
`owner AND word` intersects the word's posting list with one user's rows. Words are weighted by
their IDF within the user's turns; words in more than `df_cap` of them are skipped like stopwords
(they would rank nothing and cost a scan).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg

from engine.backends.postgres.connect import Database
from engine.backends.postgres.lexical import document_text, query_text
from engine.backends.postgres.owners import Owners, split_time
from engine.backends.postgres.schema import SchemaState
from engine.backends.postgres.worker_vectors import WorkerVectors

_SEARCH_LOCK = 1
"""Advisory-lock kind for a user's search rows (see `lock_owner_index`)."""
_BUILD_LOCK = 2
"""Advisory-lock kind held (per session) while one worker builds a user's HNSW index."""


@dataclass(frozen=True)
class IndexedTurn:
    """What the index needs of one turn."""

    turn_id: str
    at: datetime
    user: str
    assistant: str
    vector: np.ndarray | None = None
    """(dim,) float32, L2-normalised (passage role) of the whole turn; None: lexical only until re-added."""
    halves: np.ndarray | None = None
    """(2, dim): the user line's and the assistant line's vectors (zeros for an empty line), as
    `turn_vectors` makes them; None: the search mirror embeds them itself until re-added."""


@dataclass(frozen=True)
class TurnHit:
    """One turn found by `PgTurnSearch.search`."""

    turn_id: str
    score: float
    """Fused reciprocal-rank score (higher is better)."""
    vector_rank: int | None
    """1-based rank among the vector results, None if not among them."""
    lexical_rank: int | None
    cosine: float | None
    lexical_score: float | None


def owner_token(owner: int) -> str:
    return f"owner {int(owner)}"


def lock_owner_index(conn: psycopg.Connection, owner: int) -> None:
    """Serialise changes to one user's search rows until commit, so `seq` values of one user
    commit in order and a worker's "changed since seq N" never skips a late commit."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (int(owner) * 8 + _SEARCH_LOCK,))


def tombstone(conn: psycopg.Connection, owner: int, turn_id: str) -> None:
    """Take a turn out of the index (forget, or an edit until it is re-added)."""
    lock_owner_index(conn, owner)
    conn.execute(
        "UPDATE turn_search SET live = false, vec = NULL, lexemes = ''::tsvector, seq = nextval('turn_search_seq') "
        "WHERE owner_id = %s AND turn_id = %s",
        (owner, turn_id),
    )


def rrf(rankings: Sequence[Sequence[str]], *, k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each list adds 1 / (k + rank) to the ids it holds."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


class PgTurnSearch:
    """Hybrid search over one character's diary turns, per user."""

    def __init__(self, db: Database, character_id: str, *, state: SchemaState, owners: Owners | None = None,
                 hnsw_min_rows: int = 10_000, ef_search: int = 100, df_cap: int = 2_000, rrf_k: int = 60,
                 worker_cache_rows: int = 2_000_000) -> None:
        self.db = db
        self.state = state
        self.owners = owners or Owners(character_id)
        self.hnsw_min_rows = hnsw_min_rows
        self.ef_search = ef_search
        self.df_cap = df_cap
        self.rrf_k = rrf_k
        self.pgvector = state.vector_mode == "pgvector"
        self._cache = WorkerVectors(max_rows=worker_cache_rows, dim=state.dim)
        self._registered: weakref.WeakSet = weakref.WeakSet()
        self._owner_index: dict[int, str | None] = {}

    # -- writing ------------------------------------------------------------------------------

    def add(self, user_id: str, turns: Sequence[IndexedTurn]) -> int:
        """Index (or re-index) turns of the diary; a turn not in the diary or forgotten is
        skipped. Returns how many rows were written."""
        if not turns:
            return 0
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id)
            self._register(conn)
            lock_owner_index(conn, owner)
            column = "embedding" if self.pgvector else "vec"
            written = 0
            with conn.cursor() as cur:
                for t in turns:
                    at, _ = split_time(t.at, what=f"turn {t.turn_id!r} time")
                    cur.execute(
                        f"INSERT INTO turn_search (owner_id, turn_id, at, lexemes, model, {column}, halves) "
                        f"SELECT d.owner_id, d.turn_id, %s, array_to_tsvector(ARRAY[%s]) || to_tsvector(%s::regconfig, %s), "
                        f"'', %s, %s FROM diary_turns d WHERE d.owner_id = %s AND d.turn_id = %s AND d.deleted_at IS NULL "
                        f"ON CONFLICT (owner_id, turn_id) DO UPDATE SET at = EXCLUDED.at, lexemes = EXCLUDED.lexemes, "
                        f"{column} = EXCLUDED.{column}, halves = EXCLUDED.halves, live = true, "
                        f"seq = nextval('turn_search_seq')",
                        (at, owner_token(owner), self.state.lexical_config, document_text(t.user, t.assistant),
                         self._vector_param(t.vector), self._halves_param(t.halves), owner, t.turn_id),
                    )
                    written += cur.rowcount
            return written

    def missing(self, user_id: str, *, limit: int = 1000) -> list[str]:
        """Ids of live diary turns that have no search row or no vectors (to index them)."""
        column = "embedding" if self.pgvector else "vec"
        rows = self.owners.rows(
            self.db, user_id,
            f"SELECT d.turn_id FROM diary_turns d LEFT JOIN turn_search s USING (owner_id, turn_id) "
            f"WHERE d.owner_id = %s AND d.deleted_at IS NULL AND (s.turn_id IS NULL OR NOT s.live OR s.{column} IS NULL "
            f"OR s.halves IS NULL) ORDER BY d.at LIMIT %s", limit)
        return [r[0] for r in rows]

    def ensure_owner_index(self, user_id: str) -> str | None:
        """Build the user's partial HNSW index once they have `hnsw_min_rows` indexed turns
        (pgvector only; CREATE INDEX CONCURRENTLY, so writers are not blocked). Returns its name,
        None when the user is below the threshold (or another worker is building it now)."""
        if not self.pgvector:
            return None
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
        return None if owner is None else self._ensure_index(owner)

    def index_large_users(self) -> list[str]:
        """Build the HNSW index of every user of this character past `hnsw_min_rows` that has
        none yet (`kioku db index`; the diary's record job calls `ensure_owner_index`)."""
        if not self.pgvector:
            return []
        with self.db.tx() as conn:
            owners = [r[0] for r in conn.execute(
                "SELECT o.id FROM owners o WHERE o.character_id = %s "
                "AND NOT EXISTS (SELECT 1 FROM owner_vector_index i WHERE i.owner_id = o.id) "
                "AND (SELECT count(*) FROM turn_search s WHERE s.owner_id = o.id AND s.live) >= %s ORDER BY o.id",
                (self.owners.character_id, self.hnsw_min_rows)).fetchall()]
        return [name for owner in owners if (name := self._ensure_index(owner)) is not None]

    def _ensure_index(self, owner: int) -> str | None:
        with self.db.tx() as conn:
            row = conn.execute("SELECT index_name FROM owner_vector_index WHERE owner_id = %s", (owner,)).fetchone()
            if row is not None:
                self._owner_index[owner] = row[0]
                return row[0]
            rows = conn.execute("SELECT count(*) FROM turn_search WHERE owner_id = %s AND live", (owner,)).fetchone()[0]
        if rows < self.hnsw_min_rows:
            return None
        name = f"turn_search_hnsw_o{int(owner)}"
        with self.db.connection() as conn:
            conn.autocommit = True
            # One builder per user across workers: the others go on and find it built later.
            if not conn.execute("SELECT pg_try_advisory_lock(%s)", (int(owner) * 8 + _BUILD_LOCK,)).fetchone()[0]:
                conn.autocommit = False
                return None
            try:
                # A build over 100k rows takes minutes; the pool's per-statement cap is for queries.
                conn.execute("SET statement_timeout = 0")
                conn.execute(
                    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON turn_search "
                    f"USING hnsw (embedding vector_cosine_ops) WHERE owner_id = {int(owner)} AND live"
                )
                conn.execute(
                    "INSERT INTO owner_vector_index (owner_id, index_name, rows_built) VALUES (%s, %s, %s) "
                    "ON CONFLICT (owner_id) DO NOTHING", (owner, name, rows))
            finally:
                conn.execute("RESET statement_timeout")
                conn.execute("SELECT pg_advisory_unlock(%s)", (int(owner) * 8 + _BUILD_LOCK,))
                conn.autocommit = False
        self._owner_index[owner] = name
        return name

    # -- searching ----------------------------------------------------------------------------

    def search(self, user_id: str, text: str, vector: np.ndarray | None, *, k: int = 20,
               start: datetime | None = None, end: datetime | None = None, depth: int | None = None) -> list[TurnHit]:
        """The user's best `k` turns for a query, fusing the top `depth` (default 3k) of each side."""
        depth = depth or 3 * k
        vec = self.vector_search(user_id, vector, k=depth, start=start, end=end) if vector is not None else []
        lex = self.lexical_search(user_id, text, k=depth, start=start, end=end) if text.strip() else []
        vrank = {t: (i + 1, s) for i, (t, s) in enumerate(vec)}
        lrank = {t: (i + 1, s) for i, (t, s) in enumerate(lex)}
        fused = rrf([[t for t, _ in vec], [t for t, _ in lex]], k=self.rrf_k)[:k]
        return [
            TurnHit(turn_id=t, score=s, vector_rank=vrank.get(t, (None,))[0], lexical_rank=lrank.get(t, (None,))[0],
                    cosine=vrank[t][1] if t in vrank else None, lexical_score=lrank[t][1] if t in lrank else None)
            for t, s in fused
        ]

    def vector_search(self, user_id: str, vector: np.ndarray, *, k: int = 20, start: datetime | None = None,
                      end: datetime | None = None, exact: bool | None = None) -> list[tuple[str, float]]:
        """(turn id, cosine) of the user's nearest turns, best first."""
        vector = np.asarray(vector, dtype=np.float32)
        if vector.shape != (self.state.dim,):
            raise ValueError(f"query vector has shape {vector.shape}, the index holds {self.state.dim}-dim vectors")
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return []
            if not self.pgvector:
                return self._cache.search(conn, owner, vector, k=k, start=start, end=end)
            self._register(conn)
            index = self._index_of(conn, owner)
            if exact is None:
                exact = index is None or start is not None or end is not None
            if not exact and index is not None:
                conn.execute(f"SET LOCAL hnsw.ef_search = {max(int(self.ef_search), k)}")
                # We decided on the graph for this user; a small table's cost estimate would pick a sort.
                conn.execute("SET LOCAL enable_sort = off")
                # The owner id is written into the SQL (an int): the planner matches the partial
                # index's predicate only against a constant, not a bound parameter.
                rows = conn.execute(
                    f"SELECT turn_id, 1 - (embedding <=> %s) FROM turn_search WHERE owner_id = {int(owner)} AND live "
                    f"ORDER BY embedding <=> %s LIMIT %s", (vector, vector, k)).fetchall()
            else:
                # OFFSET 0 keeps the distance computed per row of the range: exact, never a graph walk.
                rows = conn.execute(
                    "SELECT turn_id, 1 - d FROM (SELECT turn_id, embedding <=> %s AS d FROM turn_search "
                    "WHERE owner_id = %s AND live AND embedding IS NOT NULL AND at >= %s AND at < %s OFFSET 0) s "
                    "ORDER BY d LIMIT %s",
                    (vector, owner, start or _MIN, end or _MAX, k)).fetchall()
            return [(r[0], float(r[1])) for r in rows]

    def lexical_search(self, user_id: str, text: str, *, k: int = 20, start: datetime | None = None,
                       end: datetime | None = None) -> list[tuple[str, float]]:
        """(turn id, IDF-weighted score) of the user's turns sharing words with `text`."""
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False)
            if owner is None:
                return []
            rows = conn.execute(_LEXICAL_SQL, {
                "cfg": self.state.lexical_config, "text": query_text(text), "owner": owner,
                "otq": f"'{owner_token(owner)}'", "cap": self.df_cap, "k": k,
                "start": start or _MIN, "end": end or _MAX,
            }).fetchall()
            return [(r[0], float(r[1])) for r in rows]

    def explain_vector(self, user_id: str, vector: np.ndarray, *, k: int = 20, analyze: bool = False) -> str:
        """The plan `vector_search` runs for this user (exact scan or their HNSW index); with
        `analyze`, as run (rows read, rows removed by a filter)."""
        how = "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF" if analyze else "COSTS OFF"
        with self.db.tx() as conn:
            owner = self.owners.get(conn, user_id, create=False) or 0
            self._register(conn)
            if self._index_of(conn, owner) is None:
                sql = (f"EXPLAIN ({how}) SELECT turn_id FROM (SELECT turn_id, embedding <=> %s AS d FROM turn_search "
                       f"WHERE owner_id = {int(owner)} AND live AND embedding IS NOT NULL OFFSET 0) s ORDER BY d LIMIT %s")
                params = (np.asarray(vector, np.float32), k)
            else:
                conn.execute("SET LOCAL enable_sort = off")
                sql = (f"EXPLAIN ({how}) SELECT turn_id FROM turn_search WHERE owner_id = {int(owner)} AND live "
                       "ORDER BY embedding <=> %s LIMIT %s")
                params = (np.asarray(vector, np.float32), k)
            return "\n".join(r[0] for r in conn.execute(sql, params).fetchall())

    # -- helpers --------------------------------------------------------------------------------

    def _index_of(self, conn: psycopg.Connection, owner: int) -> str | None:
        if owner not in self._owner_index or self._owner_index[owner] is None:
            row = conn.execute("SELECT index_name FROM owner_vector_index WHERE owner_id = %s", (owner,)).fetchone()
            self._owner_index[owner] = row[0] if row else None
        return self._owner_index[owner]

    def _register(self, conn: psycopg.Connection) -> None:
        if self.pgvector and conn not in self._registered:
            from pgvector.psycopg import register_vector

            register_vector(conn)
            self._registered.add(conn)

    def _vector_param(self, vector: np.ndarray | None):
        if vector is None:
            return None
        v = np.asarray(vector, dtype=np.float32)
        if v.shape != (self.state.dim,):
            raise ValueError(f"turn vector has shape {v.shape}, the index holds {self.state.dim}-dim vectors")
        return v if self.pgvector else v.astype("<f4").tobytes()

    def _halves_param(self, halves: np.ndarray | None) -> bytes | None:
        if halves is None:
            return None
        h = np.asarray(halves, dtype=np.float32)
        if h.shape != (2, self.state.dim):
            raise ValueError(f"half vectors have shape {h.shape}, the index holds (2, {self.state.dim})")
        return h.astype("<f2").tobytes()


_MIN = datetime.fromisoformat("0001-01-02T00:00:00+00:00")
_MAX = datetime.fromisoformat("9999-12-30T00:00:00+00:00")

# One round trip: normalise the query's words with the index's configuration, count each word's
# documents among the user's turns (capped), weight by IDF, sum over the words a turn contains.
_LEXICAL_SQL = """
WITH words AS (
    SELECT DISTINCT w FROM unnest(tsvector_to_array(to_tsvector(%(cfg)s::regconfig, %(text)s))) AS w
), q AS MATERIALIZED (
    SELECT w, (%(otq)s::tsquery && ('''' || replace(replace(w, E'\\\\', E'\\\\\\\\'), '''', '''''') || '''')::tsquery) AS tq
    FROM words
), n AS MATERIALIZED (
    SELECT count(*)::float8 AS n FROM turn_search WHERE owner_id = %(owner)s AND live
), df AS MATERIALIZED (
    SELECT w, tq, (SELECT count(*) FROM (SELECT 1 FROM turn_search t WHERE t.lexemes @@ q.tq LIMIT %(cap)s) c) AS df
    FROM q
), scored AS (
    SELECT m.turn_id, max(m.at) AS at, sum(ln(1 + (n.n - df.df + 0.5) / (df.df + 0.5))) AS score
    FROM df CROSS JOIN n
    CROSS JOIN LATERAL (
        SELECT t.turn_id, t.at FROM turn_search t
        WHERE t.lexemes @@ df.tq AND t.at >= %(start)s AND t.at < %(end)s
    ) m
    WHERE df.df < %(cap)s
    GROUP BY m.turn_id
)
SELECT turn_id, score FROM scored ORDER BY score DESC, at DESC LIMIT %(k)s
"""
