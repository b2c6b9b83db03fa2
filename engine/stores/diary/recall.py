"""Deciding whether a message asks about a past time range, so ordinary chat does not drag in
the whole range.

A time expression alone is a weak signal: "今天天气真好", "明天去上班" and "现在几点" all contain one
(a plain time parser fires on ~30% of real chat lines). A range is used only when

1. after clipping to `now` it still covers some past (future ranges ask nothing about the past), and
2. the message asks to recall: a memory verb ("还记得", "聊了什么", "remember", "did I tell you"),
   or a question about what the user or "we" did ("上周三我吃了什么", "where did we go"), or a
   request to go over it ("给我讲讲上周的事", "Summarize our conversations from last week"); or
   what one of us told the other, or our talk named beside the time, with a question or a request
   ("上周你说我应该多运动，具体是怎么说的", "repeat what you said yesterday"); or
3. a question is about the range's day, which lies before today ("5月4号的天气怎么样？",
   "What was our conversation yesterday about?", "在5月6号我读了一本书，它的名字是？"): the cue is
   a signal, not a gate. A statement ("昨天加班到很晚", "I went hiking last weekend") does not pull
   the range, nor does a question to the character about itself or now beside it ("昨天吃的火锅，
   你喜欢吃辣吗？"); a question about today ("今天几号") needs a cue, since today's turns are mostly
   in the window.

The cues themselves are tables in `recall_cues.py`; this module combines them. With
`require_cue=False` every past range is used (MoeChat's behaviour). The false-trigger and
recall rates of this rule are measured in tests/test_diary_recall.py over tests/data/diary_*.txt,
which hold the lines of eight sets written blind by others (the README and commits 55ec1a5, 403e2ab,
5e5dddd, 6744c2d and 07e7792 give what each measured before its fixes; the eighth was measured on the
final code and not fixed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from engine.stores.diary.asking import asks_recall
from engine.stores.diary.people import names_one_of_us
from engine.stores.diary.ranges import before_today_ranges, names_past_day
from engine.stores.diary.recall_cues import (
    ZH_MEMORY, ZH_PAST_QUESTION, EN_MEMORY, EN_PAST_QUESTION, ZH_REQUEST,
    EN_REQUEST, ZH_QUESTION, ZH_INDIRECT, ZH_FINAL_NE, ZH_STILL,
    EN_QUESTION, TOLD, TALK, ASKING, ABOUT_NOW,
    BACK_REFERENCE, MY_DOING, CHAT_SPELLINGS, CHAT_WORD, WHAT_NEXT, RECAP_WISH, WE_TALKED, ZH_REMINDER,
)

if TYPE_CHECKING:
    from engine.timeparse import TimeExpression

def is_question(message: str) -> bool:
    if EN_QUESTION.search(message):
        return True
    if ZH_QUESTION.search(ZH_INDIRECT.sub("", message)):
        return True
    # A final 呢 asks ("你呢", "后来呢") unless the sentence states something still going on
    # ("我还在上海上班呢", "还亏着呢").
    return bool(ZH_FINAL_NE.search(message)) and not ZH_STILL.search(message)


# Clauses end at Chinese and English punctuation and at emoji; an English full stop only before a
# space or the end (not in 3.5 or e.g.).
_CLAUSE = re.compile(r"(?:[^，,。；;！!？?\n.～~\u2600-\u27bf\U0001f300-\U0001faff]|\.(?![\"'”’]?(?:\s|$)))+"
                     r"(?:[，,。；;！!？?\n～~\u2600-\u27bf\U0001f300-\U0001faff]|\.[\"'”’]?(?=\s|$))*")
# Chinese chat often separates clauses by a space ("前天体检报告出来了 尿酸偏高 要注意啥").
_CJK_SPACE = re.compile(r"(?<=[\u3400-\u9fff])[ \t\u3000]+(?=[\u3400-\u9fff])")
# "??" / "?!" after a statement is surprise, not a question, unless it asks what / where / ...
_EXCLAIMED = re.compile(r"(?:[?？][!！?？]|[!！][?？])[?？!！]*\W*$")
_ASKS_WHAT = re.compile(r"\b(what|where|when|who|which|why|how)\b|什么|啥|哪|谁|几|怎么|为什么|为啥|多少", re.IGNORECASE)


def _cjk_breaks(message: str) -> str:
    """`message` with each space between Chinese characters made a comma (same length: spans keep)."""
    return _CJK_SPACE.sub(lambda m: "，" * len(m.group()), message)


# What someone else said, quoted ('我同学问我"你毕业后打算干嘛"', 'she asked "why don't you call?"'):
# its question is theirs.
_QUOTED = re.compile(r'"[^"\n]{2,}"|“[^”\n]{2,}”|「[^」\n]{2,}」|『[^』\n]{2,}』')
_QUOTE_STOPS = str.maketrans({"?": ".", "!": ".", "？": "。", "！": "。"})


# A role-play action ("*leans in* Two days ago, you whispered something…"): narration, not what is asked.
_ACTION = re.compile(r"\*[^*\n]{1,80}\*")


def _unquoted(message: str) -> str:
    """`message` with quoted speech blanked but its sentence ends kept, as full stops, and role-play
    actions blanked (same length: spans keep): 'a book called "How to Be Less Annoying." Was that an
    insult?' is two sentences."""
    def blank(m: re.Match) -> str:
        return "".join(c if c in ".。" else " " for c in m.group().translate(_QUOTE_STOPS))
    return _ACTION.sub(lambda m: " " * len(m.group()), _QUOTED.sub(blank, message))


