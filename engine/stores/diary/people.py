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
