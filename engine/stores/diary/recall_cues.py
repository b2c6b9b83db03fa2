"""The cues of the recall decision (`recall.py`), as data: which words ask to recall, which make a
question, what names our talk, what asks about now instead. Each table says what it matches and
why its exceptions are there; the decision that combines them is in `recall.py`. Their rates are
measured by tests/test_diary_recall.py over the blind sets in tests/data/diary_*.txt and, end to
end, by `bench/bench_time_e2e.py --templates bench/time_probe/setN.json`.
"""

from __future__ import annotations

import re

# A memory verb: enough on its own, given a past range.
ZH_MEMORY = re.compile(
    # 忘了 only before what was forgotten is asked ("我忘了昨天聊的啥"); "我昨天忘了带钥匙" is a statement
    # 我记得 / "I remember" state a memory ("我记得去年这时候还在为高考发愁"); a question or request
    # about it has its own cue (来着, 说过, "what was it")
    r"(?<!人)(?<!都不)(?<!也不)(?<!我)(?<!我还)(?<!我也)(?<!一直)(?<!明明)(?<!始终)(?<!永远)(?<!谁)(?<!谁还)"
    # someone else remembering ("她居然还记得我") is told, not asked
    r"(?<![他她它])(?<![他她它]还)(?<!居然还)(?<!竟然还)(?<![他她它]居然还)(?<![他她它]竟然还)记得|记不记得|"
    r"(想|记)不起来[^，。！？,.!?]{0,6}(了)?[^，。！？,.!?]{0,3}$|(聊|谈|说|讲|决定|定|选)的(是)?(什么|啥|哪些|哪个)(?=[啊呀呢吧嘛来着？?，,。！!\s]|$)|"
    r"我(为啥|为什么|怎么|咋)(会)?(说|讲|提)|"
    # forgetting as a habit or a mishap ("我总是忘了…", "我又忘了昨天把钥匙放哪了") is a complaint
    r"(?<!总是)(?<!老是)(?<!经常)(?<!又)忘(了|记了?)[^，。！？,.!?]{0,12}(什么|啥|哪|谁|多少|名字)|回忆|回想|你[^，。！？,.!?]{0,4}想起来|想起来(了)?[吗没]|"
    r"(聊|谈|说|讲|提|问|告诉|讨论|商量|研究|跟你说|和你说|对你说)(了|过|到)?(些)?(什么|啥|哪些|哪里|哪儿|哪(?=了)|些啥|几件|多少)|"
    r"(聊|谈|讲|提|告诉|问|讨论|商量)过|跟你说过|和你说过|对你说过|说过|提到过|"
    r"我(是不是|有没有)(跟你|和你|对你)?(说|讲|提)(?!错|漏|多|重|得|太)|"
    # 我们 / 咱们 as who talked, not "our" (我们老板突然说): only adverbs and times before the verb
    r"(我们|咱们|咱俩|我俩)(俩|两个)?(之前|以前|上次|那天|那次|昨天|前天|上周|刚才|刚刚|之间)?(都|也|还|又|一起|曾经|就)?(聊|谈|说|讲)|"
    r"咱.{0,4}(聊|谈)|"
    r"发生了什么|发生过什么|(都|还)?干了(些)?(什么|啥)|都做了(些)?(什么|啥)|(什么|啥|哪|谁|几|多少|咋|怎么|怎样)[^，。！？,.!?]{0,4}来着|"
    r"(接着|继续)[^，。！？,.!?]{0,8}(聊|话题)|(^|[，。！？,.!?\s]|你|请)(接着|继续)(讲|说)(?![了服明过])|再(聊聊|说说|讲讲)|那个话题|"
    r"(跟|和|对|给)你(说|讲|提|聊|吐槽|抱怨|倾诉|推荐)(的|过)"
)
# 记得 opening a clause that asks nothing is a reminder of something to do, as "remember to" is
# ("记得明天早点叫我起床，上星期五我睡过头了", "下次记得带伞"): unless its clause names the past day
# ("记得昨天我说的那本书，…"), its memory word asks nothing of the past. Matched at a clause's start
# (the leading \W* passes a role-play action, blanked by `recall._unquoted`: "*揉眼睛* 一定记得…").
ZH_REMINDER = re.compile(r"\W*(?:下次|一定|千万|务必|要|请|你要)?记得(?![^，。！？,.!?；;]*(?:吗|么|嘛|没|啥|谁|哪|几|多少|来着|[?？]))")
# A question about what I / we did: subject, a past marker, then a question word.
# I / we as who did it: not after 你说 / 你觉得 (asking an opinion: "你说我是不是上火了"), 问 (someone
# asked me), 是 (是我太小气了吗) or 猜 (news told as a riddle: "猜猜我上周碰见谁了").
_WE = r"(?<!你说)(?<!觉得)(?<!说明)(?<!证明)(?<!以为)(?<!感觉)(?<![问是想陪等怪猜])(?:我|我们|咱们|咱)"
ZH_PAST_QUESTION = re.compile(
    _WE + r"(?:[^，。！？,.!?]{0,10}(?<!忘)了|[^，。！？,.!?]{1,10}(?<![能会以得])过)[^，。！？,.!?]{0,8}"
    r"(什么|啥|哪|(?<![好十])几|谁|多少|怎么样|吗|么|没(?:有)?(?=[，。！？,.!?\s]|$)|呢|\?|？)"
    r"|" + _WE + r"[^，。！？,.!?]{0,6}(是不是|有没有)(?!该|要|应该|得)[^，。！？,.!?]{0,10}(了|过)"
    r"|" + _WE + r"[^，。！？,.!?]{0,6}(去了|吃了|买了|做了|看了|玩了)(哪|什么|啥|几)"
    r"|" + _WE + r"[^，。！？,.!?]{0,4}(去|吃|买|做|看|玩|干)(了)?(哪|什么|啥)[^，。！？,.!?]{0,3}了"
    r"|" + _WE + r"[^，。！？,.!?]{0,8}(去|吃|买|做|看|玩|干|喝|穿|见)的(是)?(哪|什么|啥|谁)"
)
EN_MEMORY = re.compile(
    # forgot / forget only with what was forgotten asked about ("I forgot what I told you"); "I
    # forgot my keys yesterday" is a statement
    r"\b((?<!\bi )(?<!\bwe )(?<!\bi still )(?<!\bi also )"
    # "I'll always remember …" states a memory; "… remind me of family love" is no request
    r"(?<!always )(?<!never )(?:(?<=you )remember|remember(?=[^.?!]*\b(?:i|me|my|we|us|our|you|your)\b))(?!\s+to\b)|recall"
    # "remember to …" / "remind me to …" ask for the future ("Remember to remind me to call mom tonight")
    r"|remind me(?! of\b)(?!\s+to\b)|reminding me (?=what|where|who|when|which|how|if|whether)|remind me of (the|that|those|what)\b[^.?!]{0,40}\b(you|i|we) (gave|told|said|suggested|recommended"
    r"|mentioned|shared|sent|showed|taught|promised)\b|"
    # "I'll never forget what happened" / "I won't forget what you said" is a statement
    r"(?<!always )(?<!often )(?<!again )(?<!never )(?<!won't )(forgot|forget|forgotten)\s+(what(?!\s+i\s+(even\s+)?(wanted|was going|meant|came))|where|who|when|which|whether|if|"
    r"how(?!\s+(much|many|to|good|fun|nice|great|hard|easy))|the name)|"
    r"(refresh|jog) my memory|(can'?t|cannot|can not|couldn'?t|don'?t) (remember|recall) (what|where|who|when|which|whether|if|the name)|"
    r"(?<!\bcan )(?<!\bcould )(?<!\bshall )(?<!\bshould )(?<!\bmay )(?<!\blet's )"
    r"\b(we|you and i|i and you|i|you)\s+(\w+\s+)?(talk|talked|chat|chatted|speak|spoke|discuss|discussed)\s+about|"
    # what we said, as a fragment that asks for it ("Everything we said last Tuesday. Go.")
    r"^\W*(everything|all|whatever) (we|i|you) (said|talked about|discussed|chatted about|told you|told me)\b|"
    r"\bwe\s+(had|have)\s+an?\s+(\w+\s+)?(chat|talk|conversation|discussion)\b|"
    r"did(n'?t| not)? (i|we) (ever |already |once )?(tell|say|mention|talk|chat|discuss|ask)|(have|haven'?t) (i|we) (told|said|mentioned)|"
    r"(i|we) (told|said(?![^.?!]*\bto (?:my|his|her|their|the|a|an|him|them)\b)|mentioned|talked|chatted|discussed)\b.*\?|"
    r"(i|we) (told|said|mentioned)\b[^.!?]*[,.;]\s*(what|where|who|when|how|which)(\s+(one|exactly|again))?\s+(was|is|were|did)\s+"
    r"(it|they|that|this|the|its|their|his|her|you)\b|"
    r"\bwhat (i|we) (told|said|mentioned|talked|discussed|chatted|talk|discuss|chat|decided|concluded|agreed|settled|figured out|worked out)\b|\bwhat (i|we) (was|were) (talking|chatting|saying|discussing)\b|"
    r"what (have|had) (i|we)\b|what was (i|it i|it we)|what were we|"
    r"(continue|pick up|resume)\b[^.?!]{0,30}\b(topic|conversation|discussion|chat)|where (we|i) (left off|stopped|ended)\b|let'?s continue|"
    r"\b(what|which) (topics?|things?|stuff|subjects?)\b[^.?!]{0,20}\bcame up\b|"
    # "what was the issue again", "who was that again": asked to be told once more (not "why did it
    # break again", a thing that happened twice)
    r"(what|which|who|where|when|how)\b[^.?!,;]{0,12}?\b(?:was|were|did|had)\b[^.?!,;]{0,40}\bagain\s*(?=[?.!]|$)|"
    r"let'?s (get|go) back to|(get|go|come) back to (our|what|that|the (topic|conversation|discussion|debate|chat|story))|"
    r"back to \w+'s (topic|conversation|discussion|debate|chat|story))\b",
    re.IGNORECASE,
)
EN_PAST_QUESTION = re.compile(
    r"\b(what|where|when|who|which|how (much|many|long)|how)\b[^.?!]{0,30}\b(did|was|were|had)\s+(i|we)\b"
    r"|\b(what|which)\b[^.?!]{0,20}\bdid you (say|tell me|recommend|suggest|mention|promise|send|show)\b"
    r"|\b(know|tell me|wonder) what (i|we) (did|ate|said|bought|watched|told you|had|went)\b"
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
_ZH_VERBS = r"(?:说说|讲讲|总结|回顾|复盘|概括|梳理|盘点|列出|列举|复述|捋|理一?下|理理)(?![了的过着])"
_ZH_VERBS_FOR = r"(?:整理|汇总|归纳)(?![了的过着])"
ZH_REQUEST = re.compile(
    r"(?:^|[。！？!?；;\n]\s*|给我|跟我|和我|帮我|请|麻烦[你您]?|[你您])" + _ZH_VERBS
    + r"|(?:给我|帮我|请[你您]?|麻烦[你您]?)" + _ZH_VERBS_FOR
    + r"|(?:^|[。！？!?；;，,\s]|给我|帮我|请|麻烦[你您]?|[你您]?(?:能不能|可不可以|可以|能))把[^。！？!?；;，,让叫]{1,24}?(?:" + _ZH_VERBS + "|" + _ZH_VERBS_FOR
    + r")(?:一下|下|成|为|出?来)"
)
_GO_OVER_VERBS = (
    "summari[sz]e", "recap", "replay", "recount", "retell", "pull together", "list", "describe", "review", "go over",
    "go through", "walk me through", "run me through", "take me through", "talk me through", "fill me in on",
)
"""Verbs that by themselves ask to go over the past, as they open a sentence (`EN_REQUEST`); with our
talk named, any verb of `_TELL_ME_VERBS` does (`ASKING`)."""
EN_REQUEST = re.compile(
    r"(?:^|[.!?;\-–—]\s+|(?<=,)\s*(?=(?:summari[sz]e|recap)\b)|\b(?:please|now|so|ok|okay|hey|and|just|then"
    r"|bro|dude|yo|man|babe|mate|buddy|sis)[,!]?\s+)"
    r"(?:" + "|".join(_GO_OVER_VERBS)
    + r"|give me (?:a |an |the )?(?:quick |short |brief )?(?:recap|summary|rundown|overview|highlights|gist|main points|bullet points"
    r"|key points|takeaways))\b"
    r"|\btell me (?:again |once more )?(?:about|what|how|everything|all|more about)\b"
    r"|\b(?:can|could|would|will) (?:you|u) (?:please |pls )?(?:summari[sz]e|recap|sum\b|go over|walk me through|list|describe)"
    # asked politely or as a wish, of our talk ("Would you mind summarizing our chat", "Could you give
    # me a quick recap of our conversation", "I'd love a rundown of what we said"), not of a text
    # ("could you write a summary of this article")
    r"|\b(?:(?:can|could|would|will) (?:you|u)|would you mind|(?:i'?d|i would) (?:like|love)|i (?:want|need)|can i (?:get|have))"
    r"\b[^.?!]{0,25}?\b(?:summari[sz](?:e|ing)|recap(?:ping)?|summary|rundown|run-down|overview|going (?:back )?over|go (?:back )?over)\b"
    r"[^.?!]{0,12}?\b(?:(?:our|the|that|this) (?:chats?|conversations?|convos?|talks?|discussions?|topics|things)|what (?:we|i|you)\b"
    r"|everything we)",
    re.IGNORECASE,
)
# A recap of nothing named ("I'd love a refresher."): of our talk when the message speaks of it ("I
# feel like we covered a lot on Monday… I'd love a refresher."), not of "the game last night".
RECAP_WISH = re.compile(
    r"\b(?:(?:i'?d|i would) (?:like|love)|can i (?:get|have)|give me|i need|i could use|(?:can|could|would) (?:you|u) give me)"
    r" (?:a |an )?(?:quick |short |brief |little )?(?:refresher|recap|rundown|run-down|summary|overview)\s*(?=[.!?~]|$)",
    re.IGNORECASE,
)
WE_TALKED = re.compile(r"\bwe (covered|went over|went through|talked|chatted|discussed|spoke)\b", re.IGNORECASE)


# A question: a question mark, or an interrogative word. Only asked together with a past range.
# 啥 / 什么 before 也 / 都 + 没 / 不 is "anything" ("啥也没买", "什么都不想做"); 你猜怎么着 is a
# storyteller's aside.
ZH_QUESTION = re.compile(
    r"[?？]|吗|(?<!没)(?<!没有)(什么|啥)(?![也都][没不])|哪(?!儿?[都也][没不]|里[都也][没不])|谁|(?<![前这那好十])几[点号月天个次]|怎么(?!着)|怎样|为什么|为啥|多少|是否"
    r"|有没有|是不是|如何|(?<![没不])(?<!不知道[该要能去])(?<!知道)干嘛|咋(?![舌呼])"
)
# What someone asked me, reported ("面试官问我为什么离职"): the question word is theirs.
ZH_INDIRECT = re.compile(r"问(我|他|她|过我)(为什么|为啥|怎么|什么|哪|谁|几)"
                          r"|(不知道|不清楚|不明白|搞不懂|想不通|不确定|没想好|想不出|没决定|忘了|忘记了?|记不清|不记得)[^，。！？,.!?]{0,8}?(为什么|为啥|怎么|什么|哪|谁|几|多少|是不是)")
ZH_FINAL_NE = re.compile(r"呢\s*$")
ZH_STILL = re.compile(r"着呢\s*$|[还可真][^，。！？,.!?]*呢\s*$")
EN_QUESTION = re.compile(
    # after up to three interjections ("wait what was…", "um so what did…", "oh hey, where…")
    r"\?|^\s*(?:(?:so|and|ok|okay|well|hey|hi|but|then|wait|um+|uh+|oh|ah|hmm+|yo|btw|also|sorry|anyway|oops|lol)\b[,.!]*\s+){0,3}"
    r"(?:(what(?!\s+an?\b)|whats|wheres|whos|when|where|who|whom|whose|which|why|how|any idea)\b"
    # an auxiliary opens a question only before its subject ("Had the worst date of my life" is not);
    # have / had before my / your / our is the verb ("had my exam on the 18th, i think i did ok??")
    r"|(did|do|does|was|were|is|are|can|could|didn'?t|don'?t|wasn'?t|weren'?t)"
    r"\s+(i|you|we|he|she|they|it|that|this|there|my|your|our)\b"
    r"|(have|had|haven'?t|hadn'?t)\s+(i|you|we|he|she|they|it|that|this|there)\b)"
    # or a question put after a clause ("yesterday you recommended a show, whats it called")
    r"|[,;.:\-–—]\s*(?:what|where|who|which)\s+(?:was|were|did)\s+(?:it|that|this|they|he|she|the|his|her|your|my|our)\b"
    r"|[,;.:\-–—]\s*(?:what|which)(?:'?s|\s+is)\s+(?:it|that|this|the\s+\w+)\s+(?:called|named|again)\b",
    re.IGNORECASE,
)


# Something one of us told the other, in a question or a request ("what was the place I mentioned
# this morning", "今天早上你给我推荐的歌是哪首", "上星期我说的健身计划帮我看看"): about the
# conversation even with no other cue. In a statement it is not: "你推荐的那家店昨天我去了" and "the
# book you recommended last week was great" are about the visit and the book, "上周我讲的课" a lecture.
TOLD = re.compile(r"\b(i|we) (told you|said(?![^.?!]*\bto (?:my|his|her|their|the|a|an|him|them)\b)|mentioned|recommended|suggested)\b"
                   r"|\byou (said|told me|mentioned|recommended|suggested|gave me|sent me|showed me|taught me|promised"
                   r"|helped me|(started |were )?(telling|explaining|describing))\b"
                   # what you made or promised for me ("你帮我起的昵称", "你给我写的诗", 你答应过我),
                   # asking to hear it again ("can you repeat the list?")
                   r"|你[^，。！？,.!?我]{0,6}?(给|帮)我[^，。！？,.!?]{1,3}的|[你您](给|告诉|教)(了|过)我|[你您][^，。！？,.!?我]{0,8}?给(出)?(我)?的(具体|详细|那些|那个|那条)?(建议|推荐|意见|方法|办法|答案|回答|说法|主意)|你[^，。！？,.!?]{0,6}?(答应|承诺|保证)(过)?我"
                   r"|\b(can|could|would) you (please )?repeat\b|(^|[.!?,;—–-]\s*)(please )?repeat\b"
                   r"|你[^，。！？,.!?]{0,6}?(推荐|介绍|说|讲|发)(给)?我的|你(有没有|是不是)?给(了|过)(我)?|你(有没有|是不是)给(过)?我|你(纠正|指出|批评|夸|表扬|提醒|鼓励|安慰)(了|过)我|你[^，。！？,.!?]{0,4}?(让|叫)我[^，。！？,.!?]{1,4}?的|\bdid you (give|send|tell|show|recommend|suggest|promise) me\b|\bdid you (suggest|recommend|promise|mention)\b"
                   r"|[你您](当时|那时|是)?(怎么|咋|如何)[^，。！？,.!?]{0,4}?(说|讲|劝|回答|建议|安慰|评价|鼓励|看)(我)?的|原话"
                   r"|你[^，。！？,.!?]{0,8}?我的(那些|那句|那番)?话|\b(the |your )?(exact )?words (you|i) (used|said)\b"
                   r"|我[上下昨前今那这之以刚才周天月号日早晚午年星期礼拜一二三四五六七八九十0-9]{0,6}?(说|讲|提到|聊到|(发|传)给你)的|(?<![把])你[^，。！？,.!?我有]{0,6}?(给我|跟我|和我|对我|帮我)?(说|讲|提到|推荐|建议|介绍)的", re.IGNORECASE)
# Our talk itself, named in the clause that holds the past time ("上周你说我应该多运动，具体是怎么说的",
# "昨天我跟你说我几点的飞机", "On Wednesday I asked you a question about taxes, what did you
# answer?"): with a question or a request anywhere, the message asks about that talk. In a clause
# without the time, 你说 is also the idiom "what do you think" ("昨天降温了，你说我要不要穿秋裤？").
TALK = re.compile(
    r"我[^，。！？,.!?你]{0,6}?(跟|和|对|给|向)你(说|讲|提|聊|讨论|推荐|吐槽|抱怨|倾诉|商量)|我问(过)?你|你问(过)?我|"
    # a time or an adverb may stand between ("你上周说", "你之前也说"), not another person ("你们老板说")
    r"(?<![跟和对给向问把])你[上下昨前今那这之以刚才周天月号日早晚午年星期礼拜一二三四五六七八九十0-9还又也都曾经]{0,6}?"
    r"(是不是|有没有|不是)?(跟我|和我|对我|给我|向我)?(说|讲|提到|提(?=了|过|出)|推荐|建议|介绍|告诉我|回答|答应|劝|提醒|让我|叫我)"
    r"(?!为啥|为什么|是不是|怎么|要不要|会不会|该不该|咋|能不能|有没有|哪)"
    r"|你给(过)?我的|[你您](对|关于)[^，。！？,.!?]{1,10}的(看法|意见|态度|观点|建议)|(我们|咱们|咱俩|我俩)(一起|最后|最终|当时|后来)?(讨论|聊|谈|商量|交流|研究|决定|定|计划|规划|构思|头脑风暴)|的(聊天|对话|谈话|交流)|(我们|咱们|咱俩)的(故事|剧情)|(?<=[天晚周末号日上午下午一二三四五六])聊(到|起|了)?[^，。！？,.!?]{1,10}?(的时候|那会儿?)|(聊天|对话|谈话)的?(内容|记录|摘要|纪要|重点|总结)|双方的?(交流|沟通|对话|谈话|聊天)|(那场|那次|那段|那些|整段|全部的?|所有的?)(聊天|对话|谈话)(内容|记录)?|"
    r"\b(i|we) (told|asked|showed|sent|promised|gave) you\b|\byou (told|asked|showed|sent|gave|promised) me\b"
    r"|\b(i|we) (shared|vented|ranted|complained|confided|opened up)( \w+)? (with|to|in) you\b|\b(what|things?|stuff) we (covered|went over)\b"
    # a subject raised in our talk ("when I brought it up on Monday", "the topic you raised")
    r"|\b(i|we|you) (brought|bring) (\w+ ){0,2}up\b|\b(i|we|you) raised\b"
    # said to someone else ("I said something mean to my partner") is no talk of ours
    r"|\b(i|we) (said(?![^.?!]*\bto (?:my|his|her|their|the|a|an|him|them)\b)|mentioned|recommended|suggested|discussed)\b|\byou (said|mentioned|recommended|suggested|answered)\b"
    r"|\byou (\w+ly )?(warned|whispered|explained|advised|reminded|joked|admitted|agreed|insisted|described|replied"
    r"|responded|promised|proposed|predicted|pointed out|came up with|talked me (into|out of))\b"
    r"|\bwe (talked|chatted|spoke)\b"
    # our story or game, played together; what you did to my words; your view as it was then
    r"|\bour (story|role-?play|rp|game|adventure|campaign|quest|session)\b|\byou (\w+ed) (me|my)\b"
    r"|\b(was|were) your (take|opinion|view|advice|answer|suggestion|verdict|thoughts)\b"
    # work done together in our talk ("we brainstormed", "the ideas we threw around")
    r"|\bwe (brainstormed|planned|prioritized|prioritised|decided|agreed|figured out|worked out|came up with|threw around"
    r"|mapped out|settled on|narrowed down|listed|outlined|put together)\b"
    # our talk named as a thing ("sum up our talk on Monday", "the conversation we had yesterday");
    # not "we went over it in class yesterday"
    r"|\bour (\w+ ){0,2}(talks?|chats?|conversations?|convos?|discussions?|exchanges?|brainstorm|catch-?up|call)\b"
    r"|\b(the|that) (\w+ ){0,2}(talk|chat|conversation|convo|discussion) (we|i|you) had\b"
    r"|\bwe had an? (\w+ ){0,3}(talk|chat|conversation|convo|discussion|heart-to-heart)\b"
    r"|\b(full|whole|entire|complete) (talk|chat|conversation|convo|discussion)\b"
    r"|\b(everything|all|every topic|whatever) (we|i|you) (said|talked about|discussed|covered|went over|chatted about|got through|got into|hit)\b"
    r"|\byou (used|made up|wrote|composed|invented|laid out|put together|listed|outlined|drew up|mapped out|broke down)\b"
    # a speech act of yours named as a thing ("the recommendation you made on Monday")
    r"|\b(recommendations?|suggestions?|promises?|predictions?|points?|remarks?|comments?|arguments?|jokes?|offers?) (that )?you made\b"
    # as non-native writers say it ("we have chatted", "we was talking"), and talking to you
    r"|\bwe (have |had |were |was )(talked|chatted|spoke|talking|chatting|speaking)\b|\b(talking|chatting|speaking) (to|with) you\b",
    re.IGNORECASE,
)


_TELL_ME_VERBS = _GO_OVER_VERBS + (
    "tell", "give", "remind", "sum", "walk me", "run me", "take me", "fill me", "catch me", "provide", "share", "show",
    "repeat", "refresh", "jog", "explain", "outline", "rehash", "spell out", "break down", "lay out", "write out",
    "pull up", "send", "make me", "read me", "play back", "put together", "write up", "draft",
    "help me (?:catch up|recall|remember|go over|go through|review|recap|summari[sz]e|piece together)",
)
"""Verbs of an instruction to be told something, as they open a sentence ("help me" only with a verb
of going over the past: "Help me draft the letter" asks for something else)."""

ASKING = re.compile(
    r"(^|[，。！？,.!?；;\s]|你|能不能|可以)(帮我|给我|请|麻烦)|(帮我|给我)(看|想|回忆|找|查|说|讲|念|列|总结|整理|复述|再)"
    # what to do with it, in a word ("一句话概括", "划一下重点", "直接甩给我", "过一遍")
    r"|概括|摘要|纪要|重点|过一遍|列一下|列一遍|列出|烦请|劳烦|恳请|发我|甩给我|念给我|再发一次|说道说道|简单说|(?<!了)一下(吧|呗|呀|嘛|哈)?[\W～~]*$"
    r"|\b(can|could|may) i (have|get|see)\b|\b(i )?need (a|an|the|my|whatever)\b|\bi want (a|an|the|my)\b|\bgive us\b|\bhit me with\b"
    r"|再(说|讲)一(遍|次)|再[^，。！？,.!?]{0,3}一(遍|次|下)|(总结|概括|回顾|梳理|复述)一?下|复述|重复一下|还没(回答|回复|告诉我|说)|我(需要|想知道|想(看看|看一下|翻翻|回顾一下|找找|了解|问问))"
    r"|\b(can|could|would) (you|u)\b|\bplease\b|\bagain\b|\brepeat\b|\bi need (the|to know)\b"
    # a wish that is a request ("I'd like to go back over what we discussed", "我想了解一下…")
    r"|\b(i'?d|i would) (like|love) to\b|\bi (want|need) to (know|hear|see|go)\b|想了解"
    # a wish for a thing ("I'd love a refresher"), a politeness word, and an instruction: a verb that
    # asks to be told opening a sentence ("Sum up …", "Remind me of …", "Kindly provide …")
    r"|\b(i'?d|i would) (like|love|appreciate) (a|an|some|the)\b|\bkindly\b"
    # asked indirectly ("I was wondering if you could …")
    r"|\bi (was |am |'m )?wondering\b|\bi wonder\b|\b(if|whether) (you|u) (could|can|would|might)\b"
    r"|(^|[.!?;:,]\s*)((please|pls|just|ok|okay|so|now|hey|and|then|quickly|briefly)[,!]?\s+)*"
    r"(" + "|".join(_TELL_ME_VERBS) + r")\b",
    re.IGNORECASE,
)


# A question to the character about itself or the present, put after a clause that mentions a past
# day: "昨天吃的火锅，你喜欢吃辣吗？", "yesterday was rough, how are you?", "i cried at work yesterday,
# is that normal?". It asks nothing about that day. A blind set of 220 ordinary messages that mention
# a past time fired 14 % of the time on "a question + a past day" before this, mostly these.
ABOUT_NOW = re.compile(
    r"(?<![跟和对给向问])你(平时|平常|一般|喜欢|爱|觉得|认为|说|会|能|要|想|呢|吃过|看过|去过|玩过|听过|用过|知道|有没有|是不是|还好|最近|现在|今天)"
    r"|我(是不是|该不该|该|应该|要不要|能不能|会不会|可以|能(?!不))|今年|现在|今天|明天|以后|怎么办|咋办|咋整|好不好|行不行|对不对|正常吗"
    # what can still be done ("昨天朋友来我家玩了，周末还能带她去哪", "昨晚那场暴雨…，我能在你这躲躲吗")
    r"|还能"
    # how the character felt about what I did ("昨天是不是让你等久啦")
    r"|让你[^，。！？,.!?]{0,4}?(等|担心|失望|难过|生气|伤心|不开心|操心)"
    r"|\b(do|does|are|would|will|can|could|should|have) you\b|\bhow are you\b|\bhow('s|\s+is|\s+was)\s+your\b"
    r"|\bwhat('s|\s+is|\s+are)\s+your\b|\b(is|was|isn'?t) (it|that|this) (normal|ok|okay|bad|weird|fine|too|good|wrong|crazy|strange)\b"
    r"|\b(should|can|could|may) i\b|\bdo you think\b|\bwhat do you\b|\bany (tips|advice|ideas|suggestions)\b"
    r"|\b(tomorrow|tonight|this (coming )?weekend|next (week|weekend|month|year|time|(mon|tues|wednes|thurs|fri|satur|sun)day))\b"
    r"|\bdid you (hear|see|watch|know|catch|read|feel|sleep|have|miss|think|enjoy|dream|rest)\b|\bsleep well\b"
    r"|\b(was|is) it \w+ for you\b|谁家|哪有|哪家[^，。！？,.!?]{0,8}这么|谁还(记得|在乎|管)"
    # a greeting about the night ("昨晚睡得怎么样？", "你昨天睡得好吗？"), what the character noticed
    r"|睡得(怎么样|好吗|好不好|香吗|好么)|睡好了(吗|没)|你(感觉到|听说|看到|看见)了?(吗|没)"
    # the character's own day ("你昨天过得怎么样", "昨晚的球赛你看了吗", "你假期干嘛了", "你去年过年咋过的",
    # "what did you get up to yesterday", "what was yesterday like for you")
    r"|(?<![跟和对给向问把])你[^，。！？,.!?]{0,8}?(了吗|了没|过得|咋过|怎么过|是不是|干嘛|干啥|做什么|做啥|在干|会[^，。！？,.!?]{0,6}吗|有没有|想我|无聊)"
    # a storyteller's opener, news told as a riddle: "Guess what I did on Wednesday?", "你猜我昨天遇到谁了",
    # "Guess who passed their driving test on Tuesday? THIS GIRL.", "猜猜谁上周二考过驾照了？"
    r"|\bguess (what|who|where|how|which)\b|\bnever guess\b|你猜|猜猜|\bwhat did you (get up to|do)\b|\bwhat were you up to\b|\bwhat was \w+(?: \w+)? like for you\b|\bwhat was your \w+(?: \w+)? like\b"
    # a guess at a cause ("是不是昨晚喝水太多"), a rhetorical or general question ("Wasn't last
    # night's finale awful?", "What does that usually mean?"), why someone else did something
    r"|^\s*(是不是|会不会|难道)|\b(wasn'?t|isn'?t|weren'?t|aren'?t)\s+(it|that|this|the|last|those)\b"
    r"|\bwhat (does|do) (that|it|this)\b|\b(is|was|isn'?t|wasn'?t) (it|that|this|i) (\w+ )?(dumb|stupid|silly|rude|mean|"
    r"fair|wrong|right|selfish|weird)\b|\bof me to\b|为(什么|啥)[^，。！？,.!?]{0,8}(都|总|老)是|\bany (\w+ )?(recipes|recommendations|thoughts)\b"
    r"|\bwhy (did|does|do|would|is|was|were|are) (my|his|her|their|the|this|that|he|she|they|people|someone|every(one|body))\b",
    re.IGNORECASE,
)
# ... unless it points back at something of that day ("你知道它叫什么吗", "do you remember what it was
# called").
# A question about what to do next ("What should I read next?", "下一本看啥？"): beside what was told it
# asks nothing about the day it was told ("I finished the book you recommended on Monday. …").
WHAT_NEXT = re.compile(
    r"\bnext\b|\bnow what\b|\b(should|shall) (i|we)\b|\bany (\w+ )?(tips|ideas|advice|suggestions|recommendations)\b"
    r"|下一(本|部|首|个|步|集|家|站|次)|接下来|(该|要)(看|读|买|做|干|吃|去|听|玩)(啥|什么|哪)",
    re.IGNORECASE,
)
BACK_REFERENCE = re.compile(
    r"(它|那个|那本|那家|那部|那首|那件|那次|那天)[^，。！？,.!?]*?((?<![为干])(什么|啥)|哪|谁|叫|名字)"
    r"|\b(it|that|they|them|those)\b[^.?!]*\b(called|named|name)\b|\bwhat (was|were) (it|that|they|its|their)\b",
    re.IGNORECASE,
)
MY_DOING = re.compile(r"\s*(我|我们|咱们|咱)(?!该|应该|要(?!的)|是不是|能不能|会不会|可以|想|打算|准备)"
                       r"|\s*(i|we)\s+(\w+ed|did|was|were|had|went|ate|bought|saw|read|got|made|met|told|said|took|drank|paid)\b",
                       re.IGNORECASE)


# How chat spells the words the English cues are made of ("wat did u say abt…", "can u recap our convo").
CHAT_SPELLINGS = {
    "u": "you", "ya": "you", "ur": "your", "r": "are", "abt": "about", "bout": "about", "wat": "what", "wut": "what",
    "wht": "what", "waht": "what", "whta": "what", "convo": "conversation", "convos": "conversations",
    "rmb": "remember", "remeber": "remember", "rember": "remember", "remembr": "remember", "pls": "please",
    "plz": "please", "dont": "don't", "didnt": "didn't", "cant": "can't", "wanna": "want to", "sed": "said",
}
CHAT_WORD = re.compile(r"\b(" + "|".join(sorted(CHAT_SPELLINGS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
