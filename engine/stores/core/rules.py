"""The offline fact extractor, used when no LLM is configured: a few patterns, documented here.

Only the user's side of a turn is read; questions (ending in ？/? or 吗) are ignored. Each
statement becomes a fact in a canonical form and a *slot*; a new statement in an occupied slot
UPDATEs the fact there (the old text goes to its history), the same statement again is a no-op.

| said (zh)                         | fact            | slot         |
|-----------------------------------|-----------------|--------------|
| 我(很/非常/最…)喜欢/爱/讨厌/恨 X     | 喜欢X / 讨厌X    | pref:X       |
| 我不喜欢/不讨厌 X                   | 不喜欢X          | pref:X       |
| 我不(再)讨厌/喜欢 X 了 / 我不再… X   | 不再讨厌X        | pref:X       |
| 我叫 X / 我的名字(叫/是) X          | 名字叫X          | name         |
| 我住在 X / 我家在 X / 我搬到(了) X   | 住在X            | live         |
| 我今年 N 岁                        | 今年N岁          | age          |
| 我在 X 工作/上班/上学/读书           | 在X工作          | work         |
| 我养了 X / 我家有一只 X              | 养了X            | pet:X        |
| 我是 X (not 我是说/我是不是/…)       | 是X              | is:X         |

| said (en)                                        | fact                 | slot    |
|--------------------------------------------------|----------------------|---------|
| I (really) like/love/enjoy/hate/dislike X         | Likes X / Hates X    | pref:X  |
| I don't like/love X                               | Doesn't like X       | pref:X  |
| I don't hate/like X anymore / I no longer hate X  | No longer hates X    | pref:X  |
| my name is X / call me X                          | Name is X            | name    |
| I live in X / I (have) moved to X                 | Lives in X           | live    |
| I'm N (years old)                                 | Is N years old       | age     |
| I work at/for/as X                                | Works at X           | work    |
| I have a/an X (a cat named 小白, a dog …)          | Has a X              | pet:X   |
| I'm a/an X                                        | Is a X               | is:X    |

X keys ignore a leading eating/drinking verb, so 我讨厌吃香菜 and 我不讨厌香菜了 share `pref:香菜`.
Traditional characters and written Cantonese are matched as they read in Simplified Mandarin
(`engine.timeparse.script.as_tables_read`: 我喜歡烏龍茶, 我住喺沙田): the fact keeps the words as
written (喜歡烏龍茶, 住在沙田), its slot is the reading's (`pref:乌龙茶`), so either script fills one slot.
Facts written by the LLM in the same shapes (also with a leading 用户 / "User") get slots too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.stores.core.facts import Fact, normalise_text
from engine.stores.core.ops import FactOp, Said
from engine.timeparse.script import as_tables_read, in_traditional


@dataclass(frozen=True)
class Statement:
    text: str
    """The fact in canonical form."""
    slot: str


# ---------------------------------------------------------------------------- Chinese

_ZH_ADV = r"(?:现在|也|还|一直|已经|真的|其实|最近|刚刚|刚|上个月|上周|去年|今年|前几天)*"
_ZH_DEG = r"(?:很|非常|最|特别|超|挺|超级|有点|十分|好)*"
_ZH_TAIL = re.compile(r"[了啦呀哦呢的吧啊哈～~]+$")
_ZH_IS_STOP = ("说", "不是", "在", "想", "觉得", "真", "挺", "因为", "不", "要", "来", "去", "问", "开玩笑")

_ZH_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"我{_ZH_ADV}最喜欢的(.+?)是(.+)"), "fav"),
    (re.compile(rf"我{_ZH_ADV}(?:不再|再也不)(喜欢|讨厌|爱|恨)(.+)"), "no_longer"),
    (re.compile(rf"我{_ZH_ADV}不(喜欢|讨厌|爱|恨)(.+?)了$"), "no_longer"),
    (re.compile(rf"我{_ZH_ADV}不{_ZH_DEG}(喜欢|爱)(.+)"), "not"),
    (re.compile(rf"我{_ZH_ADV}{_ZH_DEG}(喜欢|讨厌|爱|恨)(.+)"), "pref"),
    (re.compile(r"我的名字(?:叫|是)(.+)"), "name"),
    (re.compile(rf"我{_ZH_ADV}叫(.+)"), "name"),
    (re.compile(rf"我{_ZH_ADV}(?:搬家?到|搬去)了?(.+?)(?:住)?$"), "live"),
    (re.compile(rf"我{_ZH_ADV}(?:住在|家在|住)(.+)"), "live"),
    (re.compile(rf"我{_ZH_ADV}今年(\d+|[一二三四五六七八九十百]+)岁"), "age"),
    (re.compile(rf"我{_ZH_ADV}在(.+?)(工作|上班|上学|读书)"), "work"),
    (re.compile(rf"我{_ZH_ADV}(?:养了|家有|有)((?:一|两|三|\d)[只条匹头].+)"), "pet"),
    (re.compile(rf"我{_ZH_ADV}养了(.+)"), "pet"),
    (re.compile(rf"我{_ZH_ADV}是(.+)"), "is"),
]


def _zh_key(obj: str) -> str:
    return re.sub(r"^(?:吃|喝|看|玩|听|养)", "", obj).strip()


# The fact and its slot per kind of rule; {g0} {g1} are the pattern's groups, {key} the object's key.
_ZH_FORMS: dict[str, tuple[str, str]] = {
    "fav": ("最喜欢的{g0}是{obj}", "fav:{g0}"),
    "no_longer": ("不再{g0}{obj}", "pref:{key}"),
    "not": ("不{g0}{obj}", "pref:{key}"),
    "pref": ("{g0}{obj}", "pref:{key}"),
    "name": ("名字叫{obj}", "name"),
    "live": ("住在{obj}", "live"),
    "age": ("今年{obj}岁", "age"),
    "work": ("在{obj}{g1}", "work"),
    "pet": ("养了{obj}", "pet:{obj}"),
    "is": ("是{obj}", "is:{obj}"),
}
_TRADITIONAL_FORM_WORDS = {"最喜欢的": "最喜歡的", "岁": "歲", "养了": "養了"}
"""The words of `_ZH_FORMS` that Traditional characters write otherwise: a fact told in them is
kept in them."""


def _zh_statement(clause: str, read: str) -> Statement | None:
    """`read`: the clause as the patterns read it (`as_tables_read`: Simplified Mandarin, the same
    length). The fact keeps the words as written; its slot is the reading's, so the same thing
    said in either script fills one slot."""
    for pattern, kind in _ZH_RULES:
        match = pattern.search(read)
        if not match:
            continue
        spans = [match.span(i) for i in range(1, len(match.groups()) + 1)]
        written, reading = [clause[a:b] for a, b in spans], [read[a:b] for a, b in spans]
        at = -1 if kind != "work" else 0
        obj_read = _ZH_TAIL.sub("", reading[at])  # the tail is cut where the reading ends it (嘅 reads 的)
        obj, obj_read = written[at][: len(obj_read)].strip(), obj_read.strip()
        if not obj or len(obj) > 30:
            return None
        if kind == "is" and (obj_read.startswith(_ZH_IS_STOP) or len(obj) > 15):
            return None
        text, slot = _ZH_FORMS[kind]
        if in_traditional(clause):
            for simplified, traditional in _TRADITIONAL_FORM_WORDS.items():
                text = text.replace(simplified, traditional)
        said = {"g0": written[0], "g1": written[1] if len(written) > 1 else "", "obj": obj}
        slot_fields = {"g0": reading[0], "g1": reading[1] if len(reading) > 1 else "", "obj": obj_read,
                       "key": _zh_key(obj_read)}
        return Statement(text.format(**said), slot.format(**slot_fields))
    return None


# ---------------------------------------------------------------------------- English

_EN_TAIL = re.compile(r"\s+(?:now|anymore|any more|too|as well|though|either)$", re.I)
_EN_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bi (?:don't|do not|dont) (like|hate|love) (.+?) any ?more\b", re.I), "no_longer"),
    (re.compile(r"\bi no longer (like|hate|love) (.+)", re.I), "no_longer"),
    (re.compile(r"\bi (?:don't|do not|dont) (?:really )?(like|love) (.+)", re.I), "not"),
    (re.compile(r"\bi (?:really |totally |absolutely |just |kind of )?(like|love|enjoy|hate|dislike|can't stand) (.+)", re.I), "pref"),
    (re.compile(r"\bmy name is (.+)", re.I), "name"),
    (re.compile(r"\bcall me (.+)", re.I), "name"),
    (re.compile(r"\bi (?:now |currently )?live in (.+)", re.I), "live"),
    (re.compile(r"\bi(?: have|'ve)? (?:just )?moved to (.+)", re.I), "live"),
    (re.compile(r"\bi(?:'m| am) (\d+)(?: years old)?$", re.I), "age"),
    (re.compile(r"\bi work (?:at|for|as) (.+)", re.I), "work"),
    (re.compile(r"\bi have (an? .+|two .+|\d+ .+)", re.I), "pet"),
    (re.compile(r"\bi(?:'m| am) (an? .+)", re.I), "is"),
]
_EN_VERB = {"like": "Likes", "love": "Loves", "enjoy": "Enjoys", "hate": "Hates", "dislike": "Dislikes",
            "can't stand": "Can't stand"}


def _en_key(obj: str) -> str:
    return re.sub(r"^(?:eating|to eat|drinking|watching|playing)\s+", "", obj.lower()).strip()


# As _ZH_FORMS; {verb} is the matched verb, {Verb} its fact form, {prep} at/for/as, {low} the object lower-cased.
_EN_FORMS: dict[str, tuple[str, str]] = {
    "no_longer": ("No longer {verb}s {obj}", "pref:{key}"),
    "not": ("Doesn't {verb} {obj}", "pref:{key}"),
    "pref": ("{Verb} {obj}", "pref:{key}"),
    "name": ("Name is {obj}", "name"),
    "live": ("Lives in {obj}", "live"),
    "age": ("Is {obj} years old", "age"),
    "work": ("Works {prep} {obj}", "work"),
    "pet": ("Has {obj}", "pet:{low}"),
    "is": ("Is {obj}", "is:{low}"),
}


def _en_statement(clause: str) -> Statement | None:
    for pattern, kind in _EN_RULES:
        match = pattern.search(clause)
        if not match:
            continue
        obj = _EN_TAIL.sub("", match.groups()[-1].strip()).strip(" .!,")
        if not obj or len(obj) > 60:
            return None
        verb = match.group(1).lower() if kind in ("no_longer", "not", "pref") else ""
        fields = {
            "obj": obj, "low": obj.lower(), "key": _en_key(obj), "verb": verb,
            "Verb": _EN_VERB[verb] if kind == "pref" else "",
            "prep": match.group(0).split()[2].lower() if kind == "work" else "",
        }
        text, slot = _EN_FORMS[kind]
        return Statement(text.format(**fields), slot.format(**fields))
    return None


# ---------------------------------------------------------------------------- both

_CLAUSE_SPLIT = re.compile(r"(?<=[。！!？?；;\n，])|[,](?=\s*(?:i\b|I\b|my\b|My\b))|(?<=\.)\s+")
_PRONOUN = re.compile(r"[我你他她它]|^(?:但|可是|不过)")


def statements(user_text: str) -> list[Statement]:
    """The statements found in one user message, in order."""
    out: list[Statement] = []
    previous_was_mine = False
    for clause in _CLAUSE_SPLIT.split(user_text):
        clause = clause.strip()
        read = as_tables_read(clause)  # Traditional characters and written Cantonese as the patterns read them
        if not clause or clause.endswith(("？", "?")) or re.search(r"[吗嘛][？?。!！]?$", read):
            previous_was_mine = False
            continue
        clause = clause.rstrip("。！!；;.，,…~～ ")
        read = read[: len(clause)]
        chinese = re.search(r"[\u4e00-\u9fff]", clause) is not None
        if chinese and previous_was_mine and not _PRONOUN.search(read):
            clause, read = "我" + clause, "我" + read  # 我住在重庆，养了一只猫: the subject carries over the comma
        found = _zh_statement(clause, read) if chinese else None
        found = found or _en_statement(clause)
        previous_was_mine = found is not None
        if found is not None:
            out.append(found)
    return out


_SLOT_OF_FACT: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^最喜欢的(.+?)是"), "fav"),
    (re.compile(r"^(?:不再|不)?(?:喜欢|讨厌|爱|恨)(.+)$"), "pref"),
    (re.compile(r"^名字(?:叫|是)"), "name"),
    (re.compile(r"^住在"), "live"),
    (re.compile(r"^今年.+岁$"), "age"),
    (re.compile(r"^在.+(?:工作|上班|上学|读书)$"), "work"),
    (re.compile(r"^养了(.+)$"), "pet"),
    (re.compile(r"^是(.+)$"), "is"),
    (re.compile(r"^(?:no longer |doesn't )?(?:likes?|loves?|enjoys?|hates?|dislikes?|can't stand) (.+)$", re.I), "pref_en"),
    (re.compile(r"^name is ", re.I), "name"),
    (re.compile(r"^lives in ", re.I), "live"),
    (re.compile(r"^is \d+ years old$", re.I), "age"),
    (re.compile(r"^works (?:at|for|as) ", re.I), "work"),
    (re.compile(r"^has (.+)$", re.I), "pet_en"),
    (re.compile(r"^is (an? .+)$", re.I), "is_en"),
]


def slot_of(fact_text: str) -> str | None:
    """The slot of a fact in one of the canonical shapes above, else None."""
    text = re.sub(r"^(?:用户|User\s+|The user\s+)", "", as_tables_read(normalise_text(fact_text)))
    for pattern, kind in _SLOT_OF_FACT:
        match = pattern.match(text)
        if not match:
            continue
        obj = match.group(1) if match.groups() else ""
        if kind == "pref":
            return f"pref:{_zh_key(obj)}"
        if kind == "pref_en":
            return f"pref:{_en_key(obj)}"
        if kind in ("pet", "is", "fav"):
            return f"{kind}:{obj}"
        if kind in ("pet_en", "is_en"):
            return f"{kind[:-3]}:{obj.lower()}"
        return kind
    return None


def rule_ops(turns: Sequence[Said], facts: Iterable[Fact]) -> list[FactOp]:
    """Operations that bring `facts` up to date with what the user said in `turns`."""
    by_slot: dict[str, Fact] = {}
    for fact in facts:
        slot = slot_of(fact.text) if fact.live else None
        if slot is not None:
            by_slot[slot] = fact
    ops: list[FactOp] = []
    added: dict[str, int] = {}  # slot -> index in ops of an ADD from this same batch
    for turn in turns:
        for st in statements(turn.user):
            if st.slot in added:
                # Said twice in one batch: the later statement wins, still as one ADD.
                ops[added[st.slot]] = FactOp("ADD", text=st.text)
            elif st.slot in by_slot:
                current = by_slot[st.slot]
                if normalise_text(current.text) != normalise_text(st.text):
                    ops.append(FactOp("UPDATE", text=st.text, fact_id=current.id))
                    by_slot[st.slot] = Fact(current.id, st.text, current.learned_at, current.updated_at)
            else:
                added[st.slot] = len(ops)
                ops.append(FactOp("ADD", text=st.text))
    return ops
