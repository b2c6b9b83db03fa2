"""What the diary puts into one prompt: a named past range, then the hybrid search's best lines.

1. Time: the message's expressions -> ranges clipped to `now` -> the recall decision
   (`recall.py`). A used range is answered whole when it fits the budget (digests when long),
   else by its most relevant turns (one search, the range's hits leading), with a note of how
   many were left out. A day whose file cannot be read is named, never reported as "no conversations".
2. Search: always, over every turn, with the message's words (time words and the participants'
   names removed: names decide which side ranks first instead), for the budget left. A range in
   the question ranks its turns first. Lines already in the window are skipped.

Every backend answers with this one `answer`; what differs is behind `DiarySource` (`port.py`).
What it reads in the message first (names, side, search text, small talk) is `question.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

import numpy as np

from engine.conversation import normalize
from engine.search.base import SearchHit, SearchRequest, Tuning
from engine.stores.base import Hit, Query
from engine.stores.diary.asking import ask_kind, has_content_words
from engine.stores.diary.dates import label_range
from engine.stores.diary.port import DiarySource
from engine.stores.diary.people import about_someone, names_participant
from engine.stores.diary.question import (
    Names, is_small_talk, message_vector, piece_vector, residual, search_text, side_of,
)
from engine.stores.diary.ranges import named_days, past_ranges
from engine.stores.diary.recall import RecallDecision, decide_with_model, is_question, recall_cue
from engine.stores.diary.render import (
    MIN_LINE_TOKENS, NOTE_RESERVE, STORE, RangeTurns, digest_hits, fmt_range, half_tokens, omitted_hit, omitted_note, raw_hits,
    search_hits,
)
from engine.stores.diary.writing import fallback_digest
from engine.timeparse import TimeExpression
from engine.timeparse.script import as_tables_read
from engine.tokens import count_tokens

if TYPE_CHECKING:
    from engine.config import DiaryConfig
    from engine.prompts import Prompts

RAW_CANDIDATES = 400
"""At most this many raw turns of one range are read from disk to choose from."""
MIN_SEARCH_TOKENS = 40
SEARCH_K = 80
"""Search results asked for (more than fit: some are skipped as duplicates of the window)."""

# "上次我们聊到哪了", "what did we talk about last time", "where did we leave off": the last time
# is no calendar day but the previous sitting (turns no more than SITTING_GAP_S apart), which only
# the diary knows. Only when the message names no calendar time ("上周我们聊到哪了" is last week),
# and only about the conversation itself: "上次你推荐的那本书" means the last time a book came up.
_LAST_SITTING = re.compile(
    r"(?:上[次回]|上一[次回])(?:我们|咱们|咱|你我|我和你|跟你|和你)?[^，。！？,.!?]{0,3}?(?:聊|谈|说到|讲到|说了|讲了)"
    r"|\blast time (?:we|i) (?:talked|chatted|spoke|discussed|talk|chat|speak)\b"
    r"|\b(?:what|where) did we (?:talk|chat|speak)\b[^.?!]{0,30}\blast time\b"
    r"|\bwhere (?:did )?we (?:left|leave) off\b|\bwhere were we\b",
    re.IGNORECASE,
)
MENTION_DAYS = 7
"""A past stretch is often told of after it ("last week I took the kids to the zoo", said on the
Monday): turns up to this many days after an asked range whose resolved dates fall in it join the
range's turns."""
SITTING_GAP_S = Tuning.session_gap_s
"""Turns further apart than this are different sittings (the search's conversations too)."""
SITTING_LOOKBACK_DAYS = (2, 30, 400)
"""How far back the previous sitting is looked for, widening only when nothing was found."""

@dataclass(frozen=True)
class Answering:
    """What an answer needs of its store besides the source."""

    config: "DiaryConfig"
    prompts: "Prompts"
    tz: tzinfo
    budget: int
    model_id: str = ""
    """The embedder's model (the decision of `asking.py` has weights per model)."""


