"""Import a SillyTavern chat log into a kioku character's memory of one user.

    report = import_sillytavern_chat("小月 - 2024-3-1@20h00m00s.jsonl", user_id="linzhou", character="xiaoyue")
    print(format_report(report))

The whole file is read and checked first (`engine.formats.sillytavern.chatlog`): a line that is
not JSON, or whose `send_date` is in no known form, fails the import with the file and the line
before anything is written. Then:

- diary: each user message with the character's reply (or replies) after it is one turn, dated at
  the user's message, tagged and dated like a recorded turn without an LLM (offline tag, the
  relative dates it mentions resolved against its own time), written in one bulk append;
- core facts: the offline extractor reads the user's side of every turn, in order;
- window: the latest turns become the short-term window of the chat named after the file.

System and narrator lines are never anyone's words: they stay out of the turns and are listed as
skipped. Hidden lines (`/hide`) are still what was said: they are imported, and counted in a note.
Ids come from content (`entry_id_for`: time and texts), so importing the same file again adds
nothing; facts are extracted once per turn id; window messages are the turn id plus `:u` / `:a`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from engine.adapters.embedder import Embedder
from engine.character import OpenCharacter, open_character
from engine.config import EngineConfig, open_config
from engine.factory import cached_embedder, make_stores, make_timezone
from engine.fileio import read_bytes_capped
from engine.formats.sillytavern.chatlog import MAX_FILE_BYTES, ChatLog, ChatMessage, read_chat
from engine.importers.report import ImportReport, Skipped, StoreCount
from engine.importers.sillytavern import SillyTavernImportError
from engine.importers.steps import append_diary, append_window, bar, require_character
from engine.paths import CharacterPaths, id_or_digest, validate_id
from engine.prompts import Prompts
from engine.shortterm import WindowMessage
from engine.stores.base import Turn
from engine.stores.diary import DiaryEntry, entry_id_for
from engine.stores.diary.dates import resolve_dates
from engine.stores.diary.writing import fallback_tag
from engine.tokens import count_tokens

__all__ = ["ChatPlan", "ChatTurn", "SillyTavernChatImportError", "chat_id_for", "chat_turns", "import_sillytavern_chat"]


class SillyTavernChatImportError(SillyTavernImportError):
    """The chat cannot be imported at all (no such character, no time anywhere in the file)."""


@dataclass(frozen=True)
class ChatTurn:
    """One exchange of the chat: what the user said and what the character answered."""

    at: datetime
    """When the user's (first) message was sent; the reply's time when the user said nothing."""
    user: str
    """The user's messages, joined by newlines ("" for a greeting the character opened with)."""
    assistant: str
    """The character's replies, joined by newlines ("" when the chat ends on the user)."""
    reply_at: datetime | None
    """When the (first) reply was sent."""
    lines: tuple[int, ...]
    """The file's lines it was made of."""


@dataclass(frozen=True)
class ChatPlan:
    """What an import of a chat log will write, decided before anything is written."""

    turns: tuple[ChatTurn, ...]
    """In file order."""
    skipped: tuple[Skipped, ...]
    """The lines left out (system, narrator, empty), each with its file:line and why."""
    notes: tuple[str, ...]
    """What was read how (hidden lines, swipes, undated messages, group chat)."""


def import_sillytavern_chat(
    path: Path | str,
    *,
    user_id: str,
    character: str,
    tz: str | None = None,
    config: EngineConfig | None = None,
    config_path: Path | str | None = None,
    data_dir: Path | str | None = None,
    embedder: Embedder | None = None,
    progress: bool = False,
) -> ImportReport:
    """Import the chat log at `path` into `character`'s memory of `user_id`.

    `tz` is the zone of the machine SillyTavern ran on (its times mostly carry no zone); default:
    the character's timezone. `config` / `config_path` / `data_dir` as for every surface
    (`engine.config.open_config`); `embedder` replaces the configured one (it is not closed)."""
    started = time.perf_counter()
    path = Path(path).expanduser()
    validate_id(user_id, kind="user id")
    config = open_config(config, path=config_path, data_dir=data_dir)
    opened = _open(character, config)
    paths = opened.paths
    zone = make_timezone(tz or opened.config.timezone)
    log = read_chat(read_bytes_capped(path, max_bytes=MAX_FILE_BYTES), file=str(path), tz=zone)
    plan = chat_turns(log)
    chat_id = chat_id_for(path)

    run_config = _run_config(opened.config)
    store_tz = make_timezone(run_config.timezone)
    notes = list(plan.notes)
    if store_tz.key != zone.key:
        notes.append(f"times without a zone were read in {zone.key}; the character's days are in {store_tz.key}")
    entries, duplicates = _entries(plan.turns, tz=store_tz, language=run_config.language, progress=progress)

    seconds: dict[str, float] = {}
    counts: dict[str, StoreCount] = {}
    own_embedder = embedder is None
    if embedder is None:
        embedder = cached_embedder(run_config.embedder, paths)
    stores = {s.name: s for s in make_stores(run_config, paths=paths, embedder=embedder, memory_llm=None,
                                             prompts=Prompts(run_config.language), progress=progress)}
    try:
        step = time.perf_counter()
        counts["diary"] = _import_diary(stores["diary"], user_id, entries, duplicates=duplicates,
                                        skipped=len(plan.skipped), progress=progress)
        seconds["diary"] = time.perf_counter() - step
        step = time.perf_counter()
        counts["core"] = _import_facts(stores["core"], user_id, entries, chat_id=chat_id, progress=progress)
        seconds["core"] = time.perf_counter() - step
        step = time.perf_counter()
        counts["window"] = _import_window(run_config, paths, user_id, entries, plan.turns, chat_id=chat_id,
                                          notes=notes)
        seconds["window"] = time.perf_counter() - step
    finally:
        for store in stores.values():
            store.close()
        close = getattr(embedder, "close", None)
        if own_embedder and close is not None:
            close()
    notes.append(f"the window is chat {chat_id!r} (pass chat_id={chat_id!r} to build_prompt to continue it)")
    seconds["total"] = time.perf_counter() - started
    return ImportReport(
        source=str(path), character_id=character, user_id=user_id, character_file=str(paths.character_file),
        counts=counts, skipped=plan.skipped, notes=tuple(notes), seconds=seconds,
    )


