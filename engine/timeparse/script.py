"""Chinese as the rule tables read it: Simplified characters and Mandarin words.

The word tables of the time grammar and of the diary's cues are written in Simplified Mandarin,
while a user in Taiwan or Hong Kong writes 上個月, 兩天前, 聊了什麼, 記得嗎, and in written Cantonese
琴日, 傾咗乜嘢, 你話, 記唔記得. `as_tables_read` maps each Traditional character to its Simplified
one, then written Cantonese to the Mandarin words of the same length (`CANTONESE`), and leaves
everything else as it is. A text keeps its length: a span found in what the rules read is the
same span of what the user wrote, and what is shown or searched stays in the user's own words.
"""

from __future__ import annotations

import functools
import re

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

KEEP = "嘅噉噚氹覆藉"
"""Characters written alike in both scripts that the character table maps for a rarer use:
written Cantonese (嘅 → 慨, 噚晚 is last night) and 覆 / 藉 (覆盖 and 藉口 are Simplified too)."""

CANTONESE: dict[str, str] = {
    # days and moments
    "大前日": "大前天", "琴日": "昨天", "寻日": "昨天", "噚日": "昨天", "前日": "前天", "听日": "明天",
    "琴晚": "昨晚", "寻晚": "昨晚", "噚晚": "昨晚", "听晚": "明晚", "琴朝": "昨早", "寻朝": "昨早",
    "今朝": "今早", "听朝": "明早", "头先": "刚才", "啱啱": "刚刚", "而家": "现在",
    # talking and telling
    "倾偈": "聊天", "倾计": "聊天", "倾咗": "聊了", "倾过": "聊过", "倾嘅": "聊的", "倾紧": "在聊", "倾乜": "聊啥",
    "倾咩": "聊啥", "倾下": "聊下", "倾吓": "聊下", "你话": "你说", "我话": "我说", "佢话": "他说", "哋话": "们说",
    "话我知": "告诉我", "讲返": "再讲", "执返": "整理", "执重点": "抓重点", "同你": "跟你", "同我": "跟我",
    # liking (鍾意 reads 锺意 after the character table)
    "钟意": "喜欢", "锺意": "喜欢",
    # asking
    "乜嘢": "什么", "点解": "为啥", "嚟㗎": "来着", "点样": "怎样", "几多": "多少", "系咪": "是否", "系唔系": "是不是",
    "唔系": "不是", "记唔记得": "记不记得", "有冇": "有没", "咗咩": "了啥", "过咩": "过啥", "倾咗咩": "聊了啥",
    "倾过咩": "聊过啥", "边个": "哪个", "边度": "哪里", "边间": "哪间", "边本": "哪本", "边套": "哪部", "边首": "哪首",
    "边位": "哪位", "边次": "哪次", "边件": "哪件", "边样": "哪样",
    # function words
    "咗": "了", "嘅": "的", "哋": "们", "佢": "他", "喺": "在", "嚟": "来", "啲": "些", "嗰": "那", "睇": "看",
    "谂": "想", "俾": "给", "冇": "没", "乜": "啥", "咩": "啥", "嘢": "事", "揾": "找",
}
"""Written Cantonese (in Simplified characters, as it reads after the character table) and the
Mandarin words of the same length the tables know. Only words that Mandarin does not write with
another meaning: not 系 alone (关系), 倾 alone (倾诉), 话 alone (电话). Besides: 唔 before a
character is 不, and 咩 ending a clause is the question's 吗 (係咩？, and Mandarin's cute 好咩)
unless a verb's 咗 / 过 is before it (講咗咩: said what), elsewhere "what"."""

for _said, _mandarin in CANTONESE.items():
    if len(_said) != len(_mandarin):
        raise ValueError(f"CANTONESE[{_said!r}] = {_mandarin!r}: a reading must keep the length")
_WORDS = re.compile(
    r"(?P<asks>咩)(?=[\s，。！？!?,.~～…]|$)|(?P<not>唔)(?=[\u4e00-\u9fff])|"
    + "|".join(sorted(map(re.escape, CANTONESE), key=len, reverse=True))
)
_BY_GROUP = {"asks": "吗", "not": "不"}


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


def in_traditional(text: str) -> bool:
    """Whether `text` holds a Traditional character (one the character table maps)."""
    return bool(_HAN.search(text)) and text.translate(_table()) != text


def as_tables_read(text: str) -> str:
    """`text` in Simplified characters and Mandarin words, character for character."""
    if not _HAN.search(text):
        return text
    return _WORDS.sub(lambda m: _BY_GROUP.get(m.lastgroup) or CANTONESE[m.group()], text.translate(_table()))
