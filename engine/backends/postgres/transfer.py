"""`kioku db import` / `kioku db export`: between a files data folder and the database.

Both directions go through the files backend's own readers and writers (day files, digests,
`core_mem.yml`, `history.yaml` + `brain.yaml`), so what the files hold and what the database
holds mean the same: every turn (id, time with its offset, tag, texts), every fact with its
history, the window and the summary. Import is idempotent (ids are kept; running it again adds
nothing) and shows a progress bar; export writes complete files atomically, so a user is never
locked in. The world book stays in the character folder and is not moved.

Import reads the files without repairing them (readers never write): a torn or broken item is
skipped and reported in `ImportReport.problems` with its file and line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import yaml

from engine.errors import DataFileError
from engine.fileio import atomic_write_text, atomic_write_yaml, read_text_strict
from engine.paths import CharacterPaths, character_paths
from engine.shortterm.backend import Brain, FileBackend
from engine.backends.postgres.connect import Database
from engine.backends.postgres.diary import PgDiaryTurns, StoredTurn
from engine.backends.postgres.facts import PgFacts
from engine.backends.postgres.owners import Owners
from engine.backends.postgres.schema import SchemaState
from engine.backends.postgres.mirror import turn_vectors
from engine.backends.postgres.search import IndexedTurn, PgTurnSearch
from engine.backends.postgres.window import PgWindow
from engine.stores.core.facts import dump_facts, parse_facts
from engine.stores.diary.dayfile import DAY_FILE, day_file_name, load_day
from engine.stores.diary.entry import format_entry

log = logging.getLogger(__name__)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> (n, dim) float32 L2-normalised passage vectors (the configured embedder)."""


@dataclass
class ImportReport:
    """What one `import_character` call did."""

    users: int = 0
    turns_added: int = 0
    turns_seen: int = 0
    facts_added: int = 0
    facts_seen: int = 0
    window_messages_added: int = 0
    indexed: int = 0
    problems: list[str] = field(default_factory=list)
    """Items that could not be read, each with its file and line; the rest was imported."""


def import_character(db: Database, data_dir: Path, character_id: str, *, tz: ZoneInfo, state: SchemaState,
                     embed: Embed | None = None, progress: bool = True, batch: int = 256) -> ImportReport:
    """Copy every user of one character from `data_dir` into the database (idempotent).

    With `embed`, the turns are also indexed for vector search (lexical indexing needs no model);
    without it they are indexed lexically and `PgTurnSearch.missing` lists them for a reindex."""
    paths = character_paths(data_dir, character_id)
    owners = Owners(character_id)
    diary, facts, window = PgDiaryTurns(db, character_id, owners=owners), PgFacts(db, character_id, owners=owners), \
        PgWindow(db, character_id, owners=owners)
    search = PgTurnSearch(db, character_id, state=state, owners=owners)
    report = ImportReport()
    users = sorted(p.name for p in (paths.root / "users").iterdir() if p.is_dir()) if (paths.root / "users").is_dir() else []
    bar = _bar(users, progress, f"import {character_id}")
    for user_id in bar:
        report.users += 1
        up = paths.user(user_id)
        turns = _read_turns(up.diary_dir, tz, report)
        report.turns_seen += len(turns)
        report.turns_added += diary.append_many(user_id, turns)
        for day, turns_n, text, by in _read_digests(up.diary_dir / "digests"):
            diary.set_digest(user_id, day, turns=turns_n, text=text, by=by)
        report.indexed += _index(search, user_id, turns, embed, batch)
        if up.core_file.exists():
            try:
                found = parse_facts(read_text_strict(up.core_file), path=up.core_file, tz=tz,
                                    default_time=datetime.fromtimestamp(up.core_file.stat().st_mtime, tz))
            except DataFileError as exc:
                report.problems.append(str(exc))
                found = []
            report.facts_seen += len(found)
            report.facts_added += facts.put(user_id, found)
        report.window_messages_added += _import_window(window, paths, user_id)
    return report


def _bar(items: list, progress: bool, desc: str):
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="user")


