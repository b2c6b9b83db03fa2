"""Traditional Chinese read by rules written in Simplified characters.

The word tables of the time grammar and of the diary's cues are written in Simplified characters,
while a user in Taiwan or Hong Kong writes 上個月, 兩天前, 聊了什麼, 記得嗎. `simplified` maps each
Traditional character to its Simplified one and leaves every other character as it is, so a text
keeps its length: a span found in what the rules read is the same span of what the user wrote,
and what is shown or searched stays in the user's own script.
"""

from __future__ import annotations

import functools
import re

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

KEEP = "嘅噉噚氹覆藉"
"""Characters written alike in both scripts that the table maps for a rarer use: written
Cantonese (嘅 → 慨, 噚晚 is last night) and 覆 / 藉 (覆盖 and 藉口 are Simplified too). Left as written."""


@functools.cache
def _table() -> dict[int, str]:
    """Every Traditional character of the CJK blocks to its Simplified one: jionlp's
    character table, read through its public converter (one character for one)."""
    from engine.adapters.jio import jionlp

    han = "".join(chr(c) for r in (range(0x3400, 0x4DC0), range(0x4E00, 0xA000)) for c in r)
    plain = jionlp().tra2sim(han, mode="char")
    pairs = {a: b for a, b in zip(han, plain, strict=True) if a != b and a not in KEEP}
    # A few variants chain (乹 → 乾 → 干): each goes to the end of its chain.
    ends = {a: pairs.get(b, b) for a, b in pairs.items()}
    return str.maketrans(ends)


def simplified(text: str) -> str:
    """`text` with its Traditional characters in Simplified ones, character for character."""
    return text.translate(_table()) if _HAN.search(text) else text
