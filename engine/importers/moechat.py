"""Import a MoeChat data folder into a kioku character: persona, world book, core facts, diary, window.

    report = import_moechat("~/MoeChat", user_id="me", tz="Asia/Shanghai")
    print(format_report(report))

Every step is idempotent: diary entries get content-derived ids (`entry_id_for`), facts are
deduplicated by text, world-book files are compared byte for byte, window messages get ids
derived from their position and text. Vectors are recomputed by the stores with the configured
embedder; MoeChat's `.pkl` files are never opened (unpickling an untrusted file runs code).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from engine.adapters.embedder import Embedder
from engine.character import Character
from engine.config import EngineConfig, merge_config, open_config
from engine.errors import EngineError
from engine.factory import cached_embedder, make_stores, make_timezone
from engine.importers.moechat_format import agent_folders, read_agent_section
from engine.importers.moechat_persona import as_int, existing_character, map_agent, write_character
from engine.importers.moechat_steps import (
    import_core, import_diary, import_memory_v2, import_window, import_world_book, window_from_turns,
)
from engine.importers.report import ImportReport, Skipped, StoreCount
from engine.paths import CharacterPaths, character_paths, validate_id
from engine.prompts import Prompts

__all__ = ["MoeChatImportError", "import_moechat"]

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
    tally = _Tally(skipped=[Skipped("persona", p.where, p.reason) for p in problems])

    own_embedder = embedder is None
    with tally.timed("persona"):
        persona = _import_persona(
            root, source, agent_cfg, config, paths, tz=tz, embedder=embedder, keep_thresholds=keep_thresholds,
            problems=len(problems), tally=tally,
        )
    run_config = _run_config(config, persona.character.config, paths, zone=zone, notes=tally.notes)
    stores = {
        s.name: s
        for s in make_stores(
            run_config, paths=paths, embedder=persona.embedder, memory_llm=None,
            prompts=Prompts(run_config.language), progress=progress,
        )
    }
    try:
        _import_stores(
            source, stores, run_config, paths, user_id, zone=zone, persona=persona, tally=tally,
            overwrite_lore=overwrite_lore, progress=progress,
        )
    finally:
        for store in stores.values():
            store.close()
        close = getattr(persona.embedder, "close", None)
        if own_embedder and close is not None:
            close()
    if any(source.rglob("*.pkl")):
        tally.notes.append("MoeChat's .pkl vector caches were ignored (never unpickled); vectors were recomputed")
    tally.seconds["total"] = time.perf_counter() - started
    return ImportReport(
        source=str(root), character_id=char_id, user_id=user_id, character_file=str(paths.character_file),
        counts=tally.counts, skipped=tuple(tally.skipped), notes=tuple(tally.notes), seconds=tally.seconds,
    )


@dataclass
class _Tally:
    """What the import steps report as they go: skipped items, notes, counts and seconds per step."""

    skipped: list[Skipped]
    notes: list[str] = field(default_factory=list)
    counts: dict[str, StoreCount] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.seconds[step] = time.perf_counter() - started


@dataclass(frozen=True)
class _Persona:
    character: Character
    """The character as written to character.yaml."""
    persona_cfg: Mapping[str, Any]
    """MoeChat's `Agent` section when it describes this character, else empty."""
    embedder: Embedder
    """The embedder the import uses (the caller's, or one built from the character's config)."""


# -- persona -------------------------------------------------------------------------------------


