"""Deciding whether a message asks about a past time range, so ordinary chat does not drag in
the whole range.

A time expression alone is a weak signal: "今天天气真好", "明天去上班" and "现在几点" all contain one
(a plain time parser fires on ~30% of real chat lines). A range is used only when

1. after clipping to `now` it still covers some past (future ranges ask nothing about the past), and
2. the message asks to recall: a memory verb ("还记得", "聊了什么", "remember", "did I tell you"),
   or a question about what the user or "we" did ("上周三我吃了什么", "where did we go"), or a
   request to go over it ("给我讲讲上周的事", "Summarize our conversations from last week"); or
3. it is a question at all and the range lies before today ("5月4号的天气怎么样？",
   "What was our conversation yesterday about?"): the cue is a signal, not a gate. A statement
   ("昨天加班到很晚", "I went hiking last weekend") is not a question and does not pull the range;
   a question about today ("今天几号") needs a cue, since today's turns are mostly in the window.

With `require_cue=False` every past range is used (MoeChat's behaviour). The false-trigger and
recall rates of this rule are measured in tests/test_diary_recall.py over tests/data/diary_*.txt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

# A memory verb: enough on its own, given a past range.
_ZH_MEMORY = re.compile(
    # 忘了 only before what was forgotten is asked ("我忘了昨天聊的啥"); "我昨天忘了带钥匙" is a statement
    r"(?<!没人)(?<!有人)(?<!都不)(?<!也不)记得|记不记得|忘(了|记了?)[^，。！？,.!?]{0,12}(什么|啥|哪|谁|多少|名字)|回忆|回想|想起来|"
    r"(聊|谈|说|讲|提|问|告诉|跟你说|和你说|对你说)(了|过|到)?(些)?(什么|啥|哪些|些啥|几件|多少)|"
    r"(聊|谈|讲|提|告诉|问)过|跟你说过|和你说过|对你说过|说过|提到过|"
    r"我们.{0,6}(聊|谈|说|讲)|咱们.{0,6}(聊|谈|说|讲)|咱.{0,4}(聊|谈)|"
    r"发生了什么|发生过什么|(都|还)?干了(些)?(什么|啥)|都做了(些)?(什么|啥)|什么来着|啥来着|"
    r"(接着|继续)[^，。！？,.!?]{0,8}(聊|话题)|再(聊聊|说说|讲讲)|那个话题|"
    r"(跟|和|对|给)你(说|讲|提|聊|吐槽|抱怨|倾诉|推荐)(的|过)"
)
# A question about what I / we did: subject, a past marker, then a question word.
_ZH_PAST_QUESTION = re.compile(
    r"(我|我们|咱们|咱)[^，。！？,.!?]{0,10}(了|(?<![能会以得])过)[^，。！？,.!?]{0,8}"
    r"(什么|啥|哪|几|谁|多少|怎么样|吗|么|没|呢|\?|？)"
    r"|(我|我们|咱们|咱)[^，。！？,.!?]{0,6}(是不是|有没有)[^，。！？,.!?]{0,10}(了|过)"
    r"|(我|我们|咱们|咱)[^，。！？,.!?]{0,6}(去了|吃了|买了|做了|看了|玩了)(哪|什么|啥|几)"
    r"|(我|我们|咱们|咱)[^，。！？,.!?]{0,4}(去|吃|买|做|看|玩|干)(了)?(哪|什么|啥)[^，。！？,.!?]{0,3}了"
    r"|(我|我们|咱们|咱)[^，。！？,.!?]{0,8}(去|吃|买|做|看|玩|干|喝|穿|见)的(是)?(哪|什么|啥|谁)"
)
_EN_MEMORY = re.compile(
    # forgot / forget only with what was forgotten asked about ("I forgot what I told you"); "I
    # forgot my keys yesterday" is a statement
    r"\b(remember|recall|remind me|(forgot|forget|forgotten)\s+(what|where|who|when|which|whether|if|how|the name)|"
    r"(refresh|jog) my memory|"
    r"(talk|talked|chat|chatted|speak|spoke|discuss|discussed)\s+about|"
    r"did(n'?t| not)? (i|we) (ever |already |once )?(tell|say|mention|talk|chat|discuss|ask)|(have|haven'?t) (i|we) (told|said|mentioned)|"
    r"(i|we) (told|said|mentioned|talked|chatted|discussed)\b.*\?|"
    r"(i|we) (told|said|mentioned)\b[^.!?]*[,.;]\s*(what|where|who|when|how|which)(\s+one)?\s+(was|is|were|did)\s+"
    r"(it|they|that|this|the|its|their|his|her|you)\b|"
    r"\bwhat (i|we) (told|said|mentioned|talked|discussed|chatted)|\bwhat (i|we) (was|were) (talking|chatting|saying|discussing)\b|"
    r"what (have|had) (i|we)\b|what was (i|it i|it we)|what were we|"
    r"(continue|pick up|resume)\b[^.?!]{0,30}\b(topic|conversation|discussion|chat)|where we left off|let'?s continue)\b",
    re.IGNORECASE,
)
_EN_PAST_QUESTION = re.compile(
    r"\b(what|where|when|who|which|how (much|many|long)|how)\b[^.?!]{0,30}\b(did|was|were|had)\s+(i|we)\b"
    r"|\bwhat did you (say|tell me|recommend|suggest|mention)\b"
    r"|^\s*(did|was|were|had)\s+(i|we)\b[^.!]*\?",
    re.IGNORECASE,
)

# A request to go over the past, phrased as an instruction ("给我讲讲上周的事", "把昨天的聊天总结一下",
# "Tell me about last Thursday", "Summarize our conversations from last week"): neither a question
# nor a statement, and with its time words removed too short to search on. The verb must open the
# message or a sentence, follow who it is for, or end a 把 clause; a statement that holds one
# ("昨天写了个总结", "老师让我们总结一下上周的课", "Last night, review sessions ran late") is not a request.
# 整理 / 汇总 / 归纳 open statements as often as requests ("整理了一下昨天拍的照片", "整理上周的会议纪要花了
# 我两小时"): only after who it is for or ending a 把 clause. A verb followed by 了 / 的 / 过 / 着 is a
# finished action ("总结了一下上周的工作", "上周你整理的资料"), not a request.
_ZH_VERBS = r"(?:说说|讲讲|总结|回顾|复盘|概括|梳理|盘点|列出|列举)(?![了的过着])"
_ZH_VERBS_FOR = r"(?:整理|汇总|归纳)(?![了的过着])"
_ZH_REQUEST = re.compile(
    r"(?:^|[。！？!?；;\n]\s*|给我|跟我|和我|帮我|请|麻烦你?|你)" + _ZH_VERBS
    + r"|(?:给我|帮我|请你?|麻烦你?)" + _ZH_VERBS_FOR
    + r"|(?:^|[。！？!?；;，,\s]|给我|帮我|请|麻烦你?|你)把[^。！？!?；;，,让叫]{1,24}?(?:" + _ZH_VERBS + "|" + _ZH_VERBS_FOR
    + r")(?:一下|下)"
)
_EN_REQUEST = re.compile(
    r"(?:^|[.!?]\s+|\b(?:please|now|so|ok|okay|hey|and|just|then)[,!]?\s+)"
    r"(?:summari[sz]e|recap|list|describe|review|go (?:over|through)|walk me through|fill me in on"
    r"|give me (?:a |an )?(?:quick |short |brief )?(?:recap|summary|rundown|overview))\b"
    r"|\btell me (?:again |once more )?(?:about|what|how|everything|more about)\b"
    r"|\b(?:can|could|would|will) you (?:please )?(?:summari[sz]e|recap|sum\b|go over|walk me through|list|describe)",
    re.IGNORECASE,
)


# A question: a question mark, or an interrogative word. Only asked together with a past range.
# 啥 / 什么 before 也 / 都 + 没 / 不 is "anything" ("啥也没买", "什么都不想做"); 你猜怎么着 is a
# storyteller's aside.
_ZH_QUESTION = re.compile(
    r"[?？]|吗|(什么|啥)(?![也都][没不])|哪|谁|(?<![前这那好十])几[点号月天个次]|怎么(?!着)|怎样|为什么|为啥|多少|是否"
    r"|有没有|是不是|如何|(?<![没不])(?<!不知道[该要能去])(?<!知道)干嘛|咋(?![舌呼])"
)
_ZH_FINAL_NE = re.compile(r"呢\s*$")
_ZH_STILL = re.compile(r"着呢\s*$|还[^，。！？,.!?]*呢\s*$")
_EN_QUESTION = re.compile(
    r"\?|^\s*(?:(?:so|and|ok|okay|well|hey|but|then)\b,?\s+)?"
    r"(what(?!\s+an?\b)|whats|wheres|whos|when|where|who|whom|whose|which|why|how|did|do|does|was|were|is|are|can|could|have|had|"
    r"didn'?t|don'?t|wasn'?t|weren'?t|haven'?t|hadn'?t|any idea)\b"
    # or a question put after a clause ("yesterday you recommended a show, whats it called")
    r"|[,;.:\-–—]\s*(?:what|where|who|which)\s+(?:was|were|did)\s+(?:it|that|this|they|he|she|the|his|her)\b"
    r"|[,;.:\-–—]\s*(?:what|which)(?:'?s|\s+is)\s+(?:it|that|this|the\s+\w+)\s+(?:called|named|again)\b",
    re.IGNORECASE,
)


# Something one of us told the other, in a question or a request ("what was the place I mentioned
# this morning", "今天早上你给我推荐的歌是哪首", "上星期我说的健身计划帮我看看"): about the
# conversation even with no other cue. In a statement it is not: "你推荐的那家店昨天我去了" and "the
# book you recommended last week was great" are about the visit and the book, "上周我讲的课" a lecture.
_TOLD = re.compile(r"\b(i|we) (told you|said|mentioned|recommended|suggested)\b"
                   r"|\byou (said|told me|mentioned|recommended|suggested)\b"
                   r"|我(说|讲|提到|聊到)的|你(给我|跟我|和我|对我|帮我)?(说|讲|提到|推荐|建议|介绍)的", re.IGNORECASE)
_ASKING = re.compile(r"帮我|给我|请你|麻烦你|\b(can|could|would) you\b|\bplease\b", re.IGNORECASE)


def is_question(message: str) -> bool:
    if _ZH_QUESTION.search(message) or _EN_QUESTION.search(message):
        return True
    # A final 呢 asks ("你呢", "后来呢") unless the sentence states something still going on
    # ("我还在上海上班呢", "还亏着呢").
    return bool(_ZH_FINAL_NE.search(message)) and not _ZH_STILL.search(message)


# A question to the character about itself or the present, put after a clause that mentions a past
# day: "昨天吃的火锅，你喜欢吃辣吗？", "yesterday was rough, how are you?", "i cried at work yesterday,
# is that normal?". It asks nothing about that day. A blind set of 220 ordinary messages that mention
# a past time fired 14 % of the time on "a question + a past day" before this, mostly these.
_ABOUT_NOW = re.compile(
    r"你(平时|平常|一般|喜欢|爱|觉得|认为|说|会|能|要|想|呢|吃过|看过|去过|玩过|听过|用过|知道|有没有|是不是|还好|最近|现在|今天)"
    r"|我(是不是|该不该|该|应该|要不要|能不能|会不会|可以)|今年|现在|今天|明天|以后|怎么办|咋办|咋整|好不好|行不行|对不对|正常吗"
    r"|\b(do|does|are|would|will|can|could|should|have) you\b|\bhow are you\b|\bhow('s|\s+is|\s+was)\s+your\b"
    r"|\bwhat('s|\s+is|\s+are)\s+your\b|\b(is|was|isn'?t) (it|that|this) (normal|ok|okay|bad|weird|fine|too|good|wrong|crazy|strange)\b"
    r"|\bshould i\b|\bdo you think\b|\bwhat do you\b|\bany (tips|advice|ideas|suggestions)\b",
    re.IGNORECASE,
)
# ... unless it points back at something of that day ("你知道它叫什么吗", "do you remember what it was
# called").
_BACK_REFERENCE = re.compile(
    r"(它|那个|那本|那家|那部|那首|那件|那次|那天)[^，。！？,.!?]*?(什么|啥|哪|谁|叫|名字)"
    r"|\b(it|that|they|them|those)\b[^.?!]*\b(called|named|name)\b|\bwhat (was|were) (it|that|they)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[^，,。；;！!？?\n]+[，,。；;！!？?\n]*")


def _asks_about_then(message: str, past_spans: Sequence[tuple[int, int]]) -> bool:
    """Some question clause of `message` holds the past time itself, or is not a question to the
    character about itself or now (`_ABOUT_NOW`), or points back at that day's things."""
    for m in _CLAUSE.finditer(message):
        clause = m.group()
        if not is_question(clause):
            continue
        if any(s < m.end() and e > m.start() for s, e in past_spans):
            return True
        if not _ABOUT_NOW.search(clause) or _BACK_REFERENCE.search(clause):
            return True
    return False


