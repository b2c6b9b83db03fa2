"""`kioku db upgrade | status | import | export | index`, and the storage line `kioku serve` prints at start.

Kept out of `engine/cli.py` (which only registers the command): everything here needs the
`postgres` extra, imported when a `db` command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.errors import ConfigError

EXAMPLE = ("KIOKU_PG_PASSWORD=... kioku db upgrade --config config.yaml   |   kioku db import data/   |   "
           "kioku db export backup/")


def add_parser(sub: Any, command: Any, common: Any) -> tuple[argparse.ArgumentParser, Any]:
    """Register `kioku db` (`command` is cli's `_command`, `common` its `_common`)."""
    p = command(sub, "db", help="PostgreSQL storage: apply migrations, show the schema, import a data folder, export",
                example=EXAMPLE)
    p.add_argument("action", choices=["upgrade", "status", "import", "export", "index"],
                   help="index: build the per-user HNSW vector index of every user past the size threshold "
                        "(workers also do it as users grow)")
    p.add_argument("folder", type=Path, nargs="?", default=None,
                   help="import: the files data folder to copy from (holding agents/); export: the folder to write")
    p.add_argument("--character", action="append", default=None,
                   help="only this character (repeatable; default: every character found)")
    p.add_argument("--vector", choices=["auto", "require", "off"], default="auto",
                   help="upgrade of a new database: use pgvector when available (auto), insist, or never")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    common(p, user=False)
    return p, run


def run(args: argparse.Namespace) -> int:
    from engine.config import open_config

    config = open_config(path=args.config, data_dir=args.data_dir)
    if config.storage.backend != "postgres" or not config.storage.url:
        raise ConfigError("kioku db needs storage.backend: postgres and storage.url in the config "
                          "(or KIOKU__STORAGE__BACKEND=postgres KIOKU__STORAGE__URL=postgresql://...)")
    from engine.backends.postgres import Database, check_schema, upgrade
    from engine.backends.postgres.backend import settings_of

    progress = not args.no_progress
    with Database(settings_of(config.storage)) as db:
        if args.action == "upgrade":
            from engine.factory import make_embedder

            with db.connection() as conn:
                state = upgrade(conn, vector=args.vector, dim=int(make_embedder(config.embedder).dim))
            print(f"kioku: {state.describe()}")
            return 0
        with db.tx() as conn:
            state = check_schema(conn)
        if args.action == "status":
            print(f"kioku: {state.describe()}")
            return 0
        if args.action == "index":
            return _index(db, state, args.character)
        if args.folder is None:
            raise ConfigError(f"kioku db {args.action} needs a folder")
        if args.action == "import":
            return _import(db, state, config, args.folder, args.character, progress)
        return _export(db, args.folder, args.character, progress)


def _import(db: Any, state: Any, config: Any, folder: Path, only: list[str] | None, progress: bool) -> int:
    from engine.character import list_characters
    from engine.factory import make_embedder, make_timezone
    from engine.backends.postgres.transfer import import_character

    if not (folder / "agents").is_dir():
        raise ConfigError(f"{folder}: not a kioku data folder (no agents/ inside)")
    embedder = make_embedder(config.embedder)
    tz = make_timezone(config.timezone)
    for character_id in only or list_characters(folder):
        report = import_character(db, folder, character_id, tz=tz, state=state, progress=progress,
                                  embed=lambda texts: embedder.embed(list(texts), role="passage"))
        print(f"kioku: {character_id}: {report.users} user(s); turns {report.turns_added} new of {report.turns_seen}; "
              f"facts {report.facts_added} new of {report.facts_seen}; window messages {report.window_messages_added} "
              f"new; {report.indexed} turn(s) indexed")
        for problem in report.problems:
            print(f"kioku: {character_id}: skipped: {problem}")
    return 0


def _index(db: Any, state: Any, only: list[str] | None) -> int:
    from engine.backends.postgres.search import PgTurnSearch

    if state.vector_mode != "pgvector":
        print("kioku: no pgvector in this database: vectors are searched in the worker, there is no index to build")
        return 0
    with db.tx() as conn:
        found = [r[0] for r in conn.execute("SELECT DISTINCT character_id FROM owners ORDER BY 1").fetchall()]
    for character_id in only or found:
        built = PgTurnSearch(db, character_id, state=state).index_large_users()
        print(f"kioku: {character_id}: {len(built)} HNSW index(es) built" + (f" ({', '.join(built)})" if built else ""))
    return 0


def _export(db: Any, folder: Path, only: list[str] | None, progress: bool) -> int:
    from engine.backends.postgres.transfer import export_character

    with db.tx() as conn:
        found = [r[0] for r in conn.execute("SELECT DISTINCT character_id FROM owners ORDER BY 1").fetchall()]
    for character_id in only or found:
        report = export_character(db, folder, character_id, progress=progress)
        print(f"kioku: {character_id}: {report.users} user(s), {report.turns} turns in {report.day_files} day files, "
              f"{report.facts} facts, {report.window_messages} window messages -> {folder / 'agents' / character_id}")
    print("kioku: the character folders themselves (character.yaml, world book) are not in the database: "
          "copy them next to the exported users/")
    return 0


def storage_line(config: Any) -> str | None:
    """What `kioku serve` says about storage at start (None for the files backend). Opens the
    backend, so a server that is down, or a schema that is older or newer, stops the start here
    with the reason."""
    if config.storage.backend != "postgres":
        return None
    from engine.backends.postgres.backend import open_backend

    return f"kioku: storage {open_backend(config.storage).describe()}"
