"""The words that tell a sentence's tense, as rows: what a clause around a time expression says about
which occurrence it means ("Remember to call me on Monday": the coming one; "周日我去看了我奶奶": the
last one). `engine.timeparse.tense` reads them once per clause into a feature record, and
`engine.timeparse.tense_rules` decides from that record.

A row is a `Cue`: its pattern, the signal it gives, where it counts (its scope), and an example with
what the example means. Rows are read in order and a row's match is blanked for the rows after it, so
a specific row comes before a general one and takes its words away: 别忘了 (a reminder) before 了 (done),
"remember to" before "remember", "signed up" (committed) before any -ed word, 不过 ("but") before 过.

Signals:
- done: a thing told as done (了, 过, "we went", "was"); past_aux: was / were / did / had, which is done too.
- past_form: any English past form, whoever did it ("the cake Mom made"), weaker than done.
- gone: a time told as gone with no deed (那天, "last", "remember when").
- future: a plan, a wish, a suggestion (要, 打算, "will", "should", "let's"); reminder: 别忘了, "remind me".
- committed: signing up, booking or arranging before the day: the day after it is the event's ("I booked
  a table for Thursday"), a day before it the act's ("On Saturday I invited everyone over"): there it
  reads as done.
- present: an English clause told in the present ("my appointment is monday").
- settled: no tense; it only takes its words away (说定了, 不过, "I'm so excited").
- habit: a sentence told as a habit (一般, "usually"); every: a day named as a habit ("every Sunday").
- for_day: a day something is for or due by ("a table for Thursday", "by Friday"); since_day: a day
  something runs from ("sore from Wednesday").
- year, which: an expression that says which one it is (2024年, 上周五, "next Friday").
- lead_in / lead_in_wh / lead_in_ask: reported speech or a question word starts a clause of its own
  ("He said he's coming for Thanksgiving", "I'll never forget what happened on Christmas"); after a
  request to recall, that clause asks ("remind me what I said on Monday").

Scopes:
- clause: counts in the expression's clause (from the last lead-in before it to the next comma, colon or
  sentence end); a clause with no tense of its own takes its sentence's ("thanks for Thursday, it was fun").
- clause_before: counts only before the expression in its clause (committed).
- sentence: counts for every clause of the sentence (habit).
- before / after: matched right before / right after the expression ("every" Sunday, Saturday"s").
- expression: matched in the expression's own text.
- lead_in: starts a new clause where it ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SIGNALS = frozenset({
    "done", "past_aux", "past_form", "gone", "future", "reminder", "committed", "present", "settled",
    "habit", "every", "for_day", "since_day", "year", "which", "lead_in", "lead_in_wh", "lead_in_ask"})
SCOPES = frozenset({"clause", "clause_before", "sentence", "before", "after", "expression", "lead_in"})
MEANS = frozenset({"last", "coming", "nearest", "keep", "none"})


@dataclass(frozen=True)
class Cue:
    name: str
    """What the row catches, short."""
    pattern: str
    """A regular expression, case-insensitive."""
    signal: str
    """What a match says (one of `SIGNALS`)."""
    scope: str
    """Where a match counts (one of `SCOPES`)."""
    example: str
    """A sentence the row fires on."""
    means: str
    """Which occurrence the example's time expression means (one of `MEANS`)."""
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.signal not in SIGNALS or self.scope not in SCOPES or self.means not in MEANS:
            raise ValueError(f"cue {self.name!r}: bad signal, scope or means "
                             f"({self.signal!r}, {self.scope!r}, {self.means!r})")
        flags = re.I
        if self.scope == "before":
            flags |= re.S
        object.__setattr__(self, "regex", re.compile(self.pattern, flags))


