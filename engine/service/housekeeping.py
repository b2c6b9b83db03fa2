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
   impersonation and expression prompts; LibreChat's titles; LobeChat's topic, summary, emoji and
   query-rewrite chains; NextChat's topic and summary);
4. the shape of SillyTavern's quiet prompts: an instruction (system message) sent after an
   assistant reply that already answered the last user message asks for something about the chat,
   not for the next turn (a "continue" nudge excepted);
5. otherwise a conversation turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from engine.errors import ConfigError
from engine.service.errors import ServiceError

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
             rules: Sequence[Rule] = ()) -> Decision:
    """Decide for `messages` as (role, text) pairs, oldest first. `rules` are the configured patterns
    (tried before the built-in RULES); `override` is the explicit value from the header or metadata."""
    if override is not None:
        kind = override.strip().lower()
        if kind not in ("conversation", "housekeeping"):
            raise ServiceError(400, f"{REQUEST_HEADER} / metadata.{METADATA_KEY} must be 'conversation' or "
                               f"'housekeeping' (got {override!r})", code="bad_request_kind")
        return Decision(kind, "explicit")  # type: ignore[arg-type]
    texts = _texts(messages)
    for rule in (*rules, *RULES):
        if any(rule.pattern.search(t) for t in texts[rule.where]):
            return Decision("housekeeping", rule.name)
    if _instruction_after_answer(messages):
        return Decision("housekeeping", "instruction after an answered turn (quiet prompt)")
    return Decision("conversation", "conversation turn")


def _texts(messages: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    last_user = next((text for role, text in reversed(messages) if role == "user"), None)
    system = [text for role, text in messages if role in _INSTRUCTION_ROLES]
    users = [last_user] if last_user is not None else []
    last = [messages[-1][1]] if messages else []
    return {"last_user": users, "system": system, "any": users + system + last}


def _instruction_after_answer(messages: Sequence[tuple[str, str]]) -> bool:
    spoken = [(role, text) for role, text in messages if text.strip()]
    if not spoken or spoken[-1][0] not in _INSTRUCTION_ROLES or _CONTINUE.search(spoken[-1][1]):
        return False
    last_user = max((i for i, (role, _) in enumerate(spoken) if role == "user"), default=None)
    if last_user is None:
        return False
    return any(role == "assistant" for role, _ in spoken[last_user + 1:])
