"""What the diary puts into one prompt: a named past range, then the hybrid search's best lines.

1. Time: the message's expressions -> ranges clipped to `now` -> the recall decision
   (`recall.py`). A used range is answered whole when it fits the budget (digests when long), else
   by its most relevant turns (the search restricted to the range), with a note of how many were
   left out. A day whose file cannot be read is named, never reported as "no conversations".
2. Search: always, over every turn, with the message's words (time words and the participants'
   names removed: names decide which side ranks first instead), for the budget left. A range in
   the question ranks its turns first. Lines already in the window are skipped.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from engine.paths import CharacterPaths
from engine.search.base import SearchHit, SearchRequest, Side
from engine.stores.base import Hit, Query
from engine.stores.diary.recall import clip_to_past, decide, is_question, recall_cue
from engine.stores.diary.render import (
    NOTE_RESERVE, STORE, Candidate, digest_hits, fmt_range, omitted_note, raw_hits, search_hits,
)
from engine.stores.diary.userdiary import UserDiary
from engine.tokens import count_tokens

RAW_CANDIDATES = 400
"""At most this many raw turns of one range are read from disk to choose from."""
MIN_SEARCH_TOKENS = 40
SEARCH_K = 80
"""Search results asked for (more than fit: some are skipped as duplicates of the window)."""

_EN_SELF = re.compile(r"\b(i|me|my|mine|myself)\b", re.IGNORECASE)
_EN_OTHER = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Names:
    user: str
    char: str


def character_names(paths: CharacterPaths) -> Names:
    """The user's and the character's names from the character file; empty ones when it cannot be
    read (names only steer ranking: a prompt never fails for them)."""
    from engine.character import load_character

    try:
        character = load_character(paths)
    except Exception as exc:  # noqa: BLE001 - names only steer ranking; never fail a prompt
        logging.getLogger(__name__).warning("diary: character names unavailable (%s); search without them", exc)
        return Names("", "")
    return Names(character.user_name, character.name)


def side_of(message: str, names: Names) -> Side | None:
    """The participant a message is about, when it names exactly one (by name, or 我/I vs 你/you)."""
    lowered = message.lower()

    def named(name: str) -> bool:
        if not name:
            return False
        if re.search(r"[\u4e00-\u9fff]", name):
            return name in message
        return re.search(rf"\b{re.escape(name.lower())}\b", lowered) is not None

    user, char = named(names.user), named(names.char)
    if user != char:
        return "user" if user else "assistant"
    if user:
        return None
    me = "我" in message or bool(_EN_SELF.search(message))
    you = "你" in message or bool(_EN_OTHER.search(message))
    if me != you:
        return "user" if me else "assistant"
    return None


def search_text(message: str, spans: Sequence[tuple[int, int]], names: Names) -> str:
    """The message without its time expressions and the participants' names."""
    text = message
    for a, b in sorted(spans, reverse=True):
        text = text[:a] + " " + text[b:]
    for name in (names.user, names.char):
        if name:
            text = re.sub(re.escape(name), " ", text, flags=re.IGNORECASE)
    return text


SMALL_TALK_CHARS = 4
"""A statement (no question, no recall cue) whose content words add up to at most this many
characters ("天气真好", "晚安", "好累啊", "ok thanks") carries too little to search on."""


def is_small_talk(message: str, text: str) -> bool:
    from engine.search.text import content_terms

    if is_question(message) or recall_cue(message):
        return False
    # A Chinese word counts its characters, another word counts as two (about as much meaning).
    weight = sum(len(t) if re.search(r"[\u4e00-\u9fff]", t) else 2 for t in content_terms(text))
    return weight <= SMALL_TALK_CHARS


