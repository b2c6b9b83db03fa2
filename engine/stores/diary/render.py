"""Turning diary rows into hits within the diary's token budget.

Short ranges (at most `digest_over_turns` turns, or a single day) are answered with raw turns:
all of them when they fit, else the most relevant ones. Long ranges get one digest per day (the
memory LLM's when it is fresh, else one built from the day's tags), the most relevant days first
when even those do not fit. Either way a pinned note says how many turns were left out, so the
model does not claim that nothing else happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from datetime import datetime, tzinfo

import numpy as np

from engine.conversation import normalize
from engine.search.base import SearchHit
from engine.stores.base import Hit
from engine.stores.diary.dates import annotate
from engine.stores.diary.entry import DiaryEntry
from engine.tokens import count_tokens, truncate_tokens

STORE = "diary"
MIN_LINE_TOKENS = 16
"""No turn's line costs less (its time and the two speakers' marks): a budget holds at most
budget // this many turns."""
NOTE_RESERVE = 60
"""Tokens kept free for the 'N turns left out' note."""


@dataclass(frozen=True)
class RangeTurns:
    """The turns of an asked range as columns, in time order. A month holds thousands of turns:
    an object per turn (even a named tuple) was most of a month question's own work, in the
    allocations and the garbage collections they set off."""

    rows: np.ndarray
    """The source's row of each turn (int64; what `DiarySource.entries` reads)."""
    ts: np.ndarray
    """Epoch seconds (int64)."""
    day: np.ndarray
    """Local day, YYYY-MM-DD (str)."""
    tag: np.ndarray
    """The turn's tag (object array of str)."""
    reason: np.ndarray
    """Why its range was read (object array of str: one text per asked range)."""
    score: np.ndarray
    """Relevance (float64): 0 until the search ranks the range."""

    @classmethod
    def of(cls, rows, ts, day, tag, reason: str) -> "RangeTurns":
        n = len(rows)
        why = np.empty(n, dtype=object)
        why.fill(reason)  # one str shared: np.full made a copy of it per turn (~0.25 ms a month)
        return cls(np.asarray(rows, dtype=np.int64), np.asarray(ts, dtype=np.int64), np.asarray(day, dtype="<U10"),
                   _objects(tag), why, np.zeros(n))

    @classmethod
    def join(cls, parts: Sequence["RangeTurns"]) -> "RangeTurns":
        """Several ranges' turns in time order, a turn in two of them once (with the first one's reason)."""
        if len(parts) == 1:
            return parts[0]
        every = cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))
        _, first = np.unique(every.rows, return_index=True)
        return every.take(first[np.lexsort((every.rows[first], every.ts[first]))])

    def __len__(self) -> int:
        return int(self.rows.size)

    def take(self, idx: np.ndarray) -> "RangeTurns":
        return RangeTurns(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))

    def ranked(self, score: np.ndarray) -> "RangeTurns":
        return replace(self, score=np.asarray(score, dtype=np.float64))

    @cached_property
    def days(self) -> list[tuple[str, np.ndarray]]:
        """(day, indices of its turns) in time order; found once (how many there are decides
        between raw turns and digests, then the digests group by them)."""
        if not len(self):
            return []
        cut = np.flatnonzero(self.day[1:] != self.day[:-1]) + 1
        return [(str(self.day[g[0]]), g) for g in np.split(np.arange(len(self)), cut)]


def _objects(items) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)  # element by element: a str never becomes an array of characters
    return out


def fmt_range(start: datetime, end: datetime, tz: tzinfo) -> str:
    a, b = start.astimezone(tz), end.astimezone(tz)
    return f"[{a:%Y-%m-%d %H:%M}, {b:%Y-%m-%d %H:%M}) {_offset(a)}"


def _offset(at: datetime) -> str:
    z = at.strftime("%z")
    return f"{z[:3]}:{z[3:]}" if len(z) == 5 else z


