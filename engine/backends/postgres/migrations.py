"""The schema, as an ordered list of migrations; the schema version is the number applied.

A migration is applied once, in its own transaction together with the version bump (DDL is
transactional in PostgreSQL), so a failed upgrade leaves the previous version intact. Never edit a
released migration: add the next one. Kept as Python (not .sql files) so they ship inside the
package with no package-data rule, and so a step can depend on whether pgvector is available.

Every row belongs to one owner: a (character, user) pair, mapped to a bigint in `owners` (a
small key keeps the per-user indexes small and lets a per-user partial index name one integer).
Times are `timestamptz` plus the UTC offset they were written with (`*_off`, seconds), so an
export writes back the same `2026-05-08T21:00:00+08:00` the files held.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg


@dataclass(frozen=True)
class Context:
    """What a migration may depend on; decided once, at the first upgrade of a database."""

    vector: bool
    """pgvector is available and used (the `embedding vector(dim)` column exists)."""
    dim: int
    """Dimension of the turn vectors (the embedder's)."""
    lexical_config: str
    """Text search configuration the lexical index is built with (`simple` or `english`)."""


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[psycopg.Connection, Context], None]


_V1_TABLES = """
CREATE TABLE owners (
    id           bigserial PRIMARY KEY,
    character_id text NOT NULL,
    user_id      text NOT NULL,
    UNIQUE (character_id, user_id)
);

-- Diary: one row per turn. Deleting (forget) sets deleted_at; the row stays so a replay of the
-- same turn id does not bring it back.
CREATE TABLE diary_turns (
    owner_id       bigint  NOT NULL REFERENCES owners (id),
    turn_id        text    NOT NULL,
    chat_id        text    NOT NULL DEFAULT 'default',
    at             timestamptz NOT NULL,
    at_off         integer NOT NULL,
    local_day      date    NOT NULL,
    tag            text    NOT NULL DEFAULT '',
    user_text      text    NOT NULL,
    assistant_text text    NOT NULL,
    resolved_dates jsonb   NOT NULL DEFAULT '[]',
    deleted_at     timestamptz,
    PRIMARY KEY (owner_id, turn_id)
);
-- The time-range lookup: an index range scan on (owner, time) over live turns only.
CREATE INDEX diary_turns_by_time ON diary_turns (owner_id, at) WHERE deleted_at IS NULL;
CREATE INDEX diary_turns_by_day ON diary_turns (owner_id, local_day) WHERE deleted_at IS NULL;

-- Digests of closed days (the files backend's memorys/digests/).
CREATE TABLE diary_digests (
    owner_id  bigint NOT NULL REFERENCES owners (id),
    local_day date   NOT NULL,
    turns     integer NOT NULL,
    text      text   NOT NULL,
    written_by text  NOT NULL DEFAULT '',
    PRIMARY KEY (owner_id, local_day)
);

-- The search index over turns. `seq` is bumped by every change (add, edit, forget), so a worker
-- that keeps a user's vectors in memory fetches only what changed since its last look.
CREATE SEQUENCE turn_search_seq;
CREATE TABLE turn_search (
    owner_id  bigint NOT NULL,
    turn_id   text   NOT NULL,
    seq       bigint NOT NULL DEFAULT nextval('turn_search_seq'),
    at        timestamptz NOT NULL,
    live      boolean NOT NULL DEFAULT true,
    lexemes   tsvector NOT NULL,
    model     text   NOT NULL DEFAULT '',
    vec       bytea,
    PRIMARY KEY (owner_id, turn_id),
    FOREIGN KEY (owner_id, turn_id) REFERENCES diary_turns (owner_id, turn_id) ON DELETE CASCADE
);
-- Lexical: each row's tsvector also holds the owner token `o<owner_id>`, so the GIN index
-- intersects the query's words with one user's rows (no btree_gin extension needed).
CREATE INDEX turn_search_lexemes ON turn_search USING gin (lexemes);
CREATE INDEX turn_search_by_time ON turn_search (owner_id, at) WHERE live;
CREATE INDEX turn_search_by_seq ON turn_search (owner_id, seq);

-- Per-user partial HNSW indexes built for users past a size (pgvector only); see search.py.
CREATE TABLE owner_vector_index (
    owner_id   bigint PRIMARY KEY REFERENCES owners (id),
    index_name text   NOT NULL,
    rows_built bigint NOT NULL,
    built_at   timestamptz NOT NULL DEFAULT now()
);

-- Core facts, in insertion order (`pos`), with their history.
CREATE TABLE facts (
    owner_id     bigint NOT NULL REFERENCES owners (id),
    fact_id      text   NOT NULL,
    pos          bigserial,
    text         text   NOT NULL,
    learned_at   timestamptz NOT NULL,
    learned_off  integer NOT NULL,
    updated_at   timestamptz NOT NULL,
    updated_off  integer NOT NULL,
    source_turns text[] NOT NULL DEFAULT '{}',
    deleted_at   timestamptz,
    deleted_off  integer,
    PRIMARY KEY (owner_id, fact_id)
);
CREATE INDEX facts_in_order ON facts (owner_id, pos);
CREATE TABLE fact_history (
    owner_id  bigint  NOT NULL,
    fact_id   text    NOT NULL,
    n         integer NOT NULL,
    text      text    NOT NULL,
    until     timestamptz NOT NULL,
    until_off integer NOT NULL,
    change    text    NOT NULL CHECK (change IN ('update', 'delete')),
    by_turn   text,
    PRIMARY KEY (owner_id, fact_id, n),
    FOREIGN KEY (owner_id, fact_id) REFERENCES facts (owner_id, fact_id) ON DELETE CASCADE
);

-- Short-term window and rolling summary, per (owner, chat).
CREATE TABLE window_messages (
    owner_id bigint NOT NULL REFERENCES owners (id),
    chat_id  text   NOT NULL,
    seq      bigserial,
    msg_id   text   NOT NULL,
    role     text   NOT NULL,
    content  text   NOT NULL,
    at       text   NOT NULL,
    tokens   integer NOT NULL,
    PRIMARY KEY (owner_id, chat_id, msg_id)
);
CREATE INDEX window_messages_in_order ON window_messages (owner_id, chat_id, seq);
CREATE TABLE window_state (
    owner_id           bigint NOT NULL REFERENCES owners (id),
    chat_id            text   NOT NULL,
    summary            text   NOT NULL DEFAULT '',
    summarized_through text,
    updated_at         text,
    version            bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (owner_id, chat_id)
);

-- The journal: every acknowledged turn, and the jobs that consume it. A job is unique per
-- (owner, turn, name), so enqueueing twice (a retried request, a replay) does nothing.
CREATE TABLE journal_turns (
    owner_id       bigint NOT NULL REFERENCES owners (id),
    turn_id        text   NOT NULL,
    chat_id        text   NOT NULL,
    at             timestamptz NOT NULL,
    at_off         integer NOT NULL,
    user_text      text   NOT NULL,
    assistant_text text   NOT NULL,
    replaces       text,
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, turn_id)
);
CREATE TABLE jobs (
    id              bigserial PRIMARY KEY,
    owner_id        bigint  NOT NULL REFERENCES owners (id),
    turn_id         text    NOT NULL,
    name            text    NOT NULL,
    ordered         boolean NOT NULL DEFAULT false,
    state           text    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done')),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    claimed_by      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    done_at         timestamptz,
    UNIQUE (owner_id, turn_id, name)
);
-- What a claim looks at: unfinished jobs only (done jobs leave this partial index).
CREATE INDEX jobs_open ON jobs (id) WHERE state <> 'done';
CREATE INDEX jobs_open_per_owner ON jobs (owner_id, name, id) WHERE state <> 'done';
"""


