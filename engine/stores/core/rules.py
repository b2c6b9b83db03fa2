"""The offline fact extractor, used when no LLM is configured: patterns as tables, one module per
language (`rules_zh`, `rules_en`: each row a pattern and a kind, each kind a fact form and a slot).

Only the user's side of a turn is read; questions (ending in ？/? or 吗), quoted speech, role-play
*actions* and clauses that imagine or look back (如果…, "if I were…", "when I was a kid…") are
ignored. Each statement becomes a fact in a canonical form and a *slot*; a new statement in an
occupied slot UPDATEs the fact there (the old text goes to its history), the same statement again
is a no-op. What the tables know, by slot:

| slot            | said (zh)                                   | said (en)                                          |
|-----------------|---------------------------------------------|----------------------------------------------------|
| pref:X          | 我(很…)喜欢/爱/讨厌/迷 X, 我不(再)…, 我以前爱…, 我不吃/只喝 X | I like/love/hate X, I'm into / a fan of X, I don't X anymore, I can't handle X, I don't drink |
| fav:K           | 我最喜欢/最爱的 K 是 X                      | my favorite K is X, X is my favorite K              |
| name            | 我叫 X, 我的名字是 X, 叫我 X 就好             | my name is X, call me X, "Hi, I'm Priya"           |
| live / from     | 我住在/搬到 X; 我来自 X, 老家在 X             | I live in / I'm based in / moved to X; I'm from X, grew up in X |
| age, birthday   | 我今年 N 岁, 我 N 岁了; 我生日是 X            | I'm N, I just turned N; my birthday is X            |
| work, study     | 我在 X 工作/上班/读书/读大三, 在 X 当 Y; 专业是, 在读高三 | I work at/for/as/in X, I teach X; I study / studied / major in X, doing a PhD |
| pet:X, has:X    | 我养了 X, 我家有只 X; 我有妹妹/两个孩子, 我有哮喘, 我近视 | I have a X, I've got a X; I have asthma (a list of conditions) |
| is:X            | 我是 X (not 我是说/我是不是/…)                | I'm a/an X; I'm left-handed / introverted / Muslim (a list of traits) |
| diet, status    | 我吃素; 我结婚了/单身                          | I'm vegetarian / vegan, I keep kosher; I'm married / single |
| allergy, fear   | 我对 X 过敏, 我 X 过敏; 我怕 X, 我最怕的是 X   | I'm allergic to X; I'm afraid of X, my biggest fear is X |
| speaks, plays, can, learning | 我会说 X 语, 我会弹钢琴, 我(不)会游泳, 我在学日语 | I speak X, I play (the) X, I can't swim, I'm learning X |
| kin:K           | 我老公是 X, 我女朋友叫 X                      | my wife is a X, my dog's name is X, my parents live in X |
| goal, owns, …   | 我的梦想/目标是 X, 我想当 X; 我开了家 X; 我信佛; 我退休了; 身高 X | my goal is to X, I've always wanted to be X, I'm trying to X; I own a X; my pronouns are X |
| habits, things  | 周末我一般都去钓鱼; 我戒烟了; 我收集盲盒; 我买了辆 X; 我这个人比较慢热; X我是真的接受不了 | I knit, I do bouldering; I collect X; I use a wheelchair; I drive a X; I'm 6'2; I am Korean; my native language is X |

X keys ignore a leading eating/drinking verb, so 我讨厌吃香菜 and 我不吃香菜 share `pref:香菜`.
Traditional characters and written Cantonese are matched as they read in Simplified Mandarin
(`engine.timeparse.script.as_tables_read`: 我喜歡烏龍茶, 我住喺沙田): the fact keeps the words as
written (喜歡烏龍茶, 住在沙田), its slot is the reading's (`pref:乌龙茶`), so either script fills one slot.
Facts written by the LLM in the same shapes (also with a leading 用户 / "User") get slots too.
How much of what people tell of themselves the tables keep: `bench/bench_core_facts.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from engine.stores.core import rules_en, rules_zh
from engine.stores.core.facts import Fact, normalise_text
from engine.stores.core.ops import FactOp, Said
from engine.stores.core.statement import Statement
from engine.timeparse.script import as_tables_read


# ---------------------------------------------------------------------------- both

_CLAUSE_SPLIT = re.compile(r"(?<=[。！!？?；;\n，])|[,](?=\s*(?:i\b|I\b|my\b|My\b))|(?<=\.)\s+"
                           r"|\s+(?=(?:but|and|so|also|plus)\s+(?:i|I|my|My)\b)")
_PRONOUN = re.compile(r"[我你他她它]|^(?:但|可是|不过)")
# Someone else's words, and role-play actions: no statement of the user's ('He said "I'm from
# Boston"', 他说“我是北京人”, *I am a dragon*). An apostrophe inside a word does not quote.
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|(?<!\w)\'(?:[^\'\n]|\'(?=\w))+\'(?!\w)|\*[^*\n]+\*')
# A clause that imagines, or tells of long ago (如果我是一只猫, "if I were rich", "when I was a kid I
# lived in Ohio").
_NOT_SO = re.compile(r"^(?:如果|假如|要是|万一|假设|想象|小时候|当年|\W*(?:if|imagine|pretend|suppose|what if|when i was|back when|in my dreams?)\b)", re.I)


def statements(user_text: str) -> list[Statement]:
    """The statements found in one user message, in order."""
    out: list[Statement] = []
    previous_was_mine = False
    for clause in _CLAUSE_SPLIT.split(_QUOTED.sub("。", user_text)):
        clause = clause.strip()
        read = as_tables_read(clause)  # Traditional characters and written Cantonese as the patterns read them
        if not clause or clause.endswith(("？", "?")) or re.search(r"[吗嘛][？?。!！]?$", read) or _NOT_SO.match(read):
            previous_was_mine = False
            continue
        clause = clause.rstrip("。！!；;.，,…~～ ")
        read = read[: len(clause)]
        chinese = re.search(r"[\u4e00-\u9fff]", clause) is not None
        if chinese and previous_was_mine and not _PRONOUN.search(read):
            clause, read = "我" + clause, "我" + read  # 我住在重庆，养了一只猫: the subject carries over the comma
        found = rules_zh.statement(clause, read) if chinese else None
        found = found or rules_en.statement(clause)
        previous_was_mine = found is not None
        if found is not None:
            out.append(found)
    return out


def slot_of(fact_text: str) -> str | None:
    """The slot of a fact in one of the canonical shapes (`rules_zh.FORMS`, `rules_en.FORMS`), else None."""
    text = re.sub(r"^(?:用户|User\s+|The user\s+)", "", as_tables_read(normalise_text(fact_text)))
    return (rules_zh.kin_slot(text) or _slot(text, rules_zh.SLOTS, rules_zh.key, str)
            or rules_en.kin_slot(text) or _slot(text, rules_en.SLOTS, rules_en.key, str.lower))


def _slot(fact: str, table: Sequence[tuple[re.Pattern[str], str]], key: Callable[[str], str],
          fold: Callable[[str], str]) -> str | None:
    """The slot of the first row of a language's `SLOTS` that the fact is in the shape of: the kind,
    and the row's group as the slot's object (a liking's as `key` makes it)."""
    for pattern, kind in table:
        match = pattern.match(fact)
        if match:
            obj = fold(next((g for g in match.groups() if g), ""))
            return f"pref:{key(obj)}" if kind == "pref" else f"{kind}:{obj}" if obj else kind
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
