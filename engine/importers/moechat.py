"""Import a MoeChat data folder into a kioku character: persona, world book, core facts, diary, window.

    report = import_moechat("~/MoeChat", user_id="me", tz="Asia/Shanghai")
    print(format_report(report))

Every step is idempotent: diary entries get content-derived ids (`entry_id_for`), facts are
deduplicated by text, world-book files are compared byte for byte, window messages get ids
derived from their position and text. Vectors are recomputed by the stores with the configured
embedder; MoeChat's `.pkl` files are never opened (unpickling an untrusted file runs code).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from engine.adapters.embed_cache import CachedEmbedder
from engine.adapters.embedder import Embedder
from engine.config import EngineConfig, merge_config, open_config
from engine.errors import EngineError
from engine.factory import (
    cached_embedder,
    make_short_term_backend,
    make_stores,
    make_timezone,
)
from engine.importers.moechat_format import (
    MoeTurn,
    agent_folders,
    day_files,
    parse_core_file,
    parse_day_file,
    parse_history,
    read_agent_section,
    world_book_files,
)
from engine.importers.moechat_persona import as_int, existing_character, map_agent, write_character
from engine.importers.report import ImportReport, Skipped, StoreCount
from engine.paths import CharacterPaths, character_paths, validate_id
from engine.prompts import Prompts
from engine.shortterm import WindowMessage
from engine.stores.diary import DiaryEntry, entry_id_for
from engine.tokens import count_tokens

__all__ = ["MoeChatImportError", "import_moechat"]

_PREWARM_BATCH = 256


class MoeChatImportError(EngineError, ValueError):
    """The source folder cannot be imported at all (not a MoeChat folder, ambiguous character)."""


def import_moechat(
    root: Path | str,
    *,
    user_id: str = "default",
    char: str | None = None,
    agent: str | None = None,
    tz: str | None = None,
    config: EngineConfig | None = None,
    config_path: Path | str | None = None,
    data_dir: Path | str | None = None,
    embedder: Embedder | None = None,
    keep_thresholds: bool = False,
    overwrite_lore: bool = False,
    progress: bool = False,
) -> ImportReport:
    """Import MoeChat's `<root>` (the folder holding `config.yaml` and `data/`) for `user_id`.

    `agent` picks the folder under `data/agents/` (default: `--char` if such a folder exists,
    else MoeChat's `Agent.char`, else the only one); `char` is the kioku character id (default:
    the agent's name made into a valid id). `tz` is the zone MoeChat's machine ran in (its times
    are local, without offset); default: the engine config's timezone."""
    started = time.perf_counter()
    root = Path(root).expanduser()
    if not (root / "data" / "agents").is_dir():
        raise MoeChatImportError(f"{root}: not a MoeChat folder (no data/agents/ inside)")
    validate_id(user_id, kind="user id")
    agent_cfg, problems = read_agent_section(root)
    source = _pick_agent(root, agent=agent, char=char, agent_cfg=agent_cfg)
    char_id = char or _slug(source.name)
    validate_id(char_id, kind="character id")
    config = open_config(config, path=config_path, data_dir=data_dir)
    zone = make_timezone(tz or config.timezone)
    paths = character_paths(config.data_dir, char_id)

    skipped: list[Skipped] = [Skipped("persona", p.where, p.reason) for p in problems]
    notes: list[str] = []
    counts: dict[str, StoreCount] = {}
    seconds: dict[str, float] = {}

    # Persona and switches. MoeChat's config describes only its active character.
    t = time.perf_counter()
    persona_cfg = agent_cfg if str(agent_cfg.get("char", "")) == source.name or len(agent_folders(root)) == 1 else {}
    if agent_cfg and not persona_cfg:
        notes.append(f"config.yaml describes {agent_cfg.get('char')!r}, not {source.name!r}: persona not imported")
    existing = existing_character(paths)
    base_config = merge_config(config, existing.get("config") or {}, source=str(paths.character_file))
    own_embedder = embedder is None
    if embedder is None:
        embedder = cached_embedder(base_config.embedder, paths)
    fields, overrides, threshold_notes = map_agent(
        persona_cfg, default_name=source.name, keep_thresholds=keep_thresholds, embedder=embedder
    )
    if tz is not None and tz != config.timezone:
        overrides["timezone"] = tz
    character, changed = write_character(paths, existing, fields, overrides, comments=threshold_notes, root=root)
    notes.extend(threshold_notes)
    counts["persona"] = StoreCount(imported=int(changed), present=int(not changed), skipped=len(problems))
    seconds["persona"] = time.perf_counter() - t

    # The stores, all enabled for the import even if MoeChat had a switch off (the data exists;
    # the switch in character.yaml governs retrieval).
    run_config = merge_config(config, character.config, source=str(paths.character_file))
    run_config = run_config.model_copy(
        update={
            "diary": run_config.diary.model_copy(update={"enabled": True}),
            "core": run_config.core.model_copy(update={"enabled": True}),
            "world_book": run_config.world_book.model_copy(update={"enabled": True}),
        }
    )
    if run_config.timezone != str(zone):
        notes.append(f"times were read in {zone} and the character's days are in {run_config.timezone}")
    stores = {
        s.name: s
        for s in make_stores(
            run_config, paths=paths, embedder=embedder, memory_llm=None,
            prompts=Prompts(run_config.language), progress=progress,
        )
    }
    try:
        t = time.perf_counter()
        counts["world_book"] = _import_world_book(
            source / "data_base", paths, skipped=skipped, overwrite=overwrite_lore
        )
        stores["world_book"].refresh()
        seconds["world_book"] = time.perf_counter() - t

        t = time.perf_counter()
        counts["core"] = _import_core(
            source / "core_mem.yml", stores["core"], user_id, zone=zone, embedder=embedder,
            skipped=skipped, notes=notes, progress=progress,
        )
        seconds["core"] = time.perf_counter() - t

        t = time.perf_counter()
        names = (tuple(filter(None, [character.user_name])), tuple(filter(None, [character.name])))
        counts["diary"], last_at = _import_diary(
            source / "memorys", stores["diary"], user_id, zone=zone, names=names, embedder=embedder,
            skipped=skipped, progress=progress,
        )
        seconds["diary"] = time.perf_counter() - t

        t = time.perf_counter()
        length = as_int(persona_cfg.get("context_length")) or run_config.short_term.max_messages
        counts["window"] = _import_window(
            source / "history.yaml", run_config, paths, user_id, length=length,
            at=last_at or datetime.now(zone), skipped=skipped,
        )
        seconds["window"] = time.perf_counter() - t
    finally:
        for store in stores.values():
            store.close()
        close = getattr(embedder, "close", None)
        if own_embedder and close is not None:
            close()
    if any(source.rglob("*.pkl")):
        notes.append("MoeChat's .pkl vector caches were ignored (never unpickled); vectors were recomputed")
    seconds["total"] = time.perf_counter() - started
    return ImportReport(
        source=str(root), character_id=char_id, user_id=user_id, character_file=str(paths.character_file),
        counts=counts, skipped=tuple(skipped), notes=tuple(notes), seconds=seconds,
    )


# -- choosing the character ----------------------------------------------------------------------


def _pick_agent(root: Path, *, agent: str | None, char: str | None, agent_cfg: Mapping[str, Any]) -> Path:
    folders = agent_folders(root)
    by_name = {p.name: p for p in folders}
    if agent is not None:
        if agent not in by_name:
            raise MoeChatImportError(f"{root}/data/agents: no character folder {agent!r} (have: {', '.join(by_name) or 'none'})")
        return by_name[agent]
    for name in (char, str(agent_cfg.get("char") or "")):
        if name and name in by_name:
            return by_name[name]
    if len(folders) == 1:
        return folders[0]
    raise MoeChatImportError(
        f"{root}/data/agents holds {len(folders)} characters ({', '.join(by_name) or 'none'}); "
        "name the one to import with --char (or --agent when the kioku id differs)"
    )


def _slug(name: str) -> str:
    slug = re.sub(r"[^\w.\-]+", "_", name.strip(), flags=re.UNICODE).strip("._-")[:64] or "moechat"
    return slug.rstrip(".")


# -- world book ------------------------------------------------------------------------------------


def _import_world_book(folder: Path, paths: CharacterPaths, *, skipped: list[Skipped], overwrite: bool) -> StoreCount:
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


def _import_core(
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
    before = {f.id for f in store.facts(user_id, include_deleted=True)}
    _prewarm(embedder, [f.text for f in facts], desc="embed core facts", progress=progress)
    result = store.import_facts(user_id, [(f.text, f.learned_at or fallback) for f in facts])
    imported = present = 0
    seen: set[str] = set()
    for fact in result:
        if fact.id not in before and fact.id not in seen:
            imported += 1
        else:
            present += 1
        seen.add(fact.id)
    return StoreCount(imported=imported, present=present, skipped=len(problems))


# -- diary -----------------------------------------------------------------------------------------


def _import_diary(
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
    new = [e for e in entries if not store.has_entry(user_id, e.id)]
    present += len(entries) - len(new)
    store.append_many(user_id, new, progress=progress)
    imported = sum(1 for e in new if store.has_entry(user_id, e.id))
    if imported != len(new):
        skipped.append(Skipped("diary", str(folder), f"{len(new) - imported} written turns were not indexed "
                               "(see the warnings above)"))
        bad += len(new) - imported
    return StoreCount(imported=imported, present=present, skipped=bad), (entries[-1].at if entries else None)


# -- short-term window -----------------------------------------------------------------------------


def _import_window(
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
    backend = make_short_term_backend(config, paths)
    with backend.lock(user_id):
        state = backend.load(user_id)
        have = {m.id for m in state.messages}
        if state.brain.last_history_id:
            have.add(state.brain.last_history_id)
        last_present = max((i for i, m in enumerate(window) if m.id in have), default=-1)
        new = window[last_present + 1 :]
        if new:
            state.brain.last_history_id = new[-1].id
            backend.append(user_id, new, state.brain)
    return StoreCount(imported=len(new), present=len(window) - len(new), skipped=len(problems))


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
    bar = _bar(None, desc=desc, unit="text", progress=progress, total=len(unique))
    for batch in batches:
        embedder.embed(batch, role="passage")
        if bar is not None:
            bar.update(len(batch))
    if bar is not None:
        bar.close()


def _bar(items: Any, *, desc: str, unit: str, progress: bool, total: int | None = None) -> Any:
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=unit, total=total, leave=False)