def _v1(conn: psycopg.Connection, ctx: Context) -> None:
    conn.execute(_V1_TABLES)
    if ctx.vector:
        conn.execute(f"ALTER TABLE turn_search ADD COLUMN embedding vector({int(ctx.dim)})")


# v2: what the core store needs to run on this backend (not only hold imported facts): a
# revision may be a `forget` (a regenerated turn withdrawn) and names every turn that made it;
# per user a version (bumped by every fact write, so a worker reloads only after a change) and
# the turns waiting for a memory-LLM retry (the files backend's core_pending.json).
_V2 = """
ALTER TABLE fact_history DROP CONSTRAINT fact_history_change_check;
ALTER TABLE fact_history ADD CONSTRAINT fact_history_change_check CHECK (change IN ('update', 'delete', 'forget'));
ALTER TABLE fact_history ADD COLUMN by_turns text[] NOT NULL DEFAULT '{}';
UPDATE fact_history SET by_turns = ARRAY[by_turn] WHERE by_turn IS NOT NULL;
CREATE TABLE core_state (
    owner_id bigint PRIMARY KEY REFERENCES owners (id),
    version  bigint NOT NULL DEFAULT 0,
    pending  jsonb  NOT NULL DEFAULT '[]'
);
"""


def _v2(conn: psycopg.Connection, ctx: Context) -> None:
    conn.execute(_V2)


# v3: the per-half vectors (user line, assistant line) next to the whole-turn one, as float16
# bytes (2, dim): the diary's search ranks halves (engine.search.rank), and every worker's copy of
# a user's index (mirror.py) reads them from here instead of embedding again.
def _v3(conn: psycopg.Connection, ctx: Context) -> None:
    conn.execute("ALTER TABLE turn_search ADD COLUMN halves bytea")
    # Which database a worker's search copy was made from (it starts again on another one).
    conn.execute("INSERT INTO kioku_meta (key, value) VALUES ('instance', gen_random_uuid()::text) "
                 "ON CONFLICT (key) DO NOTHING")


# v4: the diary's words' vectors (query expansion, `engine.search.expand`), shared by every worker:
# written beside the turn that brings a new word, so a worker's fresh copy of a user's index
# expands queries from its first search as a warm one does (it used to embed them in the
# background, ranking without them meanwhile). float32, as the files backend adds them.
def _v4(conn: psycopg.Connection, ctx: Context) -> None:
    conn.execute("CREATE TABLE term_vectors (term text PRIMARY KEY, vec bytea NOT NULL)")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "owners, diary turns + search index, facts + history, window, journal + jobs", _v1),
    Migration(2, "core facts: forget revisions, revision turns, per-user version and pending turns", _v2),
    Migration(3, "turn search: per-half vectors (user line, assistant line)", _v3),
    Migration(4, "term vectors for query expansion, shared by every worker", _v4),
)
