"""What the memory LLM writes for the diary (a tag per turn, a digest per closed day), and the
offline fallbacks used when no LLM is configured or it fails or answers with garbage."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from engine.adapters.llm import LLM
from engine.errors import LLMError
from engine.prompts import Prompts
from engine.stores.diary.entry import DiaryEntry
from engine.stores.diary.recall import recall_cue
from engine.timeparse.script import as_tables_read
from engine.tokens import truncate_tokens

log = logging.getLogger(__name__)

SMALL_TALK = {"zh": "日常闲聊", "en": "small talk"}
_MAX_TAG_CHARS = 24
_PREFIX = re.compile(r"^\s*(标签|话题|tag|topic|label)\s*[:：]\s*", re.IGNORECASE)
_QUOTES = "\"'`“”‘’「」『』《》【】[]()（）*#"
_GREETING = re.compile(
    r"^(你好|您好|嗨|哈喽|早上好|早安|晚安|午安|在吗|在不在|嗯+|哦+|好的?|哈+|谢谢|hi|hello|hey|"
    r"good (morning|night|evening|afternoon)|thanks?( you)?|ok(ay)?|bye|lol|haha)[呀啊哦哟呢吖嘛\s!！~～。.,，?？]*$",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[。！？!?；;\n，,]")


def small_talk(language: str) -> str:
    return SMALL_TALK.get(language, SMALL_TALK["en"])


def write_tag(user: str, assistant: str, *, llm: LLM | None, prompts: Prompts) -> tuple[str, str]:
    """(tag, source): the LLM's tag when it gives a usable one, else the offline fallback.
    source is "llm", "offline" (no LLM) or "fallback: <why>"."""
    if llm is None:
        return fallback_tag(user, language=prompts.language), "offline"
    prompt = prompts.render(
        "diary_tag",
        user_message=truncate_tokens(user, 400),
        assistant_message=truncate_tokens(assistant, 200),
        small_talk=small_talk(prompts.language),
    )
    try:
        reply = llm.complete([{"role": "user", "content": prompt}], max_tokens=30, temperature=0)
        return clean_tag(reply), "llm"
    except (LLMError, ValueError) as exc:
        log.warning("diary: tag from the memory LLM failed (%s); using the offline tag", exc)
        return fallback_tag(user, language=prompts.language), f"fallback: {exc}"


def clean_tag(reply: str) -> str:
    """The tag in an LLM reply; ValueError when the reply is not a short label."""
    lines = [ln for ln in reply.strip().splitlines() if ln.strip()]
    if not lines:
        raise ValueError("empty tag reply")
    tag = _PREFIX.sub("", lines[0]).strip().strip(_QUOTES).strip().rstrip("。.!！")
    if not tag or len(tag) > _MAX_TAG_CHARS or len(lines) > 2 or "{" in tag:
        raise ValueError(f"not a short tag: {reply[:60]!r}")
    return tag


def fallback_tag(user: str, *, language: str) -> str:
    """Offline tag from the user's message: small talk for greetings and recall questions, else
    the message's first clause, shortened."""
    text = " ".join(user.split())
    read = as_tables_read(text)  # the tables read Simplified Mandarin
    if not text or _GREETING.match(read) or recall_cue(read):
        return small_talk(language)
    clause = _CLAUSE_END.split(text, maxsplit=1)[0].strip() or text
    if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", clause):
        return clause[:16]
    words = clause.split()
    return " ".join(words[:6])[:_MAX_TAG_CHARS]


def write_digest(
    day: str, entries: Sequence[DiaryEntry], *, llm: LLM, prompts: Prompts, max_input_tokens: int = 3000
) -> str:
    """The memory LLM's digest of one day; raises LLMError (or ValueError for a useless reply)."""
    lines = [f"[{e.at:%H:%M}] {{{{user}}}}: {e.user} / {{{{char}}}}: {e.assistant}" for e in entries]
    turns = truncate_tokens("\n".join(lines), max_input_tokens)
    prompt = prompts.render("diary_digest", date=day, count=len(entries), turns=turns)
    reply = llm.complete([{"role": "user", "content": prompt}], max_tokens=200, temperature=0)
    text = " ".join(reply.split())
    if len(text) < 4:
        raise ValueError(f"digest reply too short: {reply!r}")
    return truncate_tokens(text, 160)


def fallback_digest(tags: Sequence[str], *, language: str) -> str:
    """A digest from the day's tags alone (no file read, no LLM): the topics by frequency."""
    chit = small_talk(language)
    counts = Counter(tags)  # counted in C; the small talk and untagged turns taken out after
    n_chit = counts.pop(chit, 0) + counts.pop("", 0)
    topics = [t for t, _ in counts.most_common(8)]
    words = _FALLBACK_WORDS["zh" if language == "zh" else "en"]
    text = words.turns.format(n=len(tags))
    if topics:
        text += words.topics + words.joiner.join(topics)
    if n_chit:
        text += words.small_talk.format(n=n_chit)
    return text


class _DigestWords(NamedTuple):
    turns: str
    topics: str
    joiner: str
    small_talk: str


_FALLBACK_WORDS = {
    "zh": _DigestWords("共 {n} 轮", "；聊到：", "、", "（{n} 轮日常闲聊）"),
    "en": _DigestWords("{n} turns", "; topics: ", ", ", " ({n} turns of small talk)"),
}