_IRREGULAR = (
    "ate|saw|got|made|took|met|told|said|bought|came|gave|found|felt|left|lost|ran|sat|slept|wore|wrote|"
    "drank|sang|won|brought|thought|heard|paid|sent|spent|went|did|had|began|broke|caught|chose|drove|fell|"
    "flew|forgot|fought|grew|hid|kept|knew|led|meant|rode|rang|sold|spoke|stood|stole|swam|taught|threw|"
    "understood|woke|became|blew|built|drew|fed|held|lent|shook|sank|stuck|tore")
"""English past forms that do not end in -ed (not read, put, hit, cut, quit: present as often)."""
_PRONOUN = r"\b(?:i|we|you|he|she|it|they)"
_ADVERB = r"(?:(?:just|finally|never|also|really|actually|already|even|only|totally|still|both|all)\s+)?"

ZH_CUES: tuple[Cue, ...] = (
    # what a question or a memory asks back about, before 记得 as a reminder
    Cue("还记得", r"还记得|记不记得|记得[^，。！？,.!?]{0,20}吗|(?<=我)记得", "gone", "clause",
        "你还记得我周一跟你说的事吗？", "none"),
    Cue("别忘了", r"别忘了?|不要忘了?|别忘记|记得|提醒我", "reminder", "clause", "周一别忘了带钥匙", "coming"),
    Cue("报名了", r"报名了|报了名|报了|预?[订定]好?了|(?<![节制违])约好?了|安排好?了|挂了号|定下来了|"
        r"(?:买|抢)到?了(?=[^，,。！？!?]{0,12}票)", "committed", "clause_before", "我订了12月20号的机票", "nearest"),
    Cue("说定了", r"[说讲]好了|[定好对行算]了|不过|过生日|过节|没(?:事|空|时间|问题)", "settled", "clause",
        "不过周一还要跟客户汇报", "coming"),
    # not yet: what is still to come ("情人节还没想好送什么")
    Cue("还没", r"还没有?|尚未", "future", "clause", "情人节还没想好送什么", "coming"),
    # 不…了 tells a change of plan, not a thing done ("周四不能陪你了")
    Cue("不…了", r"不(?!小心|得不|知不觉|过)(?:能|会|去|用|想|要)?[\u4e00-\u9fff]{0,6}了", "future", "clause", "周四不能陪你了，要加班", "coming"),
    Cue("要过得", r"[要会想能]过得", "future", "clause", "周末要过得开心点", "coming"),
    # about to: 快到了, 要考试了 (要了 alone is "asked for": 要了一杯咖啡)
    Cue("快…了", r"(?:快|就要|马上就?)[\u4e00-\u9fff]{0,4}了|要[\u4e00-\u9fff]{1,4}了", "future", "clause",
        "周五要考试了", "coming"),
    # a plan that was: 本来周一要见他
    Cue("本来", r"本来|原本|原来打算", "gone", "clause", "本来周一要见他，结果他放我鸽子了", "last"),
    Cue("了", r"了|(?<=[吃去做玩看说聊买见到听写读问讲])过|过得|去年|上次|当时|来着|没有?(?=[\u4e00-\u9fff])",
        "done", "clause", "周日我去看了我奶奶", "last"),
    Cue("那天", r"那天|那时|的[^，。！？,.!?]{0,6}怎么样", "gone", "clause", "圣诞节那天我一个人在家", "last"),
    # 会 is "will", not a meeting or a party (会议, 开会, 聚会, 机会); 想 is "want to", not "miss" (想你)
    Cue("要", r"见[面吧啦]?|要|(?<![开机聚约晚舞宴社体领误])会(?![议员场所])|打算|准备|计划|将|"
        r"想(?![你他她家念起到法通过])|到时|一起.{0,12}吧|等到|期待|盼着|"
        r"(?:去|来|走|玩|吃|看|做|试试|聊)[^，。！？,.!?]{0,8}吧", "future", "clause", "周五我要去面试", "coming"),
    Cue("一般", r"(?<![得很挺])一般(?!般)(?=[\u4e00-\u9fff])|通常|总是|往往|每次|每回", "habit", "sentence",
        "我周末一般都宅在家", "none"),
)

