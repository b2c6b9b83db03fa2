"""Misspelt long day and month names, read as meant: "wendsday", "thrusday", "yesturday", "febuary".

People type their questions quickly; a misspelt weekday made "what did I do on wendsday" a message
with no time at all. Only the long names are corrected, and only a word that starts with the same
letter and is at most one edit away, or two for a word of seven letters or more and a name of eight
or more (a swap of two neighbouring letters is one edit); the nearest name wins, a tie corrects
nothing. No English word is that close to these names ("remember" is two edits from "december" but
starts with another letter; "sturdy", two from "saturday", is too short), while the six-letter names
are left alone: "sundry" and "sundae" are one edit from "sunday". A misspelt plural ("thurdays") is
corrected as a plural.
"""

from __future__ import annotations

import re

NAMES = ("tuesday", "wednesday", "thursday", "saturday", "yesterday", "tomorrow", "january", "february",
         "september", "october", "november", "december")
_WORD = re.compile(r"[A-Za-z]{6,}")


def _edits(a: str, b: str, limit: int) -> int:
    """Edits from a to b (insert, delete, substitute, swap two neighbours); limit + 1 once past it."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def meant(word: str) -> str | None:
    """The day or month name `word` misspells, or None (also for the name itself or its plural)."""
    w = word.lower()
    if w in NAMES or w.rstrip("s") in NAMES:
        return None
    if w.endswith("s") and len(w) > 6:
        plural = meant(w[:-1])
        if plural is not None:
            return plural + "s"
    best: dict[int, list[str]] = {}
    for name in NAMES:
        if w[0] != name[0]:
            continue
        limit = 2 if len(name) >= 8 and len(w) >= 7 else 1
        d = _edits(w, name, limit)
        if d <= limit:
            best.setdefault(d, []).append(name)
    if not best:
        return None
    nearest = best[min(best)]
    return nearest[0] if len(nearest) == 1 else None


def corrected(text: str) -> tuple[str, list[int]] | None:
    """(`text` with misspelt names replaced, the original offset of every character of it and of its
    end), or None when nothing is misspelt."""
    pieces: list[str] = []
    offsets: list[int] = []
    last = 0
    for m in _WORD.finditer(text):
        name = meant(m.group())
        if name is None:
            continue
        pieces.append(text[last : m.start()])
        offsets.extend(range(last, m.start()))
        pieces.append(name)
        # Every character of the name maps into the word; its end maps to the word's end.
        offsets.extend(min(m.start() + k, m.end() - 1) for k in range(len(name)))
        last = m.end()
    if not pieces:
        return None
    pieces.append(text[last:])
    offsets.extend(range(last, len(text) + 1))
    return "".join(pieces), offsets
