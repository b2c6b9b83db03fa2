"""PostgreSQL storage backend (optional: `pip install kioku[postgres]`).

Building blocks, each a small typed repository over one `Database` (a psycopg 3 pool):

- `schema.upgrade` / `schema.check_schema`: versioned migrations (`kioku db upgrade`) and the
  start-up check;
- `PgDiaryTurns`: diary turns (append idempotent by turn id, time range, forget, edit);
- `PgTurnSearch`: the turn search index (pgvector or vectors in the worker, jieba + tsvector);
- `PgFacts`: core facts with history, transactional, safe with concurrent writers;
- `PgJournal`: the durable turn journal and job queue (`FOR UPDATE SKIP LOCKED`, leases, backoff);
- `PgWindow`: short-term window and rolling summary per (user, chat), with check-and-set;
- `transfer`: `kioku db import` / `kioku db export` between a files data folder and the database.
"""

from engine.backends.postgres.connect import Database, PgSettings, StorageUnavailableError, build_conninfo
from engine.backends.postgres.schema import SCHEMA_VERSION, SchemaError, SchemaState, check_schema, upgrade

# The repositories import psycopg types at use; import them from their modules:
#   engine.backends.postgres.diary.PgDiaryTurns, .search.PgTurnSearch, .facts.PgFacts,
#   .journal.PgJournal, .window.PgWindow, .transfer.import_character / export_character.

__all__ = [
    "SCHEMA_VERSION",
    "Database",
    "PgSettings",
    "SchemaError",
    "SchemaState",
    "StorageUnavailableError",
    "build_conninfo",
    "check_schema",
    "upgrade",
]