def answer(source: DiarySource, how: Answering, query: Query, names: Names) -> list[Hit]:
    from engine.timeparse import parse_time_ranges

    config, tz = how.config, how.tz
    now = query.now.astimezone(tz)
    # What the rule tables read: Simplified characters and Mandarin words (`as_tables_read`), the
    # same length, so its spans are the message's. What is searched, embedded and shown stays as
    # the user wrote it.
    said = as_tables_read(query.message)
    who = (as_tables_read(names.user), as_tables_read(names.char))  # the participants, as the tables read them
    expressions = parse_time_ranges(said, now=now)
    ranges = named_days(past_ranges(said, expressions, now))
    # what the message asks besides its time words: read by both models of `asking.py`
    rest_vector = piece_vector(query, residual(query.message, [e.span for e in expressions], names))
    decision = decide_with_model(said, ranges, now, rest_vector, how.model_id,
                                 require_cue=config.require_recall_cue, names=who)
    ranges = [(replace(e, text=query.message[slice(*e.span)]), r) for e, r in ranges]  # shown in the user's words
    vector = message_vector(query)
    window = {normalize(m.get("content", "")) for m in query.recent}
    side = side_of(said, Names(*who))
    sitting = _LAST_SITTING.search(said) if not expressions else None
    text = search_text(query.message, [e.span for e in expressions] + ([sitting.span()] if sitting else []), names)
    read_text = as_tables_read(text)
    budget = how.budget
    cued = bool(recall_cue(said)) or bool(decision.learned)
    about_us = cued or about_someone(said, *who)
    about_participant = is_question(said) and names_participant(said, *who)

    def search(exclude: frozenset[str], **range_args) -> list[SearchHit]:
        return source.search(SearchRequest(text=text, vector=vector, side=side, exclude=exclude, asks_memory=about_us,
                                           about_participant=about_participant, **range_args))

    hits: list[Hit] = []
    with source.hold():
        if sitting is not None:
            previous = previous_sitting(source, now)
            if previous is not None:
                expr = TimeExpression(query.message[slice(*sitting.span())], *previous, sitting.span(), "", "previous_sitting")
                ranges.append((expr, previous))
                decision = RecallDecision(True, sitting.group(0))
        covered: set[str] = set()
        in_range_total = 0
        whole = False
        found: list[SearchHit] | None = None  # the search's hits, once the range's ranking has run it
        if decision.use:
            asked = ask_kind(rest_vector, how.model_id, has_content=has_content_words(read_text, decision.cue))
            at_most = budget // MIN_LINE_TOKENS  # more turns than this cannot fit: no need to read them
            # Only a recap surely asked shows a range too long for its turns whole (as digests).
            cands, own, parts, span = _range_candidates(source, tz, ranges, decision, vector,
                                                        at_most=None if asked.kind == "range" and asked.sure else at_most)
            found_turns = len(cands)
            if query.exclude and len(cands):
                keep = [i for i, tid in enumerate(source.turn_ids(cands.rows)) if tid not in query.exclude]
                cands = cands.take(np.array(keep, dtype=np.int64))
            if window and len(cands):
                cands = _not_in_window(source, cands, window, len(query.recent), now)
            if len(cands) < found_turns:  # the range's own turns are among them: what left those leaves these
                own = own.take(np.flatnonzero(np.isin(own.rows, cands.rows)))
            whole = asked.kind == "range" and len(cands) > 0
            # A whole range is shown whole (digests when long) and nothing competes with it. A
            # content question gets the range's turns first, all of them when they fit; else its
            # best turns by the search, which ranks the range first, with a quarter left for what
            # else matches by score, other days' lines among it (the line that answers often shares
            # no word with the question, and the asked date may be misremembered). Digests lose a
            # content question's answer: a range that does not fit as turns is a recap only when
            # surely asked.
            if whole and not asked.sure and digested(how.config, cands):
                whole = False
            found_in_range = []
            if whole or len(cands) <= at_most:
                found_in_range = range_hits(source, how, cands, parts, budget=budget, digest=whole, why=asked.how)
                if len(own) < len(cands) and _cut(found_in_range):
                    # what was told of the range afterwards gives way to the range's own turns
                    own_hits = range_hits(source, how, own, parts, budget=budget, digest=whole, why=asked.how)
                    if not _cut(own_hits):
                        cands, found_in_range = own, own_hits
            too_long = len(cands) > at_most or _cut(found_in_range)
            if whole and not asked.sure and too_long:
                whole = False
            if not whole and too_long:
                in_range_total = len(cands)
                # Ranked for 3/4 of the budget: more of its lines than that holds are never shown.
                room = budget - budget // 4
                found = search(query.exclude, k=room // MIN_LINE_TOKENS + SEARCH_K, start=span[0], end=span[1],
                               range_k=room // MIN_LINE_TOKENS, range_tokens=room,
                               half_tokens=half_tokens(config.max_turn_tokens))
                at = places(source, cands, found)
                range_ids = {h.turn_id for h, i in zip(found, at) if i >= 0}
                score = np.zeros(len(cands))
                ranked_at = np.array([i >= 0 and h.in_range for h, i in zip(found, at)], dtype=bool)
                np.maximum.at(score, at[ranked_at], np.array([h.score for h in found])[ranked_at])
                ranked = cands.ranked(score)
                found_in_range = [h for h in range_hits(source, how, ranked, parts, budget=room, digest=False,
                                                        why=asked.how, read_at_most=room // MIN_LINE_TOKENS)
                                  if h.meta.get("kind") != "omitted"]
            covered = {str(i) for h in found_in_range for i in (h.meta.get("ids") or [h.meta.get("id")]) if i}
            hits += found_in_range
            budget -= sum(h.tokens or count_tokens(h.text) for h in found_in_range)
        small_talk = is_small_talk(said, read_text, cued=cued, about_us=about_us, asks_range=decision.use)
        if config.search and budget >= MIN_SEARCH_TOKENS and not small_talk and not whole:
            if found is None:
                found = search(frozenset(covered) | query.exclude, k=SEARCH_K)
            else:  # what the range left, every day alike (the range's unshown turns too), by score
                found = sorted((h for h in found if h.turn_id not in covered), key=lambda h: -h.score)
            lines = search_hits(
                found, tz=tz, budget=budget - (NOTE_RESERVE if in_range_total else 0), max_line_tokens=config.max_turn_tokens,
                skip_texts=window, reason="hybrid search (words + meaning)", names=(names.user, names.char),
            )
            hits += lines
        else:
            lines = []
        if in_range_total:
            shown = covered | {i for h in lines for i in h.meta.get("ids", ()) if i in range_ids}
            hits += omitted_note(how.prompts, ranges, in_range_total, len(shown))
    return hits


def _not_in_window(source: DiarySource, turns: RangeTurns, window: set[str], sent: int, now: datetime) -> RangeTurns:
    """`turns` without those of the sitting under way that the conversation already holds: a range
    that reaches into it ("昨天晚上我们聊了什么" asked at 1 a.m.: the night runs to 5) would show them
    again beside the messages that hold them. An earlier day's turns stay even when the client sends
    them back (SillyTavern sends the whole chat): only the diary says which day they were."""
    ts = turns.ts
    if not len(ts) or int(now.timestamp()) - int(ts[-1]) > SITTING_GAP_S:
        return turns
    breaks = np.flatnonzero(np.diff(ts) > SITTING_GAP_S)
    start = max(int(breaks[-1]) + 1 if breaks.size else 0, len(ts) - (sent // 2 + 1))
    tail = np.arange(start, len(ts))
    held = [i for i, e in zip(tail.tolist(), source.entries(turns.rows[tail]))
            if normalize(e.assistant or e.user) in window]
    if not held:
        return turns
    return turns.take(np.setdiff1d(np.arange(len(turns)), held))


def _cut(hits: Sequence[Hit]) -> bool:
    """Some of a range's turns were left out (or shown as digests): the note says how many."""
    return any(h.meta.get("kind") == "omitted" for h in hits)


def places(source: DiarySource, turns: RangeTurns, hits: Sequence[SearchHit]) -> np.ndarray:
    """Per hit, the index of its turn among `turns`, or -1 when it is not one of them. Found by
    time, then checked by id among the few turns of that second: a month's thousands of ids are
    never read (reading them and mapping the hits by id took ~2 ms of a month question's ~15)."""
    at = np.full(len(hits), -1, dtype=np.int64)
    if not hits or not len(turns):
        return at
    ts = np.array([h.ts for h in hits], dtype=np.int64)
    lo, hi = np.searchsorted(turns.ts, ts, "left"), np.searchsorted(turns.ts, ts, "right")
    maybe = np.flatnonzero(hi > lo)
    spans = [np.arange(lo[j], hi[j]) for j in maybe.tolist()]
    if not spans:
        return at
    ids = iter(source.turn_ids(turns.rows[np.concatenate(spans)]))
    for j, span in zip(maybe.tolist(), spans):
        for i in span.tolist():
            if next(ids) == hits[j].turn_id:
                at[j] = i
    return at


def previous_sitting(source: DiarySource, now: datetime) -> tuple[datetime, datetime] | None:
    """[first turn, last turn + 1 s) of the sitting before the current one (the current one: turns
    up to SITTING_GAP_S before now), or None when the diary has none."""
    end = int(now.timestamp())
    for days in SITTING_LOOKBACK_DAYS:
        ts = source.span(end - days * 86400, end + 1, None, lambda n, dropped: "").ts  # in time order
        if not ts.size:
            continue
        breaks = np.flatnonzero(np.diff(ts) > SITTING_GAP_S)
        starts, stops = np.r_[0, breaks + 1], np.r_[breaks, ts.size - 1]
        k = starts.size - 1
        if end - int(ts[stops[k]]) <= SITTING_GAP_S:
            k -= 1  # the sitting under way (its turns are in the window)
        if k >= 0:
            tz = now.tzinfo
            return (datetime.fromtimestamp(int(ts[starts[k]]), tz), datetime.fromtimestamp(int(ts[stops[k]]) + 1, tz))
    return None


def _range_candidates(source: DiarySource, tz: tzinfo, ranges, decision, vector, *, at_most: int | None):
    """(the used ranges' turns with those told of after them, the ranges' own turns, the ranges'
    parts (expression, description, turns, start, stop), (start, end) epoch span of the first
    range). A range of more than `at_most` turns is shown by its best turns only: the turns told of
    after it are not read."""
    found: list[RangeTurns] = []
    own: list[RangeTurns] = []
    parts = []
    first = None
    for expr, (start, stop) in ranges:
        clipped = stop < expr.end
        # Half-open [start, end); a range clipped at now keeps the turns of now's second.
        last = math.floor(stop.timestamp()) if clipped else math.ceil(expr.end.timestamp()) - 1
        lo = math.ceil(start.timestamp())
        if first is None:
            first = (lo, last + 1)
        desc = fmt_range(expr.start, expr.end, tz)

        def reason(n: int, dropped: str, expr=expr, desc=desc, clipped=clipped, stop=stop) -> str:
            why = f'expression "{expr.text}" → {desc}, {n} turns'
            if clipped:
                why += f" (up to now, {stop.astimezone(tz):%Y-%m-%d %H:%M})"
            why += f", {decision.why}" if decision.why else ""
            return why + dropped

        turns = source.span(lo, last + 1, vector, reason)
        own.append(turns)
        # A range too long to show whole is answered by its best turns, by a search within it: turns
        # told of afterwards would rank last there (the search finds them among the other days).
        told = None if at_most is not None and len(turns) > at_most else _told_of_afterwards(
            source, tz, lo, last + 1, f'expression "{expr.text}" → {desc}: told of afterwards')
        found += [turns] if told is None else [turns, told]
        parts.append((expr, desc, len(turns) + (len(told) if told is not None else 0), start, stop))
    return RangeTurns.join(found), RangeTurns.join(own), parts, first


def _told_of_afterwards(source: DiarySource, tz: tzinfo, lo: int, hi: int, why: str) -> RangeTurns | None:
    """Turns of the MENTION_DAYS after [lo, hi) whose resolved dates (`dates.py`: "last week
    (2023-07-24–2023-07-30)") fall in it: what was told of the range once it had passed."""
    after = source.span(hi, hi + MENTION_DAYS * 86400, None, lambda n, dropped: why)
    if not len(after):
        return None
    by_id = {e.id: e for e in source.entries(after.rows)}
    keep = []
    for i, tid in enumerate(source.turn_ids(after.rows)):
        entry = by_id.get(tid)
        for _, label in entry.dates if entry is not None else ():
            r = label_range(label, tz)
            if r is not None and r[0].timestamp() < hi and r[1].timestamp() > lo:
                keep.append(i)
                break
    return after.take(np.array(keep, dtype=np.int64)) if keep else None


def range_hits(source: DiarySource, how: Answering, cands: RangeTurns, parts: list, *, budget: int,
               digest: bool = True, why: str = "", read_at_most: int = RAW_CANDIDATES) -> list[Hit]:
    """A used range: all its turns, its best turns, or per-day digests (`digest`: a long range
    over several days; content questions want turns), plus the notes (a day file that could not
    be read is named; an empty range says so). `why`: what the question asks, for the reasons."""
    language = how.prompts.language
    ranges = "；".join(f"“{e.text}” {d}" for e, d, *_ in parts) if language == "zh" else "; ".join(
        f'"{e.text}" {d}' for e, d, *_ in parts
    )
    broken = [p for _, _, _, start, stop in parts for p in source.broken(start, stop)]
    pinned = []
    if broken:
        note = ("（以下日记文件无法完整读取，那几天的记录可能不全：" if language == "zh" else
                "(these diary files could not be read completely; records of those days may be missing: ")
        pinned = [Hit(STORE, note + "; ".join(broken[:3]) + ("）" if language == "zh" else ")"), 1.0,
                      "broken day file in the range", pinned=True, meta={"kind": "broken"})]
    if not len(cands):
        if broken:
            return pinned
        text = f"（{ranges} 没有任何对话记录）" if language == "zh" else f"(no conversation records for {ranges})"
        return [Hit(STORE, text, 1.0, f"{ranges}: 0 turns", pinned=True, meta={"kind": "empty"})]
    lines = _range_lines(source, how, cands, ranges, budget, digest=digest, limit=min(read_at_most, RAW_CANDIDATES))
    if why:
        lines = [replace(h, reason=f"{h.reason}; {why}") if h.meta.get("kind") in ("turn", "digest") else h
                 for h in lines]
    return pinned + lines


def digested(config: "DiaryConfig", turns: RangeTurns) -> bool:
    """Whether a range is shown as one digest per day: more than `digest_over_turns` turns over
    several days."""
    return len(turns) > config.digest_over_turns and len(turns.days) > 1


def day_digest(source: DiarySource, day: str, tags: Sequence[str], *, language: str) -> tuple[str, str]:
    """(text, where from) of a day within a range, `tags` its turns' tags there: the memory LLM's
    digest when one was written for exactly those turns, else one made of the tags."""
    text = source.digest(day, len(tags))
    if text:
        return text, "llm digest"
    return fallback_digest(tags, language=language), "digest from tags"


def _range_lines(source: DiarySource, how: Answering, cands: RangeTurns, ranges: str, budget: int, *,
                 digest: bool, limit: int) -> list[Hit]:
    language, config = how.prompts.language, how.config
    n_days = len(cands.days)
    if not digest or not digested(config, cands):
        hits, left = raw_hits(cands, source.entries, tz=how.tz, budget=budget, max_turn_tokens=config.max_turn_tokens,
                              limit=limit)
        if not left:
            return hits
        return hits + [omitted_hit(how.prompts, ranges, len(cands), left,
                                   f"{left} of {len(cands)} turns left out for the token budget")]

    def digest_for(day: str, group: np.ndarray) -> tuple[str, str]:
        return day_digest(source, day, cands.tag[group].tolist(), language=language)

    hits, left, left_days = digest_hits(cands, digest_for, language=language, budget=budget)
    more = ""
    if left_days:
        more = (f"，另有 {left_days} 天（{left} 轮）限于篇幅未列出" if language == "zh"
                else f"; {left_days} more days ({left} turns) are left out for length")
    note = how.prompts.render("diary_digested", range=ranges, total=len(cands), days=n_days, more=more)
    reason = f"{len(cands)} turns over {n_days} days shown as daily digests; {left} turns left out"
    return hits + [Hit(STORE, note, 1.0, reason, pinned=True, meta={"kind": "omitted", "omitted": left, "total": len(cands)})]


__all__ = ["Answering", "DiarySource", "answer", "range_hits", "RAW_CANDIDATES"]
