"""Turning diary rows into hits within the diary's token budget.

Short ranges (at most `digest_over_turns` turns, or a single day) are answered with raw turns:
all of them when they fit, else the most relevant ones. Long ranges get one digest per day (the
memory LLM's when it is fresh, else one built from the day's tags), the most relevant days first
when even those do not fit. Either way a pinned note says how many turns were left out, so the
model does not claim that nothing else happened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from typing import NamedTuple

from engine.search.base import SearchHit
from engine.stores.base import Hit
from engine.stores.diary.dates import annotate
from engine.stores.diary.entry import DiaryEntry
from engine.tokens import count_tokens, truncate_tokens

STORE = "diary"
NOTE_RESERVE = 60
"""Tokens kept free for the 'N turns left out' note."""


class Candidate(NamedTuple):
    """One in-range row. A named tuple, not a frozen dataclass: a month's range builds thousands
    per prompt, and a frozen dataclass's construction took half the month question's own work."""

    row: int
    ts: int
    day: str
    """Local day, YYYY-MM-DD."""
    tag: str
    score: float
    reason: str


def fmt_range(start: datetime, end: datetime, tz: tzinfo) -> str:
    a, b = start.astimezone(tz), end.astimezone(tz)
    return f"[{a:%Y-%m-%d %H:%M}, {b:%Y-%m-%d %H:%M}) {_offset(a)}"


def _offset(at: datetime) -> str:
    z = at.strftime("%z")
    return f"{z[:3]}:{z[3:]}" if len(z) == 5 else z


def shorten(text: str, max_tokens: int) -> str:
    """One line of at most `max_tokens` (with "…" when cut); whitespace runs become one space."""
    flat = " ".join(text.split())
    short = truncate_tokens(flat, max_tokens)
    return short if short == flat else short + "…"


def turn_text(entry: DiaryEntry, tz: tzinfo, *, max_tokens: int) -> str:
    half = max(20, max_tokens // 2)
    user = annotate(shorten(entry.user, half), entry.dates)
    reply = annotate(shorten(entry.assistant, half), entry.dates)
    return f"[{entry.at.astimezone(tz):%Y-%m-%d %H:%M}] {{{{user}}}}: {user} / {{{{char}}}}: {reply}"


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
    unless it is longer than `max_line_tokens`; halves already in the window are skipped.
    `names` (user, character) are what {{user}} / {{char}} become: lines are counted as sent.

    A line is charged what it costs with its newline (a sentence's final "." and the newline are
    often one token), a day its header once; a hit's `tokens` is what its day was charged, which
    the sent text never exceeds (its last line has no newline after it)."""
    chosen: list[tuple[SearchHit, str, str, int]] = []
    day_cost: dict[str, int] = {}
    room = budget
    for h in found:
        if " ".join(h.text.split()) in skip_texts:
            continue
        who = "{{user}}" if h.side == "user" else "{{char}}"
        body = annotate(shorten(h.text, max_line_tokens), h.dates)
        sent = f"{(names[0] if h.side == 'user' else names[1]) or who}: {body}\n"
        # Every whitespace-separated word is at least one token: most lines that cannot fit in
        # what is left are known without encoding them.
        if len(sent.split()) > room:
            continue
        day = datetime.fromtimestamp(h.ts, tz).date().isoformat()
        header = 0 if day in day_cost else count_tokens(f"[{day}]\n")
        cost = count_tokens(sent)
        if cost + header > room:
            continue
        room -= cost + header
        day_cost[day] = day_cost.get(day, 0) + cost + header
        chosen.append((h, f"{who}: {body}", day, cost))
    if not chosen:
        return []
    best = max(h.score for h, *_ in chosen) or 1.0
    by_day: dict[str, list[tuple[SearchHit, str, str, int]]] = {}
    for item in sorted(chosen, key=lambda it: (it[0].ts, it[0].side != "user")):
        by_day.setdefault(item[2], []).append(item)
    out = []
    for day, items in by_day.items():
        text = f"[{day}]\n" + "\n".join(line for _, line, _, _ in items)
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


def omitted_note(
    prompts, ranges: Sequence, total: int, lines: Sequence[Hit], found: Sequence[SearchHit]
) -> list[Hit]:
    """After a range too long to show was answered by the search: the pinned "N of the range's
    turns are not shown" note (none when every turn of the range made it into `lines`).
    `ranges`: (expression, clipped range) pairs; `prompts`: the store's `Prompts`."""
    shown = {i for h in lines for i in h.meta["ids"]} & {h.turn_id for h in found if h.in_range}
    omitted = total - len(shown)
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
    cands: Sequence[Candidate],
    load: Callable[[list[Candidate]], list[DiaryEntry]],
    *,
    tz: tzinfo,
    budget: int,
    max_turn_tokens: int,
    limit: int,
) -> tuple[list[Hit], int]:
    """(hits in chronological order, number left out). All turns when they fit the budget, else
    the most relevant (then the latest) ones. Only the `limit` best candidates are read from disk."""
    if len(cands) <= limit:
        pool = list(cands)
    else:
        pool = sorted(cands, key=lambda c: (c.score, c.ts), reverse=True)[:limit]
        pool.sort(key=lambda c: (c.ts, c.row))
    entries = load(pool)
    texts = [turn_text(e, tz, max_tokens=max_turn_tokens) for e in entries]
    tokens = [count_tokens(t) for t in texts]
    chosen: set[int] = set()
    if sum(tokens) <= budget and len(pool) == len(cands):
        chosen = set(range(len(pool)))
    else:
        room = budget - NOTE_RESERVE
        for i in sorted(range(len(pool)), key=lambda i: (pool[i].score, pool[i].ts), reverse=True):
            if tokens[i] <= room:
                chosen.add(i)
                room -= tokens[i]
    hits = [
        Hit(
            store=STORE,
            text=texts[i],
            score=pool[i].score,
            reason=pool[i].reason,
            tokens=tokens[i],
            meta={"kind": "turn", "id": entries[i].id, "time": entries[i].at.isoformat(), "tag": entries[i].tag},
        )
        for i in sorted(chosen)
    ]
    return hits, len(cands) - len(hits)


def digest_hits(
    cands: Sequence[Candidate],
    digest_for: Callable[[str, list[Candidate]], tuple[str, str]],
    *,
    language: str,
    budget: int,
) -> tuple[list[Hit], int, int]:
    """(one hit per day, turns left out, days left out). `digest_for(day, day_cands)` gives
    (text, source); days are kept chronologically, the most relevant first when over budget."""
    days: dict[str, list[Candidate]] = {}
    for c in cands:
        days.setdefault(c.day, []).append(c)
    items = []
    for day, group in days.items():
        text, source = digest_for(day, group)
        label = f"{len(group)} 轮" if language == "zh" else f"{len(group)} turns"
        line = f"[{day}，{label}] {text}" if language == "zh" else f"[{day}, {label}] {text}"
        score = max(c.score for c in group)
        items.append((day, group, line, count_tokens(line), score, source))
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
            reason=f"{group[0].reason}; digest of {day} ({source})",
            tokens=tok,
            meta={"kind": "digest", "day": day, "turns": len(group), "source": source},
        )
        for day, group, line, tok, score, source in items
        if day in keep
    ]
    left_turns = sum(len(group) for day, group, *_ in items if day not in keep)
    return hits, left_turns, len(items) - len(keep)
