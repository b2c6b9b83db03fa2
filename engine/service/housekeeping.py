"""Is a chat request a turn of the conversation, or a frontend's housekeeping?

Chat frontends send extra completions to the same model: titles, tags, follow-up suggestions,
search queries, summaries, impersonation. Those must neither get memory nor be recorded. The
decision, first match wins:

1. the explicit override: header `X-Kioku-Request` or `metadata.kioku_request`, `conversation` or
   `housekeeping`;
2. `service.housekeeping_patterns` (regexes, searched in the last user message, the last message
   and every system message);
3. the known shapes of popular frontends (`RULES`, from their default prompts: Open WebUI's
   `### Task:` prompts, tool selection, emoji and mixture-of-agents; SillyTavern's summary,
   impersonation and expression prompts; LibreChat's titles and summary; LobeChat's topic, summary,
   emoji, query-rewrite, agent-meta and translate chains; NextChat's topic and summary; Hugging Face
   chat-ui's and Jan's titles; query rewriting into a standalone question, however it is asked;
   LangChain's and RisuAI's memory chains; mem0's fact prompts; Khoj's; and a prompt that casts
   the model as a tool: "You are an AI suggestion generator", 你是一个问题优化大师);
4. the shape of SillyTavern's quiet prompts: an instruction (system message) sent after an
   assistant reply that already answered the last user message asks for something about the chat,
   not for the next turn (a "continue" nudge excepted);
5. the shape every frontend's title, tag, summary and follow-up prompt shares, for frontends not
   listed above (`_about_the_chat`): one sentence asks for such an artefact *of the conversation*
   (or of the user's message), and the message constrains the output the way only a program
   reading it does ("5 words or less", "only return the title", "no quotes", "JSON", "10个字以内",
   "不要标点"). A person asking "summarize our chat from last week" gives no such constraint, and
   one asking for a title of their novel names no conversation;
   5b. without such a constraint, two shapes a person does not use (`_TASK_RULES`): a system
   prompt giving the model a tool's task ("You are an assistant that generates short chat titles",
   "You are tasked with summarizing…", "You are a memory subroutine"), or the conversation handed
   over as material ("Describe the above conversation…", "Extend this summary … the new messages
   above", "Generate a title for this prompt:"); "summarize our conversation" is a person's;
6. a template's slot (`_ends_in_slot`): the last message ends in the label of what the model is to
   write ("New summary:", "Standalone task:", "独立问题:", a lone "Output:"), or in a short label
   after a filled one of the template's; a person's "我跟你说：" or list ending in "你觉得：" is none;
7. a connection check (`_is_probe`): one short user message ("Hi", "test", "你好") with no system
   prompt and no history, not streamed, as SillyTavern's "Test Message" and other frontends' API
   checks send it. A chat frontend streams its turns and sends a persona or history with them;
   a bare client that wants such a message recorded says so with the override;
8. otherwise a conversation turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from engine.errors import ConfigError
from engine.service.errors import ServiceError
from engine.tokens import count_tokens

REQUEST_HEADER = "X-Kioku-Request"
METADATA_KEY = "kioku_request"
Kind = Literal["conversation", "housekeeping"]


@dataclass(frozen=True)
class Decision:
    kind: Kind
    reason: str
    """Which rule decided, in ASCII (it travels in the X-Kioku-Request-Reason response header)."""

    @property
    def housekeeping(self) -> bool:
        return self.kind == "housekeeping"


@dataclass(frozen=True)
class Rule:
    name: str
    where: Literal["last_user", "system", "any"]
    """last_user: the last user message; system: any system/developer message; any: those and the last message."""
    pattern: re.Pattern[str]


def _rule(name: str, where: Literal["last_user", "system", "any"], *alternatives: str) -> Rule:
    return Rule(name, where, re.compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE | re.DOTALL))


# Each is a phrase of the frontend's default prompt that a person chatting would not type.
RULES: tuple[Rule, ...] = (
    _rule("open-webui task prompt", "last_user", r"\A\s*###\s*Task:"),
    _rule("open-webui tool selection", "system", r"\A\s*Available Tools:.*tool_calls"),
    _rule("open-webui emoji", "last_user", r"reflect the speaker's likely facial expression through a fitting emoji"),
    _rule("open-webui mixture of agents", "last_user",
          r"provided with a set of responses from various models to the latest user query"),
    _rule("librechat title", "any", r"5-word-or-less title for the conversation",
          r"Analyze this conversation and provide:\s*1\.\s*The detected language",
          r"concise title \(max 40 characters\) for a conversation that starts with",
          r"Write a concise title for this conversation"),
    _rule("lobechat chain", "system", r"\A\s*You are a professional conversation summarizer",
          r"\A\s*你是一名擅长会话的助理，你需要将用户的会话总结为",
          r"good at extracting key takeaways from conversations and summarizing them",
          r"\A\s*You are an emoji expert who selects", r"rephrase the follow up question to be a standalone question"),
    _rule("nextchat topic", "last_user", r"Please generate a four to five word title summarizing our conversation",
          r"使用四到五个字直接返回这句话的简要主题"),
    _rule("nextchat summary", "system",
          r"Summarize (?:the|our) discussion briefly in \d+ (?:words|characters) or less to use as a prompt for future context",
          r"简要总结一下对话内容，用作后续的上下文提示"),
    _rule("sillytavern summary", "any", r"Summarize the most important facts and events (?:in the story|that have happened)",
          r"\[Pause your roleplay"),
    _rule("sillytavern impersonation", "any", r"\[Write your next reply from the point of view of"),
    _rule("sillytavern expression", "any", r"Classify the emotion of the last message"),
    _rule("open-webui 0.3 search query", "last_user",
          r"Assess the need for a web search based on the current question and prior interactions"),
    _rule("librechat summary", "any", r"Summarize the conversation by integrating new lines into the current summary"),
    _rule("lobechat agent meta", "system", r"\A\s*你是一名擅长(?:会话标签总结|起名)的",
          r"\A\s*You are a professional translator\. Translate the input text to"),
    _rule("query rewrite", "any",
          r"(?:rephrase|rewrite|reformulate|formulate|construct|condense)[^.\n]{0,80}\bstand-?alone (?:quer(?:y|ies)|questions?|task)",
          r"reformulated? to be understood without the chat history", r"作为一个向量检索助手",
          r"独立且语义完整的问题|不需要聊天历史就能理解"),
    _rule("fact extraction (mem0 prompt)", "any", r"\A\s*You are a Personal Information Organizer",
          r"\A\s*You are a smart memory manager which controls the memory of a system"),
    _rule("langchain memory", "any", r"Progressively summarize the lines of conversation provided",
          r"helping a human track knowledge triples", r"Extract all of the proper nouns from the last line of conversation",
          r"helping a human keep track of facts about relevant people, places, and concepts"),
    _rule("risuai memory", "any", r"\[Summarize the ongoing role story", r"session for summarizing a collaborative novel",
          r"Review past conversations and infer options for responses"),
    _rule("khoj", "any", r"\A\s*You are Khoj, an? (?:extremely smart and helpful|advanced)"),
    # A tool's role, not a character's: "You are an AI suggestion generator", "a title generator
    # assistant", "an AI question rephraser", 你是一个问题优化大师
    _rule("a tool's role", "any",
          r"\A\s*(?:#+\s*Role\s*)?You are an? [^.\n]{0,60}\b(?:title|summary|suggestion|tags?|keywords?|quer(?:y|ies)|"
          r"questions?|search|text) (?:generator|extractor|rephraser|rewriter|summari[sz]er|classifier|optimi[sz]er|analy[sz]er)\b",
          r"\A\s*你是一?[个名位]?[^。\n]{0,20}(?:标题|摘要|总结|问题优化|关键词|检索词|搜索词)(?:生成|提取|优化)?(?:大师|专家|助手|助理)"),
    _rule("hugging face chat-ui title", "system", r"\A\s*You are a summarization AI\. Summarize the user's request"),
    _rule("jan title", "last_user", r"\A\s*Summarize in a \d+-word Title\b"),
)

# Rule 5: in one sentence, a request (an imperative verb: "generate", "summarize", "title this",
# 生成, 起, 总结为) for an artefact ("title", "tags", "follow-up questions", 标题, 标签) of the
# conversation or the user's message; and somewhere in the message, an output constraint of the
# kind only a program reading the answer sets. The verb must stand where a command starts (a
# clause's start, after "please" / "to" / "and"), so a persona's "your name is Mia and you love to
# chat" asks for nothing.
def _words(alternatives: str) -> str:
    """English alternatives as whole words (a Chinese neighbour counts as a boundary)."""
    return rf"(?<![a-z])(?:{alternatives})(?![a-z])"


_REQUEST = re.compile(
    r"(?:^|[,:;，：；]|\bplease|\bto|\band|\bwith|\bfor|\bthat|\bme|\bwill|\bshould|(?:^|\n)\s*-)\s*"
    + _words(r"generat(?:e|es|ing)|creat(?:e|es|ing)|writ(?:e|es|ing)|give|giving|provid(?:e|es|ing)|"
             r"produc(?:e|es|ing)|suggest(?:s|ing)?|pick|choose|select|summari[sz](?:e|es|ing)|extract(?:s|ing)?|"
             r"find|craft|title|name|label|tag|classify|categori[sz]e|identify|determine|come up with|make|"
             r"output|return|list|what is|what's|what (?:would|could|should|might) be|which|predict|rephrase|rewrite|"
             r"tell(?: me)?|formulate|reformulate")
    + r"|生成|起一?个|取一?个|拟一?个|给出|提供|提取|总结|概括|归纳|命名|打上|列出|是什么",
    re.IGNORECASE)
_ARTEFACT = re.compile(
    _words(r"titles?|headlines?|names?|topics?|subjects?|tags?|keywords?|categor(?:y|ies)|labels?|"
           r"summar(?:y|ies|ize|ise)|follow[- ]?ups?|(?:search|web|standalone) quer(?:y|ies)|emojis?|checkpoint|"
           r"(?:quick[- ]?)?(?:reply|replies|suggestions?)|standalone (?:questions?|task)|"
           r"questions? (?:that )?(?:the )?(?:user|human) (?:might|may|could|would|will|is likely to) ask")
    + r"|标题|题目|主题|话题|名字|名称|标签|关键[词字]|摘要|总结|概括|后续问题|追问|搜索词|检索词|表情",
    re.IGNORECASE)
_OF_CHAT = re.compile(
    _words(r"conversations?|chats?|chat history|dialog(?:ue)?s?|discussion|exchange|thread|"
           r"(?:user|human)'?s?\s+(?:first\s+|initial\s+|last\s+|latest\s+)?(?:message|query|question|request|input|prompt)|"
           r"(?:first|initial)\s+(?:user\s+)?(?:message|question|query)|"
           # the material handed over: "the previous query", "the following message", "so far"
           # ("the message my boss sent" names none: a qualifier must say it is the one handed over)
           r"the\s+(?:prompt|query)|(?:the|this)\s+(?:previous|following|above|given|last|latest)\s+(?:(?:assistant|ai)\s+)?"
           r"(?:prompt|query|message|response|reply)|everything so far|messages above|(?:this|the) session|"
           r"prompts and responses|the user is (?:asking|trying)|"
           r"(?:user|human) (?:might|may|could|would|will|is likely to) ask")
    + r"|对话|会话|聊天|这句话|这段话|用户的?(?:问题|消息|提问|输入|请求)|上述内容|以上内容|历史记录|原问题",
    re.IGNORECASE)
_FOR_A_PROGRAM = re.compile(
    _words(r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty)[- ](?:words?|characters?|"
           r"chars|tokens|emojis?)|(?:max(?:imum)?(?: of)?|at most|no more than|under|(?:fewer|less|shorter) than|"
           r"up to)\s+\d+|(?:only|just)\s+(?:return|reply|respond|output|give|provide|write|answer|include)|"
           r"(?:return|reply|respond|output|answer)\s+only|nothing else|anything (?:else|except)|"
           r"no (?:other|additional|extra) (?:text|words|explanation|commentary)|(?:any )?extra text|"
           r"do(?: not|n'?t) include|(?:in|follows?|using) the following format|"
           r"without (?:any )?(?:quotes|quotation|punctuation|explanation|commentary|preamble|lead-in|additional text)|"
           r"(?:reply|respond|answer)\s+with\s+(?:just|only)|json|do(?: not|n'?t) (?:answer|respond to|explain|reply to)|"
           r"not more than \d+|do(?: not|n'?t) use (?:quotes|quotation|colons|punctuation)|"
           r"(?:inside|within|between|wrapped in|in)\s+(?:the\s+)?<\w+>")
    + r"|\b(?:reply|respond|answer)\s+with\b[^.\n]{0,40}\bonly\b"
    + r"|\d+\s*个?(?:字|词|汉字|字符)(?:以内|之内)|不超过\s*\d+|(?:只|仅|直接)(?:需要?)?(?:返回|输出|回复|给出)"
    + r"|不要(?:包含|带|加|有|使用)?(?:任何)?(?:解释|标点|引号|语气词|多余|其他)|<\w+>[^\n]{0,12}标签",
    re.IGNORECASE)
_SENTENCES = re.compile(r"[.!?;。！？；\n]+")


def _about_the_chat(text: str) -> bool:
    if not _FOR_A_PROGRAM.search(text):
        return False
    return any(_REQUEST.search(s) and _ARTEFACT.search(s) and _OF_CHAT.search(s) for s in _SENTENCES.split(text))


# Rule 5b, the same request without a program's output constraint, in a shape a person does not use:
# a system prompt that gives the model a tool's task, or the conversation handed over as material.
_TASK_RULES = (
    # A tool's role told as what it does: "You are an assistant that generates short chat titles",
    # "You are tasked with summarizing the following conversation", "You are a memory subroutine".
    _rule("a tool's task", "any",
          r"\A\s*You are an? [^.\n]{0,50}?\b(?:that|which) (?:generates?|creates?|writes?|produces?|summari[sz]es?|"
          r"extracts?)\s+(?:[\w-]+\s+){0,3}?(?:titles?|summar(?:y|ies)|tags|keywords|memories|facts|follow[- ]?ups?)\b",
          r"\A\s*You are tasked with (?:summari[sz]ing|extracting|generating|creating|writing)\b",
          r"\A\s*You are an? memory (?:subroutine|manager|extractor|module)\b"),
    # The conversation handed over as material, named the way a program names it ("the above
    # conversation", "the conversation provided", "the new messages above"; a person says "our
    # chat"), with a request to describe, summarise or title it.
    _rule("the conversation handed over", "last_user",
          r"(?:^|[.:!?]\s+|\n)\s*(?:please\s+)?(?:describe|summari[sz]e|create a summary of|write a summary of|"
          r"extend this summary|generate a title for|give a title to)\b[^.\n]{0,60}?\b(?:the (?:above|following|provided|"
          r"given|previous) (?:conversation|chat|dialog(?:ue)?|messages|prompt)|(?:conversation|chat|dialog(?:ue)?|messages|"
          r"prompt) (?:above|below|provided)|this prompt|the new messages)\b"),
)


_CONTINUE = re.compile(r"\A\s*\[?\s*Continue (?:your last message|the (?:following message|response))", re.IGNORECASE)
_INSTRUCTION_ROLES = ("system", "developer")


def compile_patterns(patterns: Iterable[str]) -> tuple[Rule, ...]:
    """`service.housekeeping_patterns` as rules; a pattern that does not compile is a ConfigError naming it."""
    rules = []
    for i, text in enumerate(patterns):
        try:
            rules.append(Rule(f"config pattern {i + 1}", "any", re.compile(text, re.IGNORECASE | re.DOTALL)))
        except re.error as exc:
            raise ConfigError(f"service.housekeeping_patterns[{i}]: {text!r} is not a valid regex: {exc}") from None
    return tuple(rules)


def classify(messages: Sequence[tuple[str, str]], *, override: str | None = None,
             rules: Sequence[Rule] = (), streamed: bool = True) -> Decision:
    """Decide for `messages` as (role, text) pairs, oldest first. `rules` are the configured patterns
    (tried before the built-in RULES); `override` is the explicit value from the header or metadata;
    `streamed`: the client asked for the answer as a stream."""
    if override is not None:
        kind = override.strip().lower()
        if kind not in ("conversation", "housekeeping"):
            raise ServiceError(400, f"{REQUEST_HEADER} / metadata.{METADATA_KEY} must be 'conversation' or "
                               f"'housekeeping' (got {override!r})", code="bad_request_kind")
        return Decision(kind, "explicit")  # type: ignore[arg-type]
    texts = _texts(messages)
    known = _first_match((*rules, *RULES), texts)
    if known is not None:
        return Decision("housekeeping", known.name)
    if _instruction_after_answer(messages):
        return Decision("housekeeping", "instruction after an answered turn (quiet prompt)")
    if any(_about_the_chat(t) for t in _instruction_texts(messages)):
        return Decision("housekeeping", "asks for a title, tags or summary of the chat, for a program")
    task = _first_match(_TASK_RULES, texts)
    if task is not None:
        return Decision("housekeeping", task.name)
    if messages and messages[-1][0] != "assistant" and _ends_in_slot(messages[-1][1]):
        return Decision("housekeeping", "ends in a slot for the model to fill (a template)")
    if not streamed and _is_probe(messages):
        return Decision("housekeeping", "connection check (one short message, no persona, no history)")
    return Decision("conversation", "conversation turn")


PROBE_MAX_TOKENS = 4
"""A greeting or a word ("Hi", "test", "Hello there!", "你好呀"); "我叫阿丽" already says something."""


def _is_probe(messages: Sequence[tuple[str, str]]) -> bool:
    """Rule 7: a lone short user message, nothing else with text."""
    said = [(role, text.strip()) for role, text in messages if text.strip()]
    if len(said) != 1 or said[0][0] != "user":
        return False
    return count_tokens(said[0][1]) <= PROBE_MAX_TOKENS


# Rule 6, a template's slot. Summary, rewrite and extraction chains end their prompt with the label
# of what the model is to write ("New summary:", "Standalone question:", "独立问题:", "Output:"); a
# person's message that ends in a colon introduces what they say next on the same line or one line
# ("我跟你说：").
_SLOT_WORDS = re.compile(
    r"(?:new |concise |standalone |final )?(?:output|summary|answer|response|result|titles?|tags?|keywords?|"
    r"quer(?:y|ies)|questions?|task)(?: in \S+)?|输出|摘要|总结|标题|回答|结果|关键词|检索词|独立问题",
    re.IGNORECASE)
_LABEL = re.compile(r"\A([^:：]{1,40})[:：](.*)\Z")


def _short_label(label: str) -> bool:
    """At most four words, or twelve characters unspaced."""
    label = label.strip()
    return 0 < len(label) <= 40 and len(label.split()) <= 4 and (" " in label or len(label) <= 12)


def _ends_in_slot(text: str) -> bool:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines or not lines[-1].endswith((":", "：")):
        return False
    label = lines[-1][:-1].strip()
    if _SLOT_WORDS.fullmatch(label):
        return True
    # Or a short label after a filled one of the template's ("Keywords: …", "新问题: …"); a person's
    # list ending in "你觉得：" has none.
    if not _short_label(label):
        return False
    for line in lines[:-1]:
        m = _LABEL.match(line)
        if m and _short_label(m.group(1)) and m.group(2).strip():
            return True
    return False


def _first_match(rules: Iterable[Rule], texts: dict[str, list[str]]) -> Rule | None:
    """The first rule whose pattern is found in the texts it reads (`_texts`)."""
    return next((rule for rule in rules if any(rule.pattern.search(t) for t in texts[rule.where])), None)


def _texts(messages: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    last_user = next((text for role, text in reversed(messages) if role == "user"), None)
    system = [text for role, text in messages if role in _INSTRUCTION_ROLES]
    users = [last_user] if last_user is not None else []
    last = [messages[-1][1]] if messages else []
    return {"last_user": users, "system": system, "any": users + system + last}


def _instruction_texts(messages: Sequence[tuple[str, str]]) -> list[str]:
    """Where rule 5 looks: the last user message, the last message, and a system message only in a
    one-shot request (no assistant turn: an instruction and its material). A persona's system
    prompt rides on every conversation turn and may say anything about the conversation."""
    texts = _texts(messages)
    out = (texts["last_user"] + [messages[-1][1]]) if messages else []
    if not any(role == "assistant" for role, _ in messages):
        out += texts["system"]
    return list(dict.fromkeys(out))  # the last message is usually the last user message: read once


def _instruction_after_answer(messages: Sequence[tuple[str, str]]) -> bool:
    spoken = [(role, text) for role, text in messages if text.strip()]
    if not spoken or spoken[-1][0] not in _INSTRUCTION_ROLES or _CONTINUE.search(spoken[-1][1]):
        return False
    last_user = max((i for i, (role, _) in enumerate(spoken) if role == "user"), default=None)
    if last_user is None:
        return False
    return any(role == "assistant" for role, _ in spoken[last_user + 1:])