@dataclass(frozen=True)
class RecallDecision:
    """Whether (and why) a message's time ranges are a question about past turns."""

    use: bool
    cue: str
    """The words that made it a recall question ("" when none)."""


def recall_cue(message: str) -> str:
    """The recall words in `message` ("" when it asks nothing about the past)."""
    for pattern in (_ZH_MEMORY, _EN_MEMORY, _ZH_PAST_QUESTION, _EN_PAST_QUESTION, _ZH_REQUEST, _EN_REQUEST):
        m = pattern.search(message)
        if m:
            return m.group(0).strip()
    return ""


def clip_to_past(start: datetime, end: datetime, now: datetime) -> tuple[datetime, datetime] | None:
    """[start, min(end, now)] when some of it is in the past, else None."""
    stop = min(end, now)
    if start >= stop:
        return None
    return start, stop


def decide(
    message: str, *, has_past_range: bool, require_cue: bool = True, before_today: bool = False,
    past_spans: Sequence[tuple[int, int]] | None = None,
) -> RecallDecision:
    """Whether to answer from the range. `has_past_range`: some range survives `clip_to_past`;
    `before_today`: one of them ends before today began (a question about it is then enough);
    `past_spans`: where those ranges are said in `message` (None: anywhere, every question counts)."""
    if not has_past_range:
        return RecallDecision(False, "")
    cue = recall_cue(message)
    if cue or not require_cue:
        return RecallDecision(True, cue)
    told = _TOLD.search(message)
    if told and (is_question(message) or _ASKING.search(message)):
        return RecallDecision(True, told.group(0))
    if before_today and is_question(message) and (past_spans is None or _asks_about_then(message, past_spans)):
        return RecallDecision(True, "a question about a past day")
    return RecallDecision(False, "")
