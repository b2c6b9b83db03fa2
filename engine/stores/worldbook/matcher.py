"""Keyword triggers: every plain key of every entry in one Aho-Corasick automaton, regexes apart.

One pass over a message finds all plain keys at once, so the cost grows with the message, not
with the size of the book. The automaton holds case-folded keys and runs over the case-folded
text; case-sensitive keys are then verified against the original text, and whole-word keys
against the characters around the match. Folding maps each character to one character, so a
position in the folded text is the same position in the original.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import ahocorasick

from engine.stores.worldbook.model import Entry, Key


class _FoldTable(dict[int, str]):
    """`str.translate` table lowercasing one character at a time, never changing the length
    (`'İ'.lower()` is two characters; such characters are kept as they are)."""

    def __missing__(self, code: int) -> str:
        low = chr(code).lower()
        value = low if len(low) == 1 else chr(code)
        self[code] = value
        return value


_FOLD = _FoldTable()


def fold(text: str) -> str:
    return text.translate(_FOLD)


def is_cjk(char: str) -> bool:
    """Scripts written without spaces between words, where a word boundary means nothing."""
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0xAC00 <= code <= 0xD7AF  # hangul
        or 0x20000 <= code <= 0x3134F
    )


def is_word_char(char: str) -> bool:
    return (char.isalnum() or char == "_") and not is_cjk(char)


@dataclass(frozen=True)
class KeyMatch:
    """One key found in one text."""

    entry: int
    """The entry's index (its global index in the book)."""
    key: str
    """The key as the author wrote it."""
    secondary: bool
    start: int


@dataclass
class RegexBudget:
    """Time allowed to author regexes while one prompt is matched.

    Each regex search gets at most `per_key_s` (the `regex` package stops a search at its
    timeout, however much it backtracks), and all searches of one prompt together at most
    `total_s`; what runs out is skipped and listed here so the store can name it.
    """

    per_key_s: float = 0.02
    total_s: float = 0.1
    timed_out: list[tuple[int, Key]] = field(default_factory=list)
    """(entry index, key) of searches that hit their time limit (skipped for that text)."""
    skipped: int = 0
    """Regex searches not tried because the prompt's total was spent."""
    _deadline: float | None = None

    def allowance(self) -> float | None:
        """Seconds the next search may take, or None when the total is spent."""
        now = time.perf_counter()
        if self._deadline is None:
            self._deadline = now + self.total_s
        left = self._deadline - now
        return None if left <= 0 else min(self.per_key_s, left)


# (entry, key text, secondary, case_sensitive, boundary before, boundary after); a plain tuple
# because 10,000+ of them are built on every reload.
_Ref = tuple[int, str, bool, bool, bool, bool]


class KeywordMatcher:
    """All keys of a set of entries; `scan(text)` returns every key found in `text`."""

    def __init__(self, entries: Sequence[Entry], *, indices: Sequence[int] | None = None) -> None:
        """`indices`: the number each entry is reported under (default: its position)."""
        self._automaton = ahocorasick.Automaton()
        refs: dict[str, list[_Ref]] = {}
        self._regexes: list[tuple[int, Key, bool]] = []
        for i, entry in zip(indices if indices is not None else range(len(entries)), entries):
            if not entry.enabled:
                continue
            whole, cs = entry.whole_words, entry.case_sensitive
            for secondary, keys in ((False, entry.keys), (True, entry.secondary_keys)):
                for key in keys:
                    if key.regex is not None:
                        self._regexes.append((i, key, secondary))
                        continue
                    ref = (i, key.text, secondary, cs, whole and key.word_start, whole and key.word_end)
                    group = refs.get(key.folded)
                    if group is None:
                        refs[key.folded] = [ref]
                    else:
                        group.append(ref)
        self._refs: list[tuple[_Ref, ...]] = []
        for folded, group in refs.items():
            self._automaton.add_word(folded, (len(folded), len(self._refs)))
            self._refs.append(tuple(group))
        self._empty = not refs
        if not self._empty:
            self._automaton.make_automaton()
        self.size = sum(len(g) for g in self._refs) + len(self._regexes)
        """Number of keys (plain and regex) the matcher holds."""

    @property
    def regex_entries(self) -> tuple[tuple[int, Key], ...]:
        """(entry index, key) of every regex key."""
        return tuple((i, key) for i, key, _ in self._regexes)

    def scan(
        self, text: str, budget: RegexBudget | None = None, live: Callable[[int], bool] | None = None
    ) -> list[KeyMatch]:
        """Each (entry, key) found in `text` once, at its first acceptable position.

        Regex keys run within `budget` (a fresh default one when None): a key that times out
        is recorded in it and does not match. `live` skips the entries it rejects (replaced file
        versions still in a segment) before their regexes spend any of the budget."""
        found: dict[tuple[int, str, bool], KeyMatch] = {}
        if not self._empty and text:
            for end, (length, slot) in self._automaton.iter(fold(text)):
                start = end - length + 1
                for ref in self._refs[slot]:
                    ident = ref[:3]
                    if ident in found or not self._accept(ref, text, start, end + 1):
                        continue
                    found[ident] = KeyMatch(ref[0], ref[1], ref[2], start)
        if self._regexes and text:
            self._scan_regexes(text, budget if budget is not None else RegexBudget(), found, live)
        return list(found.values())

    def _scan_regexes(
        self, text: str, budget: RegexBudget, found: dict[tuple[int, str, bool], KeyMatch],
        live: Callable[[int], bool] | None,
    ) -> None:
        for entry, key, secondary in self._regexes:
            assert key.regex is not None
            if (entry, key.text, secondary) in found or (live is not None and not live(entry)):
                continue
            allowed = budget.allowance()
            if allowed is None:
                budget.skipped += 1
                continue
            try:
                hit = key.regex.search(text, timeout=allowed)
            except TimeoutError:
                budget.timed_out.append((entry, key))
                continue
            if hit is not None:
                found[(entry, key.text, secondary)] = KeyMatch(entry, key.text, secondary, hit.start())

    @staticmethod
    def _accept(ref: _Ref, text: str, start: int, end: int) -> bool:
        _, key, _, case_sensitive, before, after = ref
        if case_sensitive and text[start:end] != key:
            return False
        if before and start > 0 and is_word_char(text[start - 1]):
            return False
        if after and end < len(text) and is_word_char(text[end]):
            return False
        return True


def secondary_ok(entry: Entry, matched: Iterable[str]) -> bool:
    """SillyTavern's selective logic over the secondary keys found anywhere in the scanned text."""
    if not entry.secondary_keys:
        return True
    found = set(matched)
    hits = sum(1 for k in entry.secondary_keys if k.text in found)
    total = len(entry.secondary_keys)
    if entry.logic == "and_any":
        return hits > 0
    if entry.logic == "and_all":
        return hits == total
    if entry.logic == "not_any":
        return hits == 0
    return hits < total  # not_all
