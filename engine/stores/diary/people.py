"""Who a message names: the user (我, I), the character (你, you), both (我们, we), or either by name.

One place for the diary's two uses: which participant's lines rank first (`answer.side_of`), and
whether a question about a month or a year is about us at all (`recall`: "what did I tell you last
year", "what did Caroline do in July", not "Who won the Super Bowl last year?").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HAN = re.compile(r"[\u3400-\u9fff]")
SELF = re.compile(r"我|\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)
OTHER = re.compile(r"你|\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
BOTH = re.compile(r"咱|\b(?:we|us|our|ours)\b", re.IGNORECASE)


def mentions(name: str, text: str) -> bool:
    """Whether `text` names `name`: a Chinese name as written, another as a whole word (any case)."""
    if not name.strip():
        return False
    if _HAN.search(name):
        return name in text
    return re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE) is not None


def names_one_of_us(text: str, names: Sequence[str] = ()) -> bool:
    """Whether `text` names the user, the character or both, by pronoun or by one of `names`."""
    return bool(SELF.search(text) or OTHER.search(text) or BOTH.search(text)) or any(mentions(n, text) for n in names)


def names_user_or_us(text: str, user: str = "") -> bool:
    """Whether `text` names the user (我, I, my, or the user's name) or both of us (我们, we): a
    message about our shared life, as opposed to one about the character or the world."""
    return bool(SELF.search(text) or BOTH.search(text)) or mentions(user, text)


_CALENDAR = re.compile(
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day|January|February|March|April|May|June|July|August|September"
    r"|October|November|December|Christmas|Easter|Halloween|Thanksgiving")
_SENTENCES = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_GREETING = re.compile(r"(?:\b(?:hey|hi|hello|yo|morning|night|evening|thanks|thank you|thx|bye|dear|love you|miss you)"
                       r"|嗨|哈喽|早安?|晚安|谢谢|亲爱的)\W*$", re.IGNORECASE)
_AFTER_ADDRESS = re.compile(r"\s*(?:[,，!！.。?？~～]|$)")


def _addressed(text: str, start: int, end: int) -> bool:
    """Whether the name at text[start:end] is said *to* someone ("hey Leo", "Leo, guess what", "good
    night, Leo!") rather than about them ("what did Melanie paint?", "Melanie's kids")."""
    before = text[:start]
    if _GREETING.search(before):
        return True
    after_ok = _AFTER_ADDRESS.match(text, end) is not None
    sentence_start = not before.strip() or before.rstrip()[-1] in ".!?。！？\n"
    return after_ok and (sentence_start or before.rstrip().endswith((",", "，")))


def _referred(name: str, text: str) -> bool:
    """Whether `text` names `name` other than by addressing them (`_addressed`)."""
    if not name.strip():
        return False
    pattern = re.escape(name) if _HAN.search(name) else rf"\b{re.escape(name)}\b"
    return any(not _addressed(text, m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE))


def names_someone(text: str) -> bool:
    """Whether an English `text` names a person or a place by a capitalised word inside a sentence
    ("you were right about Jake", "what did Mel and her kids make?"): someone of the user's life,
    nearly always, in a message to a companion. The first word of a sentence, "I", a name said to
    someone ("thanks, Leo") and the names of days, months and holidays do not count."""
    for sentence in _SENTENCES.finditer(text):
        first = sentence.start() + len(sentence.group()) - len(sentence.group().lstrip())
        for word in _CAPITALISED.finditer(text, first + 1, sentence.end()):
            if not _CALENDAR.fullmatch(word.group()) and not _addressed(text, word.start(), word.end()):
                return True
    return False


def names_participant(text: str, user: str = "", char: str = "") -> bool:
    """Whether `text` names the user or the character by name without addressing them ("what did
    Caroline paint?", "林舟养了什么宠物？"; not "thanks, Leo"): it is about that participant's life."""
    return _referred(user, text) or _referred(char, text)


# "me" as who a request is for ("tell me a joke", "给我讲个笑话") is not what the message is about.
_FOR_ME = re.compile(r"\b(?:give|tell|show|write|help|send|let|teach|get|make|find|recommend|sing|draw) me\b"
                     r"|(?:给|帮|告诉|教|陪)我(?=[讲说写唱画推荐想找来列念教一个首])", re.IGNORECASE)


def about_someone(text: str, user: str = "", char: str = "") -> bool:
    """Whether `text` is about a person of our lives, so that memory may hold the answer: the user
    or both of us (`names_user_or_us`; not "me" as who a request is for), the character by name
    but not addressed ("what did Melanie paint?" asks about its past; "what's your favorite
    color?" asks about its tastes, the character card's business, and "hey Leo, good morning"
    greets it), or someone else by name (`names_someone`)."""
    return names_user_or_us(_FOR_ME.sub(" ", text), user) or _referred(char, text) or names_someone(text)