EN_CUES: tuple[Cue, ...] = (
    # reported speech is told in its own tense; only a lead-in followed by that / if / whether or a subject
    # starts a clause ("He mentioned the party on Saturday" is one clause)
    Cue("said that", r"\b(?:said|says|say|told\s+(?:me|us|you|him|her|them)|tell\s+(?:me|you)|mentioned|mention|"
        r"promised|texted|wrote|asked(?:\s+(?:me|us|you))?|know|knew|heard|hope|think|thought|remember|forget)"
        r"(?:\s+(?:that|if|whether)\b|(?=\s+(?:i|you|he|she|we|they|it|my|his|her|our|their)\b"
        r"|\s+(?:i|you|he|she|we|they|it)'))", "lead_in", "lead_in", "She said she'd call me on Thursday", "coming"),
    # a storyteller's opener or a shared memory tells what follows ("Guess what I did this week?",
    # "Remember when we volunteered together last year?", 你猜我周末干嘛了)
    Cue("guess what", r"\b(?:guess|you\s+know)\s+what\b|\bremember\s+(?:when|the\s+time)\b|你猜", "lead_in",
        "lead_in", "Guess what I did on Saturday?", "last"),
    Cue("forget what", r"\b(?:forget|forgot|remember|know|knew|wonder|about|ask(?:ed)?(?:\s+(?:me|you))?)"
        r"(?=\s+(?:what|when|where|who|how|which)\b)", "lead_in_wh", "lead_in",
        "I'll never forget what happened on Christmas", "last"),
    Cue("remind me what", r"\b(?:remind|tell)\s+me(?:\s+again)?(?=\s+(?:what|when|where|who|how|which)\b)",
        "lead_in_ask", "lead_in", "remind me what I said about the trip on Monday", "none"),
    Cue("remember to", r"\bremember\s+to\b|\b(?:don'?t|do\s+not|never)\s+(?:let\s+me\s+)?forget\b|\bremind\s+me\b|"
        r"\bmake\s+sure\b", "reminder", "clause", "Remember to call me on Monday", "coming"),
    Cue("signed up", r"\b(?:signed up|registered|enrolled|entered|booked|reserved|"
        r"(?:bought|got) (?:the |our |my )?tickets|(?:(?:got|was|were|been) )?invited|"
        r"scheduled|planned|arranged|confirmed|rsvp'?d|"
        r"made (?:a |an |the |our |my )?(?:reservation|appointment|plans?))(?:\s+(?:for|in|to)\b)?",
        "committed", "clause_before", "I invited everyone to the party on Saturday", "coming"),
    # an -ed word after a present "be" is a state now ("I'm so excited about Saturday"); "she's finished"
    # may be "has"
    Cue("I'm excited", r"(?:\b(?:am|is|are)|'(?:m|re)|\b(?:it|that)'s)\s+(?:(?:so|really|very|all|pretty|super|just|"
        r"already|not)\s+)*[a-z]{3,}ed\b", "present", "clause", "I'm so excited about Saturday", "coming"),
    Cue("should have", r"\b(?:should|could|would|must|might)(?:n'?t)?\s+have\s+[a-z]+", "done", "clause",
        "I should have gone on Saturday", "last"),
    Cue("was", r"\b(?:was|were|did|had)(?:n'?t)?\b|\bcouldn'?t\b", "past_aux", "clause",
        "Thursday was my birthday", "last"),
    Cue("we went", rf"\b(?:ago|used to)\b|{_PRONOUN}\s+{_ADVERB}(?:[a-z]{{3,}}ed|died|read|{_IRREGULAR})\b(?!')|"
        rf"\b(?:what|who|which)\s+(?:[a-z]{{2,}}ed|{_IRREGULAR})\b", "done", "clause",
        "I ran my first 5k on Saturday", "last"),
    Cue("last", r"\blast\b|\bremember\b", "gone", "clause", "the last time we talked on Monday", "last"),
    Cue("will", r"\bwill\b|'ll\b|\bwon'?t\b|\bgoing to\b|\bgonna\b|\bplan(?:ning|s)? (?:to|for)\b|\bsee you\b|"
        r"\bcan'?t wait\b|\blooking forward\b|\buntil\b|\btill\b|\bupcoming\b|\bcoming up\b|\blet'?s\b|"
        r"\b(?:should|could|might|would)\b|'d\s+(?!been\b|had\b|[a-z]+ed\b)|\bwants?\s+to\b|\bwanna\b|"
        r"\bhope\s+to\b", "future", "clause", "see you on Christmas", "coming"),
    Cue("is", r"\b(?:am|is|are|have|has|need|needs|gotta)\b|'(?:m|re)\b|\b(?:it|he|she|that|there|what|how)'s\b|"
        r"\b(?:starts?|begins?|leaves|ends|opens|closes|arrives|comes|wants|due)\b", "present", "clause",
        "my appointment is monday", "coming"),
    Cue("-ed", rf"\b(?:ago|spent|{_IRREGULAR}|[a-z]{{3,}}ed)\b", "past_form", "clause",
        "here's the cake Mom made on Saturday", "last"),
    Cue("usually", r"\b(?:usually|always|normally|typically|traditions?)\b", "habit", "sentence",
        "During Thanksgiving, we usually watch a few movies.", "none"),
)