def _read_turns(diary_dir: Path, tz: ZoneInfo, report: ImportReport) -> list[StoredTurn]:
    turns: list[StoredTurn] = []
    if not diary_dir.is_dir():
        return turns
    for path in sorted(p for p in diary_dir.iterdir() if DAY_FILE.match(p.name)):
        try:
            load = load_day(path, tz=tz, repair=False)
        except DataFileError as exc:
            report.problems.append(str(exc))
            continue
        report.problems.extend(load.problems)
        turns.extend(StoredTurn.from_entry(e) for e in load.entries)
    return turns


def _read_digests(folder: Path) -> list[tuple[date, int, str, str]]:
    out = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - a safe loader
            out.append((date.fromisoformat(str(data["date"])), int(data["turns"]), str(data["digest"]),
                        str(data.get("by", ""))))
        except (OSError, yaml.YAMLError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
            log.warning("import: digest %s skipped (%s); it is derived and will be written again", path, exc)
    return out


def _index(search: PgTurnSearch, user_id: str, turns: list[StoredTurn], embed: Embed | None, batch: int) -> int:
    done = 0
    for i in range(0, len(turns), batch):
        chunk = turns[i : i + batch]
        if embed is None:
            done += search.add(user_id, [IndexedTurn(t.id, t.at, t.user, t.assistant) for t in chunk])
            continue
        vectors = turn_vectors(embed, [(t.user, t.assistant) for t in chunk], dim=search.state.dim)
        done += search.add(user_id, [IndexedTurn(t.id, t.at, t.user, t.assistant, v[2], v[:2])
                                     for t, v in zip(chunk, vectors)])
    return done


def _import_window(window: PgWindow, paths: CharacterPaths, user_id: str) -> int:
    state = FileBackend(paths).load(user_id)
    added = window.append(user_id, state.messages)
    brain = state.brain
    current = window.load(user_id)
    if brain.historical_summary and current.version == 0 and not current.summary and brain.summarized_through:
        # The folded messages are gone from history.yaml; record the summary as covering them.
        with window.db.tx() as conn:
            owner = window.owners.get(conn, user_id)
            conn.execute(
                "INSERT INTO window_state (owner_id, chat_id, summary, summarized_through, updated_at, version) "
                "VALUES (%s, 'default', %s, %s, %s, 1) ON CONFLICT DO NOTHING",
                (owner, brain.historical_summary, brain.summarized_through, brain.updated_at))
    return added


# ---------------------------------------------------------------------------- export


@dataclass
class ExportReport:
    users: int = 0
    turns: int = 0
    day_files: int = 0
    facts: int = 0
    window_messages: int = 0


def export_character(db: Database, data_dir: Path, character_id: str, *, progress: bool = True,
                     users: Sequence[str] | None = None) -> ExportReport:
    """Write every user of one character from the database into the files layout under
    `data_dir` (day files, digests, core_mem.yml, history.yaml, brain.yaml), atomically per file."""
    paths = character_paths(data_dir, character_id)
    owners = Owners(character_id)
    diary, facts, window = PgDiaryTurns(db, character_id, owners=owners), PgFacts(db, character_id, owners=owners), \
        PgWindow(db, character_id, owners=owners)
    if users is None:
        with db.tx() as conn:
            users = owners.users(conn)
    report = ExportReport()
    for user_id in _bar(list(users), progress, f"export {character_id}"):
        report.users += 1
        up = paths.user(user_id)
        by_day: dict[str, list[str]] = {}
        for turn in diary.all(user_id):
            by_day.setdefault(day_file_name(turn.local_day), []).append(format_entry(turn.to_entry()))
            report.turns += 1
        for name, items in by_day.items():
            atomic_write_text(up.diary_dir / name, "".join(items))
            report.day_files += 1
        for day, turns_n, text, by in diary.digests(user_id):
            atomic_write_yaml(up.diary_dir / "digests" / f"{day.isoformat()}.yaml",
                              {"date": day.isoformat(), "turns": turns_n, "by": by, "digest": text})
        found = facts.list(user_id, include_deleted=True)
        if found:
            atomic_write_text(up.core_file, dump_facts(found))
            report.facts += len(found)
        state = window.load(user_id)
        if state.messages or state.summary:
            brain = Brain(historical_summary=state.summary, summarized_through=state.summarized_through,
                          updated_at=state.updated_at, is_dirty=True)
            FileBackend(paths).replace(user_id, list(state.messages), brain)
            report.window_messages += len(state.messages)
    return report