_LINE_BREAKS = re.compile(r"[\r\n\v\f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """A half as it was said, on one prompt line: line breaks inside it become spaces (a break at
    its end is the line's own), every other character is kept. A remembered turn is quoted, not
    retyped: "what exactly did I say" gets the words and their spacing as they were."""
    return _LINE_BREAKS.sub(" ", text.rstrip("\r\n"))


def shorten(text: str, max_tokens: int) -> str:
    """The half on one line (`one_line`), at most `max_tokens` (with "…" when cut)."""
    line = one_line(text)
    short = truncate_tokens(line, max_tokens)
    return short if short == line else short + "…"


def half_tokens(max_turn_tokens: int) -> int:
    """The most one half of a turn's line shows (a longer half is cut, with "…")."""
    return max(20, max_turn_tokens // 2)


def turn_text(entry: DiaryEntry, tz: tzinfo, *, max_tokens: int) -> str:
    half = half_tokens(max_tokens)
    user = annotate(shorten(entry.user, half), entry.dates)
    reply = annotate(shorten(entry.assistant, half), entry.dates)
    return f"[{entry.at.astimezone(tz):%Y-%m-%d %H:%M}] {{{{user}}}}: {user} / {{{{char}}}}: {reply}"


@lru_cache(maxsize=4096)
def header_tokens(day: str) -> int:
    """What a day's header line costs; the days a diary's lines come from recur in every prompt."""
    return count_tokens(f"[{day}]\n")


def search_hits(
    found: Sequence[SearchHit],
    *,
    tz: tzinfo,
    budget: int,
    max_line_tokens: int,
    skip_texts: set[str],
    reason: str,
    names: tuple[str, str] = ("", ""),
) -> list[Hit]:
    """Search results as one hit per local day ("[2023-05-08]" then one line per half, in
    conversation order), the best lines first until `budget` is spent. A half is shown whole
    unless it is longer than `max_line_tokens`; halves already in the window are skipped
    (`skip_texts`: the window's messages as `conversation.normalize` gives them).
    `names` (user, character) are what {{user}} / {{char}} become: lines are counted as sent.

    A line is charged what it costs with its newline (a sentence's final "." and the newline are
    often one token), a day its header once; a hit's `tokens` is what its day was charged, which
    the sent text never exceeds (its last line has no newline after it)."""
    chosen: list[tuple[SearchHit, str, str]] = []
    day_cost: dict[str, int] = {}
    name_cost: dict[str, int] = {}
    room = budget
    for h in found:
        flat = " ".join(h.text.split())
        if normalize(h.text) in skip_texts:
            continue
        who = "{{user}}" if h.side == "user" else "{{char}}"
        name = (names[0] if h.side == "user" else names[1]) or who
        body = annotate(shorten(h.text, max_line_tokens), h.dates)
        # Counted when it was indexed (`base.line_tokens`, over single-spaced text): a line whose
        # spacing differs is counted as sent.
        if h.tokens >= 0 and body == flat:
            if name not in name_cost:
                name_cost[name] = count_tokens(f"{name}:")
            cost = name_cost[name] + h.tokens
        else:
            sent = f"{name}: {body}\n"
            # Every whitespace-separated word is at least one token: most lines that cannot fit
            # in what is left are known without encoding them.
            if len(sent.split()) > room:
                continue
            cost = count_tokens(sent)
        day = datetime.fromtimestamp(h.ts, tz).date().isoformat()
        header = 0 if day in day_cost else header_tokens(day)
        if cost + header > room:
            continue
        room -= cost + header
        day_cost[day] = day_cost.get(day, 0) + cost + header
        chosen.append((h, f"{who}: {body}", day))
    if not chosen:
        return []
    best = max(h.score for h, *_ in chosen) or 1.0
    by_day: dict[str, list[tuple[SearchHit, str, str]]] = {}
    for item in sorted(chosen, key=lambda it: (it[0].ts, it[0].side != "user")):
        by_day.setdefault(item[2], []).append(item)
    out = []
    for day, items in by_day.items():
        text = f"[{day}]\n" + "\n".join(line for _, line, _ in items)
        top = max(h.score for h, *_ in items)
        whys = sorted({h.why for h, *_ in items})
        out.append(
            Hit(
                store=STORE,
                text=text,
                score=round(top / best, 4),
                reason=f"{reason}: {len(items)} line(s) of {day} by {', '.join(whys)}",
                tokens=day_cost[day],
                meta={"kind": "search", "day": day, "ids": [h.turn_id for h, *_ in items]},
            )
        )
    return out


def omitted_note(prompts, ranges: Sequence, total: int, shown: int) -> list[Hit]:
    """After a range too long to show was answered by its best turns and the search: the pinned "N
    of the range's turns are not shown" note (none when every turn of the range made it into the
    prompt). `ranges`: (expression, clipped range) pairs; `shown`: the range's turns in the prompt;
    `prompts`: the store's `Prompts`."""
    omitted = total - shown
    if omitted <= 0:
        return []
    text = "; ".join(f'"{e.text}"' for e, _ in ranges)
    return [omitted_hit(prompts, text, total, omitted, f"{omitted} of {total} turns of the range not shown")]


def omitted_hit(prompts, ranges: str, total: int, omitted: int, reason: str) -> Hit:
    """The pinned "N of the range's T turns are not shown; the most relevant ones are" note."""
    how = "，以上是最相关的部分" if prompts.language == "zh" else "; the most relevant ones are shown"
    note = prompts.render("diary_omitted", range=ranges, total=total, omitted=omitted, how=how)
    return Hit(STORE, note, 1.0, reason, pinned=True, meta={"kind": "omitted", "omitted": omitted, "total": total})


def raw_hits(
    turns: RangeTurns,
    load: Callable[[np.ndarray], list[DiaryEntry]],
    *,
    tz: tzinfo,
    budget: int,
    max_turn_tokens: int,
    limit: int,
) -> tuple[list[Hit], int]:
    """(hits in chronological order, number left out). All turns when they fit the budget, else
    the most relevant (then the latest) ones. Only the `limit` best turns are read from disk, and
    of a range longer than that only as many, best first, as fill the budget."""
    if len(turns) <= limit:
        pool = np.arange(len(turns))
    else:
        pool = np.sort(np.lexsort((-turns.ts, -turns.score))[:limit])  # the best, in time order
    best_first = np.lexsort((-turns.ts[pool], -turns.score[pool])).tolist()  # ties in time order
    entries: list[DiaryEntry | None] = [None] * pool.size
    texts, tokens = [""] * pool.size, [0] * pool.size

    def read(idx: list[int]) -> None:
        for i, e in zip(idx, load(turns.rows[pool[idx]])):
            entries[i] = e
            texts[i] = turn_text(e, tz, max_tokens=max_turn_tokens)
            tokens[i] = count_tokens(texts[i])

    chosen: list[int] = []
    if pool.size == len(turns):
        read(list(range(pool.size)))  # they may all fit: every one is counted
        if sum(tokens) <= budget:
            chosen = list(range(pool.size))
    if not chosen:
        room = budget - NOTE_RESERVE
        at, step = 0, max(1, room // (4 * MIN_LINE_TOKENS))  # first about a quarter of what can fit
        seen = 0  # tokens of the lines looked at so far
        while at < len(best_first) and room >= MIN_LINE_TOKENS:
            part = best_first[at : at + step]
            if entries[part[0]] is None:
                read(part)
            took = len(chosen)
            for i in part:
                seen += tokens[i]
                if tokens[i] <= room:
                    chosen.append(i)
                    room -= tokens[i]
            at += len(part)
            # Then about what the room left holds at the lines' cost so far (a month's best turns
            # were read 17 at a time to fill its last ~200 tokens with 2 of them); twice as many
            # when none of a read fitted (only shorter lines further down can fill the rest).
            step = room // max(MIN_LINE_TOKENS, seen // at) + 1 if len(chosen) > took else 2 * len(part)
    hits = [
        Hit(
            store=STORE,
            text=texts[i],
            score=float(turns.score[pool[i]]),
            reason=str(turns.reason[pool[i]]),
            tokens=tokens[i],
            meta={"kind": "turn", "id": entries[i].id, "time": entries[i].at.isoformat(), "tag": entries[i].tag},
        )
        for i in sorted(chosen)
    ]
    return hits, len(turns) - len(hits)


def digest_hits(
    turns: RangeTurns,
    digest_for: Callable[[str, np.ndarray], tuple[str, str]],
    *,
    language: str,
    budget: int,
) -> tuple[list[Hit], int, int]:
    """(one hit per day, turns left out, days left out). `digest_for(day, indices of its turns)`
    gives (text, source); days are kept chronologically, the most relevant first when over budget."""
    items = []
    for day, group in turns.days:
        text, source = digest_for(day, group)
        label = f"{group.size} 轮" if language == "zh" else f"{group.size} turns"
        line = f"[{day}，{label}] {text}" if language == "zh" else f"[{day}, {label}] {text}"
        items.append((day, group, line, count_tokens(line), float(turns.score[group].max()), source))
    total = sum(it[3] for it in items)
    keep: set[str] = set()
    if total <= budget:
        keep = {it[0] for it in items}
    else:
        room = budget - NOTE_RESERVE
        for it in sorted(items, key=lambda it: (it[4], it[0]), reverse=True):
            if it[3] <= room:
                keep.add(it[0])
                room -= it[3]
    hits = [
        Hit(
            store=STORE,
            text=line,
            score=score,
            reason=f"{turns.reason[group[0]]}; digest of {day} ({source})",
            tokens=tok,
            meta={"kind": "digest", "day": day, "turns": int(group.size), "source": source},
        )
        for day, group, line, tok, score, source in items
        if day in keep
    ]
    left_turns = sum(int(group.size) for day, group, *_ in items if day not in keep)
    return hits, left_turns, len(items) - len(keep)
