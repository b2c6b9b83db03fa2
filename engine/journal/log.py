"""One user's journal file (`users/<id>/journal`) and what it says: turns, forgets, job marks.

The file is append-only between compactions. This process keeps a parsed view and reads only the
bytes appended since its last look (other processes append too); a replaced file (another
process compacted it) is read again whole. Callers hold the user's journal lock to write
(`append`, `repair`, `compact`); reading (`refresh`) needs no file lock and never writes.

Compaction writes a new file with only the unfinished work (plus the ids of the last turns, so a
re-sent turn stays a no-op) and swaps it in atomically: a crash leaves the old file or the new
one, never a mix.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.fileio import append_bytes_durably, atomic_write_bytes, fsync_path
from engine.journal.records import DoneRecord, FailRecord, ForgetRecord, Record, SeenRecord, TurnRecord, decode, encode
from engine.stores.base import Turn

log = logging.getLogger(__name__)

JOURNAL_FILE = "journal"


@dataclass(frozen=True)
class Item:
    """A unit of work in journal order: a turn to record, or a turn to forget."""

    kind: Literal["turn", "forget"]
    key: str
    """The turn id (of the recorded turn, or of the forgotten one)."""
    chat_id: str | None
    written: float
    source: TurnRecord | ForgetRecord
    """The line it came from (a turn that replaces another yields a forget item and a turn item)."""

    @property
    def turn(self) -> Turn:
        assert isinstance(self.source, TurnRecord)
        return self.source.turn


class UserLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._mutex = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self.items: list[Item] = []
        self.turns: dict[str, Item] = {}
        self.forgotten: dict[str, Item] = {}
        self.done: set[tuple[str, str]] = set()
        self.fails: dict[tuple[str, str], FailRecord] = {}
        self.seen: dict[str, str] = {}
        self.bad: list[tuple[int, bytes]] = []
        """(line number, bytes) of complete lines that are not records."""
        self.healed = 0
        """items[:healed] are known to be applied to the short-term windows."""
        self._position: dict[str, int] = {}
        self._ino: int | None = None
        self._offset = 0
        self._lines = 0
        self._seen: tuple[int, int] | None = None
        self.tail = 0
        """Bytes after the last newline: a torn append (or one in flight in another process)."""

    # -- reading -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Take in what was appended since the last look; re-read a file replaced by compaction."""
        with self._mutex:
            try:
                f = open(self.path, "rb")
            except FileNotFoundError:
                if self._ino is not None:
                    self._reset()
                return
            with f:
                st = os.fstat(f.fileno())
                if st.st_ino != self._ino or st.st_size < self._offset:
                    self._reset()
                    self._ino = st.st_ino
                if (st.st_size, st.st_mtime_ns) == self._seen:
                    return
                self._seen = (st.st_size, st.st_mtime_ns)
                f.seek(self._offset)
                data = f.read()
            end = data.rfind(b"\n") + 1
            self.tail = len(data) - end
            for line in data[:end].split(b"\n")[:-1]:
                self._lines += 1
                if not line.strip():
                    continue
                try:
                    self._take(decode(line))
                except ValueError as exc:
                    log.warning("%s:%d: unreadable journal line (%s)", self.path, self._lines, exc)
                    self.bad.append((self._lines, line))
            self._offset += end

    def _take(self, record: Record) -> None:
        if isinstance(record, TurnRecord):
            if record.replaces is not None:
                chat = self.chat_of(record.replaces) or record.turn.chat_id
                self._add(Item("forget", record.replaces, chat, record.written, record))
            if record.turn.id not in self.turns:
                self._add(Item("turn", record.turn.id, record.turn.chat_id, record.written, record))
        elif isinstance(record, ForgetRecord):
            self._add(Item("forget", record.turn_id, record.chat_id, record.written, record))
        elif isinstance(record, DoneRecord):
            self.done.add((record.key, record.job))
            self.fails.pop((record.key, record.job), None)
        elif isinstance(record, FailRecord):
            if (record.key, record.job) not in self.done:
                self.fails[(record.key, record.job)] = record
        else:
            self.seen.update(record.chats)

    def _add(self, item: Item) -> None:
        self.items.append(item)
        if item.kind == "turn":
            self.turns[item.key] = item
            self._position[item.key] = len(self.items) - 1
        else:
            self.forgotten[item.key] = item

    def knows(self, turn_id: str) -> bool:
        """Recorded (or forgotten) here before: recording it again is a no-op."""
        return turn_id in self.turns or turn_id in self.forgotten or turn_id in self.seen

    def chat_of(self, turn_id: str) -> str | None:
        item = self.turns.get(turn_id)
        return item.chat_id if item is not None else self.seen.get(turn_id)

    def position(self, turn_id: str) -> int | None:
        """Journal order of a recorded turn (the order of its chat's window)."""
        return self._position.get(turn_id)

    def retry_times(self) -> list[float]:
        with self._mutex:
            return [f.retry_at for f in self.fails.values()]

    def problems(self) -> list[str]:
        return [f"{self.path}:{n}: unreadable journal line skipped" for n, _ in self.bad]

    # -- writing (the caller holds the journal lock) -------------------------------------------

    def append(self, records: Sequence[Record], *, durable: bool) -> None:
        """Add records at the end; `durable` fsyncs them before returning (turns, forgets)."""
        data = b"".join(encode(r) for r in records)
        with self._mutex:
            self.refresh()
            self.repair()
            if durable:
                append_bytes_durably(self.path, data)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "ab") as f:
                    f.write(data)
            self.refresh()

    def repair(self) -> None:
        """Set a torn last line aside (`journal.corrupt`) so the next append starts on a new line."""
        with self._mutex:
            if not self.tail:
                return
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                torn = f.read()
            append_bytes_durably(self.path.with_name(self.path.name + ".corrupt"), torn + b"\n")
            os.truncate(self.path, self._offset)
            fsync_path(self.path)
            log.warning("%s: a torn last line (%d bytes, from a crash) set aside in %s.corrupt", self.path, len(torn), self.path.name)
            self.tail = 0

    def compact(self, unfinished: Iterable[Item], *, seen_ids: int) -> None:
        """Rewrite the file with only `unfinished` items and their marks (atomic replace)."""
        with self._mutex:
            sources: list[TurnRecord | ForgetRecord] = []
            keys: set[str] = set()
            for item in unfinished:
                if not any(s is item.source for s in sources):
                    sources.append(item.source)
                keys.add(item.key)
                if isinstance(item.source, TurnRecord):
                    keys.update(k for k in (item.source.turn.id, item.source.replaces) if k)
            recent = dict(self.seen)
            recent.update((k, i.chat_id or "") for k, i in self.turns.items())
            recent.update((k, i.chat_id or "") for k, i in self.forgotten.items() if k not in recent)
            records: list[Record] = [SeenRecord(dict(list(recent.items())[-seen_ids:]))] if seen_ids else []
            records += sources
            records += [DoneRecord(k, j) for k, j in sorted(self.done) if k in keys]
            records += [f for (k, _), f in self.fails.items() if k in keys]
            if self.bad:
                # Never dropped silently: unreadable lines go to journal.corrupt before the rewrite.
                aside = b"".join(line + b"\n" for _, line in self.bad)
                append_bytes_durably(self.path.with_name(self.path.name + ".corrupt"), aside)
            atomic_write_bytes(self.path, b"".join(encode(r) for r in records))
            self._reset()
            self.refresh()
            self.healed = len(self.items)  # everything kept was applied before the rewrite
