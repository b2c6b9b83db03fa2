"""What the diary reads in a message before it answers: the participants it names, the side it
is about, the text to search (without time words and names), whether it is small talk, and the
pieces it asks the orchestrator to embed (`query_texts`) with their vectors once embedded.

Every backend reads a message the same way; `answer.py` answers with what this finds.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

import numpy as np

from engine.paths import CharacterPaths
from engine.search.base import Side
from engine.search.text import content_terms, only_common_words
from engine.stores.base import Query
from engine.stores.diary.people import OTHER, SELF, mentions
from engine.stores.diary.recall import is_question
from engine.stores.diary.render import STORE


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
    user, char = mentions(names.user, message), mentions(names.char, message)
    if user != char:
        return "user" if user else "assistant"
    if user:
        return None
    me, you = bool(SELF.search(message)), bool(OTHER.search(message))
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


def is_small_talk(message: str, text: str, *, cued: bool, about_us: bool, asks_range: bool) -> bool:
    """Whether the search should not run: a statement that carries too little, or a message made
    only of its language's commonest words that is about no one of our lives and asks about no
    past range ("真的吗？", "你心情好吗", "你喜欢什么颜色", "really??", "how was your day?"). In a
    diary one such word (真的, 喜欢; "favorite", "weather") is rare enough to open the search's
    gate, and the whole budget followed it. With a range ("4月29号那天天气怎么样？") the search
    ranks the range. `cued`: the message has a recall cue; `about_us`: it is about someone of our
    lives (`people.about_someone`), or is cued."""
    if cued:
        return False
    # A Chinese word counts its characters, another word counts as two (about as much meaning).
    weight = sum(len(t) if re.search(r"[\u4e00-\u9fff]", t) else 2 for t in content_terms(text))
    if weight <= SMALL_TALK_CHARS and not is_question(message):
        return True
    return not (asks_range or about_us) and only_common_words(text)


def query_texts(config, message: str, recent, names: Names, tz: tzinfo) -> list[str]:
    """What the diary asks the orchestrator to embed for it (both backends): the message alone,
    when the query text also carries the window's last turn, since the search ranks a standalone
    question better by its own vector (measured on LoCoMo: +3 points); and without the
    participants' names: nearly every line is said to or by one of them, so a name in the vector
    matches everything a little and the topic less (the side prior decides whose lines rank
    first; LoCoMo tuning split: multi-hop 0.576 -> 0.641). A message with time words also asks
    for its `residual`, which tells what a time question asks for (`asking.py`)."""
    if not (config.enabled and message.strip()):
        return []
    text = " ".join(search_text(message, [], names).split())
    own = [text] if text and text != message else [message] if recent else []
    from engine.timeparse import parse_time_ranges

    spans = [e.span for e in parse_time_ranges(message, now=datetime.now(tz))]
    rest = residual(message, spans, names) if spans else ""
    if rest and rest not in own:
        return (own or [message]) + [rest]
    return own if config.search else []


def residual(message: str, spans: Sequence[tuple[int, int]], names: Names) -> str:
    """The message without its time words and the participants' names, spaces collapsed: what a
    time question asks, whatever day it names."""
    return " ".join(search_text(message, spans, names).split())


def message_vector(query: Query) -> np.ndarray | None:
    """The message's own vector when the diary asked for it (the query text adds the window's
    last turn, which blurs a standalone question), else the query vector."""
    texts, vectors = query.pieces.get(STORE, ((), None))
    if texts and vectors is not None and len(vectors):
        return np.asarray(vectors[0], dtype=np.float32)
    return query.vector


def piece_vector(query: Query, text: str) -> np.ndarray | None:
    """The vector of a piece the diary asked for by its text (None when not embedded)."""
    texts, vectors = query.pieces.get(STORE, ((), None))
    if vectors is None or text not in texts:
        return None
    return np.asarray(vectors[texts.index(text)], dtype=np.float32)