LONG_RANGE = timedelta(days=28)
"""A past range this long (a month, a season, a year) is asked about as the world's past unless
the question names one of us (`people.names_one_of_us`: "what did I tell you last year", "what did
Caroline do in July", not "Who won the Super Bowl last year?", "去年那届世界杯最后是谁赢了？")."""


# What may stand beside a time in a clause of its own ("Yesterday,", "On the 5th,", "那天，"): such a
# clause only sets the time of the clause after it.
_TIME_ONLY = re.compile(r"[\W\d_]+|\b(on|at|in|so|and|but|ok|okay|um|uh|hey|well|then|was it)\b|那天|那时候?|当时", re.IGNORECASE)


def _holds(m: re.Match, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether the matched piece of the message holds (some of) one of `spans`."""
    return any(s < m.end() and e > m.start() for s, e in spans)


def _without(message: str, spans: Sequence[tuple[int, int]], start: int = 0, end: int | None = None) -> str:
    """`message[start:end]` with the characters of `spans` (the time expressions) taken out."""
    end = len(message) if end is None else end
    return "".join(message[i] for i in range(start, end) if not any(a <= i < b for a, b in spans))


def _clauses(message: str, past_spans: Sequence[tuple[int, int]], long_spans: Sequence[tuple[int, int]] = (),
             names: Sequence[str] = ()) -> list[tuple[str, bool]]:
    """The message's clauses, each with whether it holds one of the past times (a long one only in
    a clause that names one of us); a clause of the time alone ("Yesterday, when I brought it up,
    what did you say?") lends it to the next."""
    out, lent = [], False
    for m in _CLAUSE.finditer(message):
        held = _holds(m, past_spans) or (_holds(m, long_spans) and names_one_of_us(m.group(), names))
        out.append((m.group(), held or lent))
        lent = held and not _TIME_ONLY.sub("", _without(message, past_spans, m.start(), m.end()))
    return out


def _talk_then(clauses: list[tuple[str, bool]]) -> str:
    """The words naming our talk in a clause that holds a past time ("" when none)."""
    for clause, holds_time in clauses:
        talk = TALK.search(clause) if holds_time else None
        if talk:
            return talk.group(0)
    return ""


def _asks_about_then(clauses: list[tuple[str, bool]]) -> bool:
    """Some question clause is about the past day: it holds the past time and is not a question to
    the character about itself or now (`ABOUT_NOW`), or it points back at that day's things
    (`BACK_REFERENCE`). A question in a clause of its own asks about something else ("My boss
    yelled at me yesterday. is that even allowed?", "上个月我弟高考，能上什么学校啊")."""
    after_time = False
    for clause, holds_time in clauses:
        if is_question(clause) and not (_EXCLAIMED.search(clause) and not _ASKS_WHAT.search(clause)):
            about_now = ABOUT_NOW.search(clause)
            if (holds_time and not about_now) or BACK_REFERENCE.search(clause):
                return True
            # what I did then, asked right after the time ("11月6号那天，我读的书叫什么名字")
            if after_time and not about_now and MY_DOING.match(clause):
                return True
        after_time = holds_time
    return False


_SENTENCE_END = re.compile(r"[。！？!?\n]+|\.+(?=\s|$)")
# What a sentence that only dates the one before may say besides the time: a copula, a hedge, a
# pro-verb, a pointer back ("好像是周三", "大概是上周说的", "就上礼拜说的那个", "Feels like I did a few days ago", "I
# think it was Monday").
_ONLY_THE_TIME = re.compile(
    r"[\W\d_]+|\b(it|that|this|was|is|were|on|at|in|about|around|or|so|i|we|you|did|think|guess|maybe|probably|"
    r"pretty|sure|feels?|like|if|remember|right|correctly|the|one|no|wait|sorry|mean|actually|oh|hmm|um|oops)\b"
    r"|是|在|那天|那次|那个|那件|那句|那些|的时候|左右|大概|好像|应该|可能|似乎|也许|就|吧|我记得|说的|问的|聊的|提的|讲的"
    # a correction ("…the other day… wait, no, it was on the 4th", "哦不对，是上周一")
    r"|不对|不是|哦|呃|嗯|错了|说错了|我是说|应该说",
    re.IGNORECASE)


def _sentence_of(message: str, at: int) -> tuple[int, int]:
    start = 0
    for m in _SENTENCE_END.finditer(message):
        if at < m.end():
            return start, m.end()
        start = m.end()
    return start, len(message)


def _cue_reaches(message: str, at: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether the memory word (or what one of us told) at `at` reaches a past time of the message:
    one said in its sentence or before it, or in a later sentence that asks, names our talk or holds
    nothing but the time ("Remember what I told you? It was on Monday."). A later statement tells
    news of that day: "Remember I was nervous about my presentation? It went fine on Friday.",
    "还记得我说要减肥吗？昨天开始跑步了"."""
    if not spans:
        return True
    cue_end = _sentence_of(message, at)[1]
    for s, _ in spans:
        if s < cue_end:
            return True
        a, b = _sentence_of(message, s)
        sentence = message[a:b]
        spelled = spelled_out(sentence)
        if is_question(sentence) or TALK.search(spelled) or TOLD.search(spelled) or ASKING.search(sentence) \
                or not _ONLY_THE_TIME.sub("", _without(message, spans, a, b)):
            return True
    return False


# What a message that names only our talk and its day may say besides them ("4月26日全部聊天内容", "the
# whole convo we had on Monday pls"): it asks for that talk as a fragment does.
_FRAGMENT_FILLER = re.compile(
    r"[\W\d_]+|\b(all|whole|entire|full|the|of|from|on|pls|please|plz|thx|thanks|ty)\b"
    r"|全部|所有|完整|整个|的|那天|那次|一下|呢|吧|呗|啊|呀|嘛|谢谢|我们|咱们|咱俩|我俩", re.IGNORECASE)


def _only_talk(message: str, talk: str, spans: Sequence[tuple[int, int]]) -> bool:
    return not _FRAGMENT_FILLER.sub("", _without(message, spans).replace(talk, " ", 1))


def _asks_only_what_next(message: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Every question of the message is about what to do next and holds no past time: beside what
    was told it is a thing the user refers to ("I finished the book you recommended on Monday. What
    should I read next?")."""
    asked = [m for m in _CLAUSE.finditer(message) if is_question(m.group())]
    return bool(asked) and all(WHAT_NEXT.search(m.group()) and not _holds(m, spans) for m in asked)


@dataclass(frozen=True)
class RecallDecision:
    """Whether (and why) a message's time ranges are a question about past turns."""

    use: bool
    cue: str
    """The words that made it a recall question ("" when none)."""
    learned: str = ""
    """Why the model of `asking.asks_recall` fired where no word rule did ("" when it did not)."""
    settled: bool = False
    """The rules found that it asks something else (`asks_about_now`): the model is not asked."""

    @property
    def why(self) -> str:
        """For a range's reason: the cue as written, or the model's word ("" when neither)."""
        return f'recall cue "{self.cue}"' if self.cue else self.learned


def spelled_out(message: str) -> str:
    """`message` with chat spellings written out (`CHAT_SPELLINGS`), for the cues that need no spans."""
    return CHAT_WORD.sub(lambda m: CHAT_SPELLINGS[m.group().lower()], message)


def _as_written(message: str, spelled: str, m: re.Match) -> tuple[str, int]:
    """The words of `message` that `m`, a match in `spelled_out(message)`, covers, and where they
    start: a cue is named (in the reasons, and taken out of the search text) as the user wrote it
    ("wht did u say")."""
    if spelled == message:
        return _stripped(message, m.start(), m.end())

    def original(pos: int, end: bool) -> int:
        shift = 0  # how much longer the spelled-out text is up to here
        for w in CHAT_WORD.finditer(message):
            at, long = w.start() + shift, len(CHAT_SPELLINGS[w.group().lower()])
            if pos < at or (end and pos == at):
                break
            if pos < at + long or (end and pos == at + long):
                return w.end() if end else w.start()
            shift += long - len(w.group())
        return pos - shift

    return _stripped(message, original(m.start(), False), original(m.end(), True))


def _stripped(message: str, start: int, end: int) -> tuple[str, int]:
    words = message[start:end]
    return words.strip(), start + len(words) - len(words.lstrip())


_CUES = (ZH_MEMORY, EN_MEMORY, ZH_PAST_QUESTION, EN_PAST_QUESTION, ZH_REQUEST, EN_REQUEST)


def _cue(message: str, spelled: str, spans: Sequence[tuple[int, int]] = ()) -> tuple[str, int]:
    """The recall words as written and where they start (("", -1) when none); a reminder
    (`ZH_REMINDER`) is none unless its clause holds one of `spans`, the past times."""
    for pattern in _CUES:
        for m in pattern.finditer(spelled):
            words, at = _as_written(message, spelled, m)
            if not _reminder(message, at, spans):
                return words, at
    return "", -1


def _reminder(message: str, at: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether the memory word at `at` opens its clause as a reminder that names no past time."""
    clause = next((c for c in _CLAUSE.finditer(message) if c.start() <= at < c.end()), None)
    if clause is None or _holds(clause, spans):
        return False
    m = ZH_REMINDER.match(message, clause.start())
    return m is not None and at < m.end()


def recall_cue(message: str) -> str:
    """The recall words in `message` ("" when it asks nothing about the past)."""
    return _cue(message, spelled_out(message))[0]


def decide_for(message: str, ranges: Sequence[tuple[TimeExpression, tuple[datetime, datetime]]], now: datetime, *,
               require_cue: bool = True, names: Sequence[str] = ()) -> RecallDecision:
    """`decide` for a message's `past_ranges`: the spans of those that lie before today. `names`:
    the user's and the character's (they count as one of us)."""
    past = [(expr.span, expr.end - expr.start >= LONG_RANGE) for expr in before_today_ranges(ranges, now)]
    return decide(message, has_past_range=bool(ranges), require_cue=require_cue,
                  past_spans=[span for span, long in past if not long], long_spans=[span for span, long in past if long],
                  names=names)


def decide_with_model(message: str, ranges: Sequence[tuple[TimeExpression, tuple[datetime, datetime]]],
                      now: datetime, vector: Sequence[float] | None, model_id: str, *, require_cue: bool = True,
                      names: Sequence[str] = ()) -> RecallDecision:
    """`decide_for`, and where its rules neither fire nor settle the message and it names a past day,
    the learned model of `asking.asks_recall` over `vector` (the embedding of what the message asks
    besides its time words)."""
    decision = decide_for(message, ranges, now, require_cue=require_cue, names=names)
    if decision.use or decision.settled or not require_cue or not names_past_day(ranges, now):
        return decision
    learned = asks_recall(vector, model_id)
    return RecallDecision(True, "", learned) if learned else decision


def decide(message: str, *, has_past_range: bool, require_cue: bool = True,
           past_spans: Sequence[tuple[int, int]] = (), long_spans: Sequence[tuple[int, int]] = (),
           names: Sequence[str] = ()) -> RecallDecision:
    """Whether to answer from the range. `has_past_range`: some range survives `clip_to_past`;
    `past_spans`: where the ranges that lie before today are said in `message` (a question about
    one of those days is then enough); `long_spans`: those of them that last `LONG_RANGE` or more
    (a question about one of those must name one of us: I, you, we or one of `names`)."""
    if not has_past_range:
        return RecallDecision(False, "")
    message = _cjk_breaks(_unquoted(message))
    spelled = spelled_out(message)
    spans = [*past_spans, *long_spans]
    cue, at = _cue(message, spelled, spans)
    if cue and not _cue_reaches(message, at, spans):
        cue = ""
    if cue or not require_cue:
        return RecallDecision(True, cue)
    question = is_question(message) and not _asks_only_what_next(message, spans)
    told = TOLD.search(spelled)
    # the request must be more than the words that say what was told ("你给我写的诗真好看")
    if told and (question or ASKING.search(f"{spelled[:told.start()]}。{spelled[told.end():]}")):
        told_words, at = _as_written(message, spelled, told)
        if _cue_reaches(message, at, spans):
            return RecallDecision(True, told_words)
    clauses = _clauses(message, past_spans, long_spans, names) if past_spans or long_spans else []
    talk = _talk_then(clauses)
    # as for what was told, the words naming the talk are no request ("你给我推荐的那首歌我听了一晚上")
    if talk and (question or ASKING.search(spelled_out(message.replace(talk, "。", 1))) or _only_talk(message, talk, spans)):
        return RecallDecision(True, talk)
    wish = RECAP_WISH.search(spelled)
    if wish and (talk or WE_TALKED.search(spelled)):
        return RecallDecision(True, _as_written(message, spelled, wish)[0])
    if question and _asks_about_then(clauses):
        return RecallDecision(True, "a question about a past day")
    return RecallDecision(False, "", settled=asks_about_now(message, spans))


def asks_about_now(message: str, spans: Sequence[tuple[int, int]]) -> bool:
    """The past time is told in a statement, and every question of the message, a sentence without
    it, asks the character about itself or now, or is a riddle (`ABOUT_NOW`): "I watched Inception
    on June 21. Have you seen it?", "你猜我干嘛去了？昨天我去看演唱会了！". Nothing there asks for our
    talk of that day, so the learned model is not asked to find it."""
    clauses = [(m, spelled_out(m.group())) for m in _CLAUSE.finditer(message)]
    asked = [(m, spelled) for m, spelled in clauses if is_question(m.group())]
    told = [(m, spelled) for m, spelled in clauses if not is_question(m.group()) and _holds(m, spans)]
    if not asked or not told or any(TALK.search(spelled) or TOLD.search(spelled) for _, spelled in told):
        return False
    # a request ("can you go over it?", 你能概括一下吗), a memory word (有啥我该记住的吗) or what one of
    # us told asks for the talk
    return all(ABOUT_NOW.search(m.group()) and not (BACK_REFERENCE.search(m.group()) or ASKING.search(spelled)
                                                     or TALK.search(spelled) or TOLD.search(spelled)
                                                     or _MEMORY_WORD.search(spelled) or _holds(m, spans))
               for m, spelled in asked)


_MEMORY_WORD = re.compile(r"记|忘|想起|\b(remember|recall|forget|forgot|remind)", re.IGNORECASE)