def _import_persona(
    root: Path, source: Path, agent_cfg: Mapping[str, Any], config: EngineConfig, paths: CharacterPaths, *,
    tz: str | None, embedder: Embedder | None, keep_thresholds: bool, problems: int, tally: _Tally,
) -> _Persona:
    """Persona and switches. MoeChat's config describes only its active character."""
    persona_cfg = agent_cfg if str(agent_cfg.get("char", "")) == source.name or len(agent_folders(root)) == 1 else {}
    if agent_cfg and not persona_cfg:
        tally.notes.append(f"config.yaml describes {agent_cfg.get('char')!r}, not {source.name!r}: persona not imported")
    existing = existing_character(paths)
    base_config = merge_config(config, existing.get("config") or {}, source=str(paths.character_file))
    if embedder is None:
        embedder = cached_embedder(base_config.embedder, paths)
    fields, overrides, threshold_notes = map_agent(
        persona_cfg, default_name=source.name, keep_thresholds=keep_thresholds, embedder=embedder
    )
    if tz is not None and tz != config.timezone:
        overrides["timezone"] = tz
    character, changed = write_character(paths, existing, fields, overrides, comments=threshold_notes, root=root)
    tally.notes.extend(threshold_notes)
    tally.counts["persona"] = StoreCount(imported=int(changed), present=int(not changed), skipped=problems)
    return _Persona(character, persona_cfg, embedder)


def _run_config(
    config: EngineConfig, character_config: Mapping[str, Any], paths: CharacterPaths, *, zone: tzinfo, notes: list[str]
) -> EngineConfig:
    """The character's config with every store enabled for the import, even if MoeChat had a switch
    off (the data exists; the switch in character.yaml governs retrieval)."""
    run_config = merge_config(config, character_config, source=str(paths.character_file))
    run_config = run_config.model_copy(
        update={
            "diary": run_config.diary.model_copy(update={"enabled": True}),
            "core": run_config.core.model_copy(update={"enabled": True}),
            "world_book": run_config.world_book.model_copy(update={"enabled": True}),
        }
    )
    if run_config.timezone != str(zone):
        notes.append(f"times were read in {zone} and the character's days are in {run_config.timezone}")
    return run_config


def _import_stores(
    source: Path, stores: Mapping[str, Any], run_config: EngineConfig, paths: CharacterPaths, user_id: str, *,
    zone: tzinfo, persona: _Persona, tally: _Tally, overwrite_lore: bool, progress: bool,
) -> None:
    """World book, core facts, diary and window, in that order (the window is stamped with the last diary time)."""
    embedder = persona.embedder
    with tally.timed("world_book"):
        tally.counts["world_book"] = import_world_book(
            source / "data_base", paths, skipped=tally.skipped, overwrite=overwrite_lore
        )
        stores["world_book"].refresh()
    with tally.timed("core"):
        tally.counts["core"] = import_core(
            source / "core_mem.yml", stores["core"], user_id, zone=zone, embedder=embedder,
            skipped=tally.skipped, notes=tally.notes, progress=progress,
        )
    with tally.timed("diary"):
        character = persona.character
        names = (tuple(filter(None, [character.user_name])), tuple(filter(None, [character.name])))
        tally.counts["diary"], last_at = import_diary(
            source / "memorys", stores["diary"], user_id, zone=zone, names=names, embedder=embedder,
            skipped=tally.skipped, progress=progress,
        )
    with tally.timed("memory_v2"):  # the active fork's SQLite memory, beside the YAML files
        v2_diary, v2_core, v2_turns = import_memory_v2(
            source / "memory_v2.db", stores, user_id, zone=zone, embedder=embedder, skipped=tally.skipped,
            progress=progress,
        )
        tally.counts["diary"] = tally.counts["diary"] + v2_diary
        tally.counts["core"] = tally.counts["core"] + v2_core
        last_at = max(filter(None, (last_at, v2_turns[-1].at if v2_turns else None)), default=None)
    with tally.timed("window"):
        length = as_int(persona.persona_cfg.get("context_length")) or run_config.short_term.max_messages
        if v2_turns and not (source / "history.yaml").is_file():  # the fork keeps no history file
            tally.counts["window"] = window_from_turns(v2_turns, run_config, paths, user_id, length=length)
        else:
            tally.counts["window"] = import_window(
                source / "history.yaml", run_config, paths, user_id, length=length,
                at=last_at or datetime.now(zone), skipped=tally.skipped,
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
