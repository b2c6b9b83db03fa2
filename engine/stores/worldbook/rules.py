"""The per-entry rules SillyTavern's lorebooks carry, applied after matching: chance, inclusion
groups, and the timed effects (sticky, cooldown, delay) of one chat.

Why they exist: imported lorebooks rely on them (a 30 % flavour entry, one of five weather lines
per prompt, a secret that stays on for a few messages once revealed), and an import that dropped
them would change what a character knows and when.

Chance and groups draw from a hash of the request and the entry, not from a random generator: the
same request (a retry, a replay, a test) gets the same lore, and another message draws again.

Timed effects are counted in messages of the chat, as SillyTavern counts them, and are worked out
from the window the request carries (no state is stored): each earlier user message in it was a
moment the entry could fire, with its keys looked for in the messages its scan depth reached then.
A chat longer than kioku's window counts from the window's first message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from engine.stores.worldbook.model import Entry


def draw(seed: str, name: str) -> float:
    """A number in [0, 100) fixed by `seed` (the request) and `name` (an entry's uid, a group)."""
    digest = hashlib.blake2b(f"{seed}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 * 100


def by_chance(entries: Mapping[int, Entry], seed: str) -> set[int]:
    """Those of `entries` that lose their draw (`probability` below 100)."""
    return {i for i, e in entries.items() if e.probability < 100 and draw(seed, e.uid) >= e.probability}


def by_group(entries: Mapping[int, Entry], seed: str, *, keep: Iterable[int] = ()) -> set[int]:
    """Those of `entries` that lose their inclusion group: one entry per group is used, one of
    `keep` (sticky ones) if the group has any, else the highest `order` among `group_override`
    entries, else one drawn by `group_weight`. An entry in several groups must win each."""
    keep = set(keep)
    groups: dict[str, list[int]] = {}
    for i, e in entries.items():
        for g in e.group:
            groups.setdefault(g, []).append(i)
    losers: set[int] = set()
    for name, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        members.sort(key=lambda i: (entries[i].file, entries[i].line))
        winner = _winner(name, members, entries, seed, keep)
        losers.update(i for i in members if i != winner)
    return losers


def _winner(name: str, members: list[int], entries: Mapping[int, Entry], seed: str, keep: set[int]) -> int:
    held = [i for i in members if i in keep]
    if held:
        return held[0]
    overrides = [i for i in members if entries[i].group_override]
    if overrides:
        return max(overrides, key=lambda i: entries[i].order)
    total = sum(entries[i].group_weight for i in members)
    point = draw(seed, f"group:{name}") / 100 * total
    for i in members:
        point -= entries[i].group_weight
        if point < 0:
            return i
    return members[-1]


@dataclass(frozen=True)
class Timing:
    """Where an entry's timed effects leave it at the current message."""

    state: str
    """"free" (matching decides), "sticky" (on without a match), "cooldown" or "delay" (off)."""
    reason: str = ""


FREE = Timing("free")


def timing(entry: Entry, moments: list[tuple[int, bool]], now: int) -> Timing:
    """`moments`: (messages in the chat then, whether the entry's keys matched) for each earlier
    moment it could fire, oldest first; `now`: messages in the chat with the current one."""
    if now < entry.delay:
        return Timing("delay", f"delay: the chat has {now} of {entry.delay} messages")
    on_until = off_until = fired = 0
    for count, matched in moments:
        if count < entry.delay or count <= off_until:
            continue
        if matched:
            fired = count
            on_until = count + entry.sticky if entry.sticky else 0
            off_until = (count + entry.sticky) + entry.cooldown if entry.cooldown else on_until
    if entry.sticky and now <= on_until:
        return Timing("sticky", f"sticky: fired {now - fired} messages ago, on for {entry.sticky}")
    if entry.cooldown and now <= off_until:
        return Timing("cooldown", f"cooldown: fired {now - fired} messages ago, off until {off_until - now} more")
    return FREE


def matched_at(
    entry: int,
    scans: list[tuple[set[int], dict[int, set[str]]]],
    upto: int,
    depth: int,
    ok: Callable[[int, set[str]], bool],
) -> bool:
    """Whether entry `entry` fired by keyword with the messages `scans[upto - depth + 1 .. upto]`
    (each message's primary-key entries and secondary keys, oldest first) and its secondary logic."""
    lo = max(0, upto - depth + 1)
    window = scans[lo : upto + 1]
    if not any(entry in primary for primary, _ in window):
        return False
    secondary: set[str] = set()
    for _, sec in window:
        secondary |= sec.get(entry, set())
    return ok(entry, secondary)
