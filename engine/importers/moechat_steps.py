"""The per-store steps of the MoeChat import: world-book files, core facts, diary turns, window.

Each step reads one part of a MoeChat character folder, writes it into the kioku store, and
returns a `StoreCount`; what it cannot use goes into `skipped`. `engine.importers.moechat` runs
them in order.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from engine.adapters.embed_cache import CachedEmbedder
from engine.adapters.embedder import Embedder
from engine.config import EngineConfig
from engine.importers.moechat_format import (
    MoeTurn,
    day_files,
    parse_core_file,
    parse_day_file,
    parse_history,
    world_book_files,
)
from engine.importers.report import Skipped, StoreCount
from engine.importers.steps import append_diary, append_window, bar
from engine.paths import CharacterPaths
from engine.shortterm import WindowMessage
from engine.stores.diary import DiaryEntry, entry_id_for
from engine.tokens import count_tokens

__all__ = ["import_core", "import_diary", "import_memory_v2", "import_window", "import_world_book",
           "window_from_turns"]

_PREWARM_BATCH = 256


# -- world book ------------------------------------------------------------------------------------


def import_world_book(folder: Path, paths: CharacterPaths, *, skipped: list[Skipped], overwrite: bool) -> StoreCount:
    """Copy each valid `data_base/*.yaml` unchanged; counts are in entries."""
    from engine.stores.worldbook.parse import parse_bytes

    imported = present = bad = 0
    for path in world_book_files(folder):
        data = path.read_bytes()
        parsed = parse_bytes(data, path=path)
        if parsed.errors:
            skipped.extend(Skipped("world_book", f"{e.file}:{e.line}" if e.line else e.file, f"file skipped: {e.message}")
                           for e in parsed.errors)
            bad += 1
            continue
        dest = paths.world_book_dir / path.name
        n = len(parsed.entries)
        if dest.is_file() and dest.read_bytes() == data:
            present += n
            continue
        if dest.is_file() and not overwrite:
            skipped.append(Skipped("world_book", str(path), f"{dest} exists with other content; not overwritten "
                                   "(pass --overwrite-lore to replace it)"))
            bad += 1
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.import")
        shutil.copyfile(path, tmp)
        tmp.replace(dest)
        imported += n
    return StoreCount(imported=imported, present=present, skipped=bad)


# -- core facts ------------------------------------------------------------------------------------


def import_core(
    path: Path, store: Any, user_id: str, *, zone: tzinfo, embedder: Embedder, skipped: list[Skipped],
    notes: list[str], progress: bool,
) -> StoreCount:
    if not path.is_file():
        return StoreCount()
    facts, problems = parse_core_file(path, tz=zone)
    skipped.extend(Skipped("core", p.where, p.reason) for p in problems)
    fallback = datetime.fromtimestamp(path.stat().st_mtime, zone).replace(microsecond=0)
    undated = [f for f in facts if f.learned_at is None]
    if undated:
        notes.append(f"{len(undated)} core facts had no readable time and were dated {fallback:%Y-%m-%d %H:%M} "
                     f"(the file's modification time), e.g. {undated[0].where}")
    imported, present = _add_facts(store, user_id, [(f.text, f.learned_at or fallback) for f in facts],
                                   embedder=embedder, progress=progress)
    return StoreCount(imported=imported, present=present, skipped=len(problems))


def _add_facts(store: Any, user_id: str, items: list[tuple[str, datetime]], *, embedder: Embedder,
               progress: bool) -> tuple[int, int]:
    """(imported, already there) of (text, learned at) facts: one held already, or given twice, is there."""
    before = {f.id for f in store.facts(user_id, include_deleted=True)}
    _prewarm(embedder, [text for text, _ in items], desc="embed core facts", progress=progress)
    imported = present = 0
    seen: set[str] = set()
    for fact in store.import_facts(user_id, items):
        if fact.id not in before and fact.id not in seen:
            imported += 1
        else:
            present += 1
        seen.add(fact.id)
    return imported, present


# -- diary -----------------------------------------------------------------------------------------


def import_diary(
    folder: Path, store: Any, user_id: str, *, zone: tzinfo, names: tuple[tuple[str, ...], tuple[str, ...]],
    embedder: Embedder, skipped: list[Skipped], progress: bool,
) -> tuple[StoreCount, datetime | None]:
    turns: list[MoeTurn] = []
    bad = 0
    for _day, path in day_files(folder):
        got, problems = parse_day_file(path, tz=zone, user_names=names[0], char_names=names[1])
        turns.extend(got)
        bad += len(problems)
        skipped.extend(Skipped("diary", p.where, p.reason) for p in problems)
    turns.sort(key=lambda t: t.at)  # stable: same-second turns keep their file order
    count, entries = _add_turns(store, user_id, turns, where=str(folder), embedder=embedder, skipped=skipped,
                                progress=progress)
    return count + StoreCount(skipped=bad), (entries[-1].at if entries else None)


def _add_turns(store: Any, user_id: str, turns: list[MoeTurn], *, where: str, embedder: Embedder,
               skipped: list[Skipped], progress: bool) -> tuple[StoreCount, list[DiaryEntry]]:
    """Turns (in time order) into the diary, with ids from their time and text: the same turn twice
    (in the source, from another of its files, or from an earlier import) is written once. Returns
    the count and the entries."""
    present = 0
    entries: list[DiaryEntry] = []
    seen: set[str] = set()
    for t in turns:
        eid = entry_id_for(t.at, t.user, t.assistant)
        if eid in seen:
            present += 1  # the same turn twice in the source (same second, same text)
            continue
        seen.add(eid)
        entries.append(DiaryEntry(eid, t.at, t.tag, t.user, t.assistant))
    _prewarm(embedder, [e.tag or " " for e in entries], desc="embed diary tags", progress=progress)
    imported, there = append_diary(store, user_id, entries, progress=progress)
    lost = len(entries) - there - imported
    if lost:
        skipped.append(Skipped("diary", where, f"{lost} written turns were not indexed (see the warnings above)"))
    return StoreCount(imported=imported, present=present + there, skipped=lost), entries


# -- the fork's SQLite memory (memory_v2.db) -------------------------------------------------------


def import_memory_v2(
    path: Path, stores: Any, user_id: str, *, zone: tzinfo, embedder: Embedder, skipped: list[Skipped],
    progress: bool,
) -> tuple[StoreCount, StoreCount, list[DiaryEntry]]:
    """(diary count, core count, its turns in time order) of `memory_v2.db`: its turns into the diary
    (ids from time and text, so a turn also in the YAML files is one turn), its facts into core
    memory, its day diaries as the digests of the days it holds turns of."""
    from engine.importers.moechat_v2 import read_memory_v2

    if not path.is_file():
        return StoreCount(), StoreCount(), []
    try:
        got = read_memory_v2(path, tz=zone)
    except ValueError as exc:  # the rest of the folder is imported all the same
        skipped.append(Skipped("diary", str(path), str(exc)))
        return StoreCount(skipped=1), StoreCount(), []
    skipped.extend(got.skipped)
    diary, core = stores["diary"], stores["core"]
    count, entries = _add_turns(diary, user_id, got.turns, where=str(path), embedder=embedder, skipped=skipped,
                                progress=progress)
    bad_diary = sum(s.store == "diary" for s in got.skipped)
    turns_of = dict(diary.day_counts(user_id))
    for day, text in got.digests:
        if turns_of.get(day):
            diary.backend.write_digest(user_id, day, turns=turns_of[day], text=text, by="moechat")
        else:
            bad_diary += 1
            skipped.append(Skipped("diary", f"{path} diary_days {day.isoformat()!r}", "no turns of that day: its diary is "
                                   "kept out (a digest stands for a day's turns)"))
    imported, present = _add_facts(core, user_id, got.facts, embedder=embedder, progress=progress)
    return (count + StoreCount(skipped=bad_diary),
            StoreCount(imported=imported, present=present, skipped=sum(s.store == "core" for s in got.skipped)),
            entries)


# -- short-term window -----------------------------------------------------------------------------


def import_window(
    path: Path, config: EngineConfig, paths: CharacterPaths, user_id: str, *, length: int, at: datetime,
    skipped: list[Skipped],
) -> StoreCount:
    """The last `length` messages of history.yaml become the window (ids from position and text)."""
    if not path.is_file():
        return StoreCount()
    messages, problems = parse_history(path)
    skipped.extend(Skipped("window", p.where, p.reason) for p in problems)
    chosen = messages[-length:] if length > 0 else []
    stamp = at.isoformat()
    window = [
        WindowMessage(_message_id(m.index, m.role, m.content), m.role, m.content, stamp, count_tokens(m.content))
        for m in chosen
    ]
    done = append_window(config, paths, user_id, window)
    if done is None:
        skipped.append(Skipped("window", str(path), "the window already holds later messages: left as it was"))
        return StoreCount(skipped=len(problems) + len(window))
    return StoreCount(imported=done[0], present=done[1], skipped=len(problems))


def window_from_turns(
    entries: list[DiaryEntry], config: EngineConfig, paths: CharacterPaths, user_id: str, *, length: int,
) -> StoreCount:
    """The last `length` messages of these turns as the window (the fork keeps no history file: the
    conversation under way is its last turns), with the ids recorded turns have."""
    messages = [
        WindowMessage(f"{e.id}:{side[0]}", side, text, e.at.isoformat(), count_tokens(text))
        for e in entries for side, text in (("user", e.user), ("assistant", e.assistant)) if text
    ]
    done = append_window(config, paths, user_id, messages[-length:] if length > 0 else [])
    if done is None:
        return StoreCount(skipped=min(length, len(messages)))
    return StoreCount(imported=done[0], present=done[1])


def _message_id(index: int, role: str, content: str) -> str:
    digest = hashlib.sha256(f"{index}\x00{role}\x00{content}".encode()).hexdigest()
    return f"moechat-{digest[:16]}"


# -- embedding and progress ------------------------------------------------------------------------


def _prewarm(embedder: Embedder, texts: Iterable[str], *, desc: str, progress: bool) -> None:
    """Embed the distinct texts in batches (with a progress bar) so the stores' own embedding
    calls hit the on-disk cache; a no-op without a cache (the stores embed them anyway)."""
    if not isinstance(embedder, CachedEmbedder):
        return
    unique = list(dict.fromkeys(texts))
    batches = [unique[i : i + _PREWARM_BATCH] for i in range(0, len(unique), _PREWARM_BATCH)]
    progress_bar = bar(None, desc=desc, unit="text", progress=progress, total=len(unique))
    for batch in batches:
        embedder.embed(batch, role="passage")
        if progress_bar is not None:
            progress_bar.update(len(batch))
    if progress_bar is not None:
        progress_bar.close()