# -- the chat as turns (pure) ------------------------------------------------------------------------


def chat_turns(log: ChatLog) -> ChatPlan:
    """The turns of a chat log, the lines left out of them and notes on what was read how.

    A user message and the character messages after it are one turn; more user messages before a
    reply join it. A message without a send_date takes the time of the message before it (the
    first ones that of the first dated message, else the header's create_date)."""
    times = _times(log)
    skipped: list[Skipped] = []
    speakers = {m.name for m in log.messages if m.role == "character"}
    group = len(speakers) > 1
    turns: list[ChatTurn] = []
    user: list[ChatMessage] = []
    reply: list[ChatMessage] = []

    def close() -> None:
        if user or reply:
            turns.append(_turn(user, reply, times, group=group))
        user.clear()
        reply.clear()

    for m in log.messages:
        where = f"{log.file}:{m.line}"
        if m.role == "system":
            what = "narrator line" if m.is_narrator else f"SillyTavern system message ({m.system_kind or 'system'})"
            excerpt = " ".join(m.text.split())[:40]
            skipped.append(Skipped("diary", where, f"{what} {excerpt!r}: not the user's or the character's words"))
        elif not m.text.strip():
            skipped.append(Skipped("diary", where, "empty message"))
        elif m.role == "user":
            if reply:
                close()
            user.append(m)
        else:
            reply.append(m)
    close()

    notes = []
    system = [m for m in log.messages if m.role == "system"]
    if system:
        narrator = sum(m.is_narrator for m in system)
        notes.append(f"{len(system) - narrator} system and {narrator} narrator lines were left out of the turns "
                     "(listed under skipped)")
    hidden = sum(m.hidden for m in log.messages if m.role != "system")
    if hidden:
        notes.append(f"{hidden} messages hidden from SillyTavern's prompt (/hide) were imported like the others")
    swiped = sum(m.swipes > 1 for m in log.messages)
    if swiped:
        notes.append(f"{swiped} messages had several swipes: only the chosen one was imported")
    undated = sum(m.at is None for m in log.messages)
    if undated:
        notes.append(f"{undated} messages had no send_date and took the time of the message before them")
    if group:
        notes.append(f"a group chat ({', '.join(sorted(speakers))}): each reply is prefixed with its speaker")
    return ChatPlan(tuple(turns), tuple(skipped), tuple(notes))


def _times(log: ChatLog) -> dict[int, datetime]:
    """Each message's time by line: its own, else the one before it (the first ones: the first dated)."""
    dated = [m.at for m in log.messages if m.at is not None]
    if not dated and log.messages:
        if log.create_date is None:
            raise SillyTavernChatImportError(f"{log.file}: no message has a send_date and the header no create_date: "
                                             "kioku cannot tell when anything was said")
        dated = [log.create_date]
    out: dict[int, datetime] = {}
    last = dated[0] if dated else None
    for m in log.messages:
        last = m.at or last
        out[m.line] = last
    return out


def _turn(user: Sequence[ChatMessage], reply: Sequence[ChatMessage], times: Mapping[int, datetime], *,
          group: bool) -> ChatTurn:
    first = user[0] if user else reply[0]
    return ChatTurn(
        at=times[first.line],
        user="\n".join(m.text.strip() for m in user),
        assistant="\n".join(f"{m.name}: {m.text.strip()}" if group else m.text.strip() for m in reply),
        reply_at=times[reply[0].line] if reply else None,
        lines=tuple(m.line for m in (*user, *reply)),
    )


