"""The admin API's typed results as an MCP tool answers: text a model reads well, and the same as
structured content (the pydantic models here are the tools' output schemas).

Pure functions of the results: no memory is read here. Times are shown in the character's zone,
with the weekday (a model asked "last Tuesday" checks it against the day).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

from pydantic import BaseModel, Field

from engine.admin import Fact, Hit
from engine.admin_views import MemorySearch, Recall, TryResult
from engine.stores.core import AddedFact
from engine.stores.diary import DiaryEntry
from engine.service.models import FactOut, fact_out
from engine.timerange import NamedRange
from engine.turns import PromptResult


class RangeOut(BaseModel):
    start: datetime
    end: datetime = Field(description="exclusive")
    understood: str = Field(description="the words (or ISO value) that named the range")


class TurnOut(BaseModel):
    id: str
    at: datetime
    tag: str = Field(description="a short label of the turn")
    user: str = Field(description="what the user said")
    assistant: str = Field(description="what the character answered")


class DiaryHitOut(BaseModel):
    turn: TurnOut
    score: float
    matched: str = Field(description="the side that matched best: user or assistant")
    why: str = Field(description="words, meaning, context or range")


class HitOut(BaseModel):
    store: str
    text: str
    score: float
    reason: str = Field(description="why it fired: the keyword, the similarity, the time range")


class SearchOut(BaseModel):
    query: str
    range: RangeOut | None
    diary: list[DiaryHitOut]
    facts: list[HitOut]
    world_book: list[HitOut]
    diagnostics: list[str]


class DigestOut(BaseModel):
    day: str
    turns: int
    text: str
    source: str = Field(description="llm digest or digest from tags")


class RecallOut(BaseModel):
    range: RangeOut
    total: int = Field(description="turns in the range")
    days: int = Field(description="days with turns in the range")
    turns: list[TurnOut] = Field(description="the range's turns (empty when digests are given)")
    digests: list[DigestOut] = Field(description="one per day when the range holds too many turns")
    left_out: int = Field(description="turns (or days, with digests) not shown for the limit")


class FactsOut(BaseModel):
    user: str
    facts: list[FactOut]


class FactChangeOut(BaseModel):
    change: str = Field(description="added, kept (an equal fact existed), corrected or forgotten")
    fact: FactOut
    note: str = ""


class WorldBookOut(BaseModel):
    text: str
    entries: list[HitOut]
    diagnostics: list[str]


class PromptOut(BaseModel):
    now: datetime
    messages: list[dict[str, str]]
    hits: list[HitOut]
    dropped: list[HitOut] = Field(description="cleared their threshold, trimmed by the token budget")
    tokens: dict[str, int]
    diagnostics: list[str]


# -- structured ----------------------------------------------------------------------------------


def range_out(r: NamedRange) -> RangeOut:
    return RangeOut(start=r.start, end=r.end, understood=r.text)


def turn_out(e: DiaryEntry) -> TurnOut:
    return TurnOut(id=e.id, at=e.at, tag=e.tag, user=e.user, assistant=e.assistant)


def hit_out(h: Hit) -> HitOut:
    return HitOut(store=h.store, text=h.text, score=round(h.score, 4), reason=h.reason)



def search_out(query: str, found: MemorySearch, when: NamedRange | None) -> SearchOut:
    return SearchOut(
        query=query, range=range_out(when) if when else None,
        diary=[DiaryHitOut(turn=turn_out(m.turn), score=round(m.score, 4), matched=m.side, why=m.why) for m in found.diary],
        facts=[hit_out(h) for h in found.facts], world_book=[hit_out(h) for h in found.world_book],
        diagnostics=list(found.diagnostics),
    )


def recall_out(recall: Recall, when: NamedRange) -> RecallOut:
    shown = len(recall.digests) if recall.digests else len(recall.turns)
    whole = recall.days if recall.digests else recall.total
    return RecallOut(range=range_out(when), total=recall.total, days=recall.days,
                     turns=[turn_out(e) for e in recall.turns],
                     digests=[DigestOut(day=d.day.isoformat(), turns=d.turns, text=d.text, source=d.source)
                              for d in recall.digests],
                     left_out=whole - shown)


def fact_change_out(change: str, fact: Fact, note: str = "") -> FactChangeOut:
    return FactChangeOut(change=change, fact=fact_out(fact), note=note)


def added_out(added: AddedFact) -> FactChangeOut:
    return fact_change_out("added" if added.created else "kept", added.fact, added.note)


def world_book_out(text: str, result: TryResult) -> WorldBookOut:
    return WorldBookOut(text=text, entries=[hit_out(h) for h in result.hits], diagnostics=list(result.diagnostics))


def prompt_out(result: PromptResult) -> PromptOut:
    return PromptOut(now=result.now, messages=[dict(m) for m in result.messages], hits=[hit_out(h) for h in result.hits],
                     dropped=[hit_out(h) for h in result.dropped], tokens=dict(result.tokens),
                     diagnostics=list(result.diagnostics))


# -- text ----------------------------------------------------------------------------------------


class Names:
    """How the two sides are called in text (the character file's names) and the zone times are shown in."""

    def __init__(self, *, user: str, char: str, tz: tzinfo) -> None:
        self.user, self.char, self.tz = user, char, tz

    def when(self, at: datetime) -> str:
        return at.astimezone(self.tz).strftime("%Y-%m-%d %a %H:%M")

    def turn(self, e: DiaryEntry) -> str:
        return f"{self.when(e.at)}  {self.user}: {_line(e.user)}  /  {self.char}: {_line(e.assistant)}"


def range_text(r: NamedRange, names: Names) -> str:
    return f"{r.text!r} = {names.when(r.start)} .. {names.when(r.end)} (end exclusive)"


def search_text(query: str, found: MemorySearch, when: NamedRange | None, names: Names) -> str:
    head = f"Memory search for {query!r}" + (f" within {range_text(when, names)}" if when else "") + ":"
    out = [head, f"Diary ({len(found.diary)} turns, best first):"]
    out += [f"- {names.turn(m.turn)}\n  why: {m.why} (the {_side(m.side, names)} side matched, score {m.score:.3f})"
            for m in found.diary] or ["- (no turn matches)"]
    out.append(f"Facts about the user ({len(found.facts)}):")
    out += [f"- {h.text}\n  why: {h.reason}" for h in found.facts] or ["- (none clear the threshold)"]
    out.append(f"World book ({len(found.world_book)}):")
    out += [f"- {_line(h.text, 200)}\n  why: {h.reason}" for h in found.world_book] or ["- (no entry fires)"]
    return "\n".join(out + _notes(found.diagnostics))


def recall_text(recall: Recall, when: NamedRange, names: Names) -> str:
    head = f"{range_text(when, names)}: {recall.total} turns over {recall.days} days."
    if not recall.total:
        return head + " Nothing was said then."
    if recall.digests:
        out = [head + " One digest per day:"]
        out += [f"- {d.day.isoformat()} {d.day:%a} ({d.turns} turns): {d.text}" for d in recall.digests]
        if len(recall.digests) < recall.days:
            out.append(f"({recall.days - len(recall.digests)} earlier days left out: ask for a shorter range)")
        return "\n".join(out)
    out = [head] + [f"- {names.turn(e)}" for e in recall.turns]
    if len(recall.turns) < recall.total:
        out.append(f"({recall.total - len(recall.turns)} later turns left out: ask for a shorter range, "
                   "or search_memory with a topic)")
    return "\n".join(out)


def facts_text(user: str, facts: Sequence[Fact]) -> str:
    if not facts:
        return f"No facts are kept about {user}."
    out = [f"Facts about {user} ({len(facts)}):"]
    for f in facts:
        gone = f"  [forgotten {f.deleted_at:%Y-%m-%d}]" if f.deleted_at else ""
        earlier = f"  (earlier: {'; '.join(repr(r.text) for r in f.history)})" if f.history else ""
        out.append(f"- [{f.id}] {f.text}{gone}{earlier}")
    return "\n".join(out)


def fact_change_text(change: FactChangeOut) -> str:
    f = change.fact
    if change.change == "kept":
        return f"Kept the existing fact [{f.id}] {f.text} ({change.note or 'an equal fact exists'})."
    if change.change == "corrected":
        before = f.history[-1].text if f.history else ""
        return f"Corrected fact [{f.id}]: {before!r} -> {f.text!r} (the old text stays in its history)."
    if change.change == "forgotten":
        return f"Forgot fact [{f.id}] {f.text!r} (kept, marked deleted, for its history)."
    return f"Added fact [{f.id}] {f.text}."


def world_book_text(text: str, result: TryResult) -> str:
    out = [f"World-book entries {text!r} fires ({len(result.hits)}):"]
    out += [f"- {_line(h.text, 300)}\n  why: {h.reason}" for h in result.hits] or ["- (none)"]
    return "\n".join(out + _notes(result.diagnostics))


def _notes(diagnostics: Sequence[str]) -> list[str]:
    return ["Notes:", *(f"! {d}" for d in diagnostics)] if diagnostics else []


def _side(side: str, names: Names) -> str:
    return names.user if side == "user" else names.char if side == "assistant" else side


def _line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