def answer(store, diary: UserDiary, query: Query, names: Names) -> list[Hit]:
    from engine.timeparse import parse_time_ranges

    config, tz = store.config, store.tz
    now = query.now.astimezone(tz)
    expressions = parse_time_ranges(query.message, now=now)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    ranges = []
    for expr in expressions:
        clipped = clip_to_past(expr.start, expr.end, now)
        if clipped is not None:
            ranges.append((expr, clipped))
    decision = decide(
        query.message,
        has_past_range=bool(ranges),
        require_cue=config.require_recall_cue,
        before_today=any(stop <= today for _, (_, stop) in ranges),
    )
    vector = message_vector(query)
    window = {" ".join(m.get("content", "").split()) for m in query.recent}
    side = side_of(query.message, names)
    text = search_text(query.message, [e.span for e in expressions], names)
    budget = store.budget_tokens
    hits: list[Hit] = []
    with diary.lock:
        diary.refresh()
        span = None
        covered: set[str] = set()
        in_range_total = 0
        if decision.use:
            cands, parts, span = _range_candidates(store, diary, ranges, decision, vector)
            if cands and _has_content(text, decision.cue):
                # A question about content with a time range ("what book did I mention last
                # week"): the whole range when it fits in half the budget, else the search with
                # the range's matching lines first.
                trial = store.range_hits(diary, cands, parts, budget=budget // 2)
                if any(h.meta.get("kind") in ("omitted", "digest") for h in trial):
                    in_range_total = len(cands)
                    trial = [h for h in trial if h.meta.get("kind") == "broken"]
                range_hits = trial
            else:
                if len(cands) > 1 and _has_content(text, decision.cue):
                    cands = _rank_in_range(diary, cands, span, vector, text, side)
                range_hits = store.range_hits(diary, cands, parts, budget=budget)
            covered = {str(i) for h in range_hits for i in (h.meta.get("ids") or [h.meta.get("id")]) if i}
            if not in_range_total:
                span = None
            hits += range_hits
            budget -= sum(h.tokens or count_tokens(h.text) for h in range_hits)
        if config.search and budget >= MIN_SEARCH_TOKENS and not is_small_talk(query.message, text):
            request = SearchRequest(
                text=text, vector=vector, k=SEARCH_K, side=side, exclude=frozenset(covered),
                start=span[0] if span else None, end=span[1] if span else None,
            )
            found = diary.search.search(request)
            reason = "hybrid search (words + meaning)" + (", the asked range first" if span else "")
            lines = search_hits(
                found, tz=tz, budget=budget - (NOTE_RESERVE if span else 0), max_line_tokens=config.max_turn_tokens,
                skip_texts=window, reason=reason, names=(names.user, names.char),
            )
            hits += lines
            if span:
                hits += omitted_note(store.prompts, ranges, in_range_total, lines, found)
    return hits


def _has_content(text: str, cue: str) -> bool:
    """Words beyond the time expression and the recall cue ("what BOOK did I mention")."""
    from engine.search.text import content_terms

    rest = text.replace(cue, " ") if cue else text
    return bool(content_terms(rest))


def query_texts(config, message: str, recent, names: Names) -> list[str]:
    """What the diary asks the orchestrator to embed for it (both backends): the message alone,
    when the query text also carries the window's last turn, since the search ranks a standalone
    question better by its own vector (measured on LoCoMo: +3 points); and without the
    participants' names: nearly every line is said to or by one of them, so a name in the vector
    matches everything a little and the topic less (the side prior decides whose lines rank
    first; LoCoMo tuning split: multi-hop 0.576 -> 0.641)."""
    if not (config.enabled and config.search and message.strip()):
        return []
    text = " ".join(search_text(message, [], names).split())
    if text and text != message:
        return [text]
    return [message] if recent else []


def message_vector(query: Query) -> np.ndarray | None:
    """The message's own vector when the diary asked for it (the query text adds the window's
    last turn, which blurs a standalone question), else the query vector."""
    texts, vectors = query.pieces.get(STORE, ((), None))
    if texts and vectors is not None and len(vectors):
        return np.asarray(vectors[0], dtype=np.float32)
    return query.vector


def _range_candidates(store, diary: UserDiary, ranges, decision, vector):
    """(the used ranges' turns as candidates, the ranges' descriptions, (start, end) epoch span
    of the first range)."""
    tz = store.tz
    cands: dict[int, Candidate] = {}
    parts = []
    first = None
    for expr, (start, stop) in ranges:
        clipped = stop < expr.end
        # Half-open [start, end); a range clipped at now keeps the turns of now's second.
        last = math.floor(stop.timestamp()) if clipped else math.ceil(expr.end.timestamp()) - 1
        lo, hi = diary.index.span(math.ceil(start.timestamp()), last)
        if first is None:
            first = (math.ceil(start.timestamp()), last + 1)
        desc = fmt_range(expr.start, expr.end, tz)
        reason = f'expression "{expr.text}" → {desc}, {hi - lo} turns'
        if clipped:
            reason += f" (up to now, {stop.astimezone(tz):%Y-%m-%d %H:%M})"
        reason += f', recall cue "{decision.cue}"' if decision.cue else ""
        rows = np.arange(lo, hi)
        if store.config.semantic_filter and vector is not None and rows.size:
            # MoeChat's is_check_memorys: keep only turns whose tag is close to the message.
            tags = diary.index.tag[rows]
            sims = diary.index.tagvec[tags] @ np.asarray(vector, dtype=np.float32).reshape(-1)
            keep = ~diary.index.tag_ok[tags] | (sims >= store.filter_threshold)
            reason += f", {int((~keep).sum())} dropped by the tag filter < {store.filter_threshold:.2f}"
            rows = rows[keep]
        parts.append((expr, desc, int(rows.size), start, stop))
        fresh = rows[~np.isin(rows, np.fromiter(cands, dtype=np.int64, count=len(cands)))] if cands else rows
        for c in _candidates(diary, fresh, reason):
            cands[c.row] = c
    out = list(cands.values())
    if len(parts) > 1:  # one range's rows come in time order already
        out.sort(key=lambda c: (c.ts, c.row))
    return out, parts, first


def _rank_in_range(diary: UserDiary, cands: list[Candidate], span, vector, text: str, side) -> list[Candidate]:
    """Scores for the range's turns from the search restricted to the range (best half)."""
    found: list[SearchHit] = diary.search.search(
        SearchRequest(text=text, vector=vector, k=min(2 * len(cands), RAW_CANDIDATES), start=span[0], end=span[1],
                      only_range=True, side=side)
    )
    best: dict[str, float] = {}
    for h in found:
        best[h.turn_id] = max(best.get(h.turn_id, 0.0), h.score)
    ids = diary.index.ids()
    out = []
    for c in cands:
        tid = ids[c.row].decode("utf-8")
        out.append(Candidate(c.row, c.ts, c.day, c.tag, best.get(tid, 0.0), c.reason))
    return out


def _candidates(diary: UserDiary, rows: np.ndarray, reason: str) -> list[Candidate]:
    """`_candidate` for many rows at once (a month can hold thousands of turns: read the columns
    once instead of row by row)."""
    index = diary.index
    ts = index.ts[rows].tolist()
    files = index.file[rows].tolist()
    tags = index.tag[rows].tolist()
    # Day files are per local day, so the file name is the entry's local day (no tz maths).
    day = {f: index.file_names[f][:10] for f in set(files)}
    names = index.tags
    return [Candidate(r, t, day[f], names[g], 0.0, reason) for r, t, f, g in zip(rows.tolist(), ts, files, tags)]


def broken_days(diary: UserDiary, start: datetime, stop: datetime, tz) -> list[str]:
    """Problems of the day files a range touches (a day that could not be read is not 'empty')."""
    day = start.astimezone(tz).date()
    last = stop.astimezone(tz).date()
    out: list[str] = []
    if (last - day).days > 400:
        return [p for p in diary.problems]
    while day <= last:
        out += diary.day_problems(f"{day:%Y-%m-%d}.yaml")
        day += timedelta(days=1)
    return out


__all__ = ["Names", "answer", "broken_days", "raw_hits", "digest_hits", "RAW_CANDIDATES"]