def chat_id_for(path: Path | str) -> str:
    """The chat id of a log: its file name without `.jsonl`, made a valid id (`engine.paths`), else
    a digest of the name. The same file name is always the same chat."""
    stem = Path(path).name.removesuffix(".jsonl")
    slug = re.sub(r"[^\w.\-]+", "_", stem, flags=re.UNICODE).strip("._-")[:64].rstrip(".")
    return id_or_digest(slug or stem, kind="chat id")


# -- writing -----------------------------------------------------------------------------------------


def _open(character: str, config: EngineConfig) -> OpenCharacter:
    require_character(config, character, error=SillyTavernChatImportError)
    return open_character(character, config)


def _run_config(config: EngineConfig) -> EngineConfig:
    """Diary and facts on (the switches in character.yaml govern retrieval, not what the chat held),
    facts extracted turn by turn, the world book left alone."""
    return config.model_copy(update={
        "diary": config.diary.model_copy(update={"enabled": True}),
        "core": config.core.model_copy(update={"enabled": True, "extract_every_turns": 1}),
        "world_book": config.world_book.model_copy(update={"enabled": False}),
    })


def _entries(turns: Sequence[ChatTurn], *, tz: tzinfo, language: str,
             progress: bool) -> tuple[list[tuple[DiaryEntry, ChatTurn]], int]:
    """Diary entries as `DiaryStore.record` writes them without an LLM (offline tag, resolved
    dates), with content ids; and how many turns were the same turn twice in the file."""
    out: dict[str, tuple[DiaryEntry, ChatTurn]] = {}
    duplicates = 0
    for t in bar(turns, desc="dating turns", unit="turn", progress=progress):
        at = t.at.astimezone(tz).replace(microsecond=0)
        eid = entry_id_for(at, t.user, t.assistant)
        if eid in out:
            duplicates += 1
            continue
        tag = fallback_tag(t.user, language=language)
        out[eid] = (DiaryEntry(eid, at, tag, t.user, t.assistant, resolve_dates([t.user, t.assistant], at, tz)), t)
    return sorted(out.values(), key=lambda pair: pair[0].at), duplicates


def _import_diary(store: Any, user_id: str, entries: Sequence[tuple[DiaryEntry, ChatTurn]], *, duplicates: int,
                  skipped: int, progress: bool) -> StoreCount:
    written, present = append_diary(store, user_id, [e for e, _ in entries], progress=progress)
    if written != len(entries) - present:
        raise SillyTavernChatImportError(f"{len(entries) - present - written} of {len(entries) - present} diary turns "
                                         "were written but not indexed (see the warnings above); run the import again")
    return StoreCount(imported=written, present=present + duplicates, skipped=skipped)


def _import_facts(store: Any, user_id: str, entries: Sequence[tuple[DiaryEntry, ChatTurn]], *, chat_id: str,
                  progress: bool) -> StoreCount:
    """The offline extractor over the user's side of every turn, oldest first; a turn already
    extracted (its id among the facts' sources) is skipped by the store itself."""
    before = {f.id: f.text for f in store.facts(user_id)}
    ids = set()
    for entry, _ in bar(entries, desc="facts", unit="turn", progress=progress):
        if entry.user.strip():
            ids.add(entry.id)
            store.record(Turn(entry.id, user_id, entry.at, entry.user, entry.assistant, chat_id=chat_id))
    after = store.facts(user_id)
    imported = sum(1 for f in after if before.get(f.id) != f.text)
    present = sum(1 for f in after if before.get(f.id) == f.text and ids.intersection(f.source_turns))
    return StoreCount(imported=imported, present=present)


def _import_window(config: EngineConfig, paths: CharacterPaths, user_id: str,
                   entries: Sequence[tuple[DiaryEntry, ChatTurn]], turns: Sequence[ChatTurn], *, chat_id: str,
                   notes: list[str]) -> StoreCount:
    """The latest turns that fit `short_term.max_messages` become the chat's window; appended
    after what is already there, unless the window already holds later messages."""
    messages: list[WindowMessage] = []
    for entry, turn in reversed(entries):
        pair = []
        if entry.user:
            pair.append(_window_message(f"{entry.id}:u", "user", entry.user, entry.at))
        if entry.assistant:
            reply_at = (turn.reply_at or turn.at).astimezone(entry.at.tzinfo)
            pair.append(_window_message(f"{entry.id}:a", "assistant", entry.assistant, reply_at))
        if len(messages) + len(pair) > config.short_term.max_messages:
            break
        messages[:0] = pair
    done = append_window(config, paths, user_id, messages, chat_id=chat_id)
    if done is None:
        notes.append(f"the window of chat {chat_id!r} already holds later messages: left as it was")
        return StoreCount()
    return StoreCount(imported=done[0], present=done[1])


def _window_message(mid: str, role: str, content: str, at: datetime) -> WindowMessage:
    return WindowMessage(mid, role, content, at.isoformat(), count_tokens(content))