DAY_CUES: tuple[Cue, ...] = (
    Cue("every", r"(?:\b(?:every|each)(?:\s+other)?|每(?:一?个|逢|隔一?)?(?:年|月|周|星期)?的?|逢)\s*\Z", "every", "before",
        "she calls every sunday at 8", "none"),
    # a list goes on with the habit ("I run every Tuesday and Thursday", 每周二和周四)
    Cue("every … and", r"(?:\b(?:every|each)|每(?:一?个)?(?:周|星期)?)\s*[\w\u4e00-\u9fff]+"
        r"(?:\s*(?:,|、|\band\b|\bor\b|和|或)\s*[\w\u4e00-\u9fff]+)*\s*(?:,|、|\band\b|\bor\b|和|或)\s*\Z",
        "every", "before", "I run every Tuesday and Thursday", "none"),
    Cue("Saturdays", r"\A(?:s\b|\s+(?:mornings|afternoons|evenings|nights)\b)", "every", "after",
        "on Saturday mornings I read to kids", "none"),
    # "booked for Thursday", "a table for Saturday night", "the bake sale on Saturday" it was for, "by Friday"
    Cue("for", r"\b(?:for|by)\s+\Z|\bfor\s+(?:the|a|an|my|our|his|her|their)\s+(?:[a-z]+\s+){0,3}(?:on\s+)?\Z",
        "for_day", "before", "I booked a table for Thursday", "coming"),
    Cue("since", r"\b(?:since|from|after)\s+\Z", "since_day", "before", "I'm still sore from Wednesday", "last"),
    # "New Year's" is a festival's name, not a year
    Cue("2024", r"\d{4}|\d{2}年|[去今明前后]年|年[前后]|\b(?:last|this|next)\s+year\b|(?<!new )\byears?\b", "year",
        "expression", "去年圣诞节我们要了一桌菜", "keep"),
    Cue("上周五", r"[上下这本今前][个一]?(?:周|星期|礼拜|月)|\b(?:last|this|next|coming|past|previous)\b", "which",
        "expression", "下周五见", "keep"),
)

IMPLIES: dict[str, frozenset[str]] = {
    "past_aux": frozenset({"done", "past_form"}),
    "done": frozenset({"past_form"}),
}
"""A signal that says another too: "was" tells a thing done, and a thing done is in a past form."""
TENSE = frozenset({"done", "past_aux", "past_form", "gone", "future", "reminder", "committed", "present"})
"""The signals that give a clause a tense of its own (else it takes its sentence's)."""
