"""Reconcile the history a chat client sends with the turns the engine has stored.

Frontends keep their own copy of a chat and send it with every request; they also regenerate a
reply, continue one, edit an earlier message or branch. `plan_turn` decides, from the client's
messages and the last stored turns of the same chat, what the new request is:

| kind | the client's messages | what is recorded |
|---|---|---|
| new | its history ends with the last stored turn (or it sends no history) | a new turn |
| regenerate | the same user message as the last stored turn, whose reply the client dropped | replaces that turn |
| edit | its history ends with the turn before the last stored one, the message differs | replaces the last turn |
| continue | it ends with a partial assistant reply to its last user message | replaces that turn when it is the stored one, with the reply appended |
| branch | its history matches none of that | a new turn; the window follows the client |

The window of the prompt is the client's history when it sent one, so an edited or branched chat
is what the character sees; a client that sends only its new message gets the stored window.
Pure: no I/O; texts are compared with whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Message = dict[str, str]
Kind = Literal["new", "regenerate", "edit", "continue", "branch"]

_SAME_REPLY_PREFIX = 32
"""Replies match when equal, when their first this-many characters are, or when one starts the other
and is most of it (a frontend may trim the end of a reply it shows, e.g. an incomplete sentence)."""
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True)
class StoredTurn:
    """One stored turn of the chat, as `MemoryOrchestrator.recent_turns` reports it."""

    id: str
    user: str
    assistant: str


@dataclass(frozen=True)
class ClientTurn:
    """What the client's messages say, reduced to the conversation (system and tool messages dropped)."""

    message: str
    """The user message this request answers."""
    history: tuple[Message, ...]
    """The user and assistant messages before it, oldest first."""
    prefix: str = ""
    """A partial assistant reply after the message, to be continued ('' when none)."""


@dataclass(frozen=True)
class TurnPlan:
    kind: Kind
    message: str
    history: tuple[Message, ...] | None
    """The conversation window for the prompt; None: use the stored window of the chat."""
    replaces: str | None
    """The id of the stored turn this one replaces (regenerate, edit, continue), else None."""
    prefix: str
    """Prepend to the upstream's reply when recording (a continued reply), else ''."""


def read_client(messages: Sequence[tuple[str, str]]) -> ClientTurn | None:
    """The conversation in `messages` as (role, text) pairs, oldest first; None when it has no user message."""
    spoken = [(role, text) for role, text in messages if role in ("user", "assistant") and text.strip()]
    last_user = max((i for i, (role, _) in enumerate(spoken) if role == "user"), default=None)
    if last_user is None:
        return None
    after = [text for role, text in spoken[last_user + 1:] if role == "assistant"]
    history = tuple({"role": role, "content": text} for role, text in spoken[:last_user])
    return ClientTurn(message=spoken[last_user][1].strip(), history=history, prefix="".join(after))


def plan_turn(client: ClientTurn, stored: Sequence[StoredTurn], *, chat_known: bool) -> TurnPlan:
    """What to do with `client` given the chat's last stored turns (oldest first, usually two).

    `chat_known`: the client named its chat. Then a history-less request that repeats the chat's
    only turn is a regenerate of the first message; without a chat id, a client that sends only
    its new message is taken to rely on the engine's window, and repeating a message is just that."""
    last = stored[-1] if stored else None
    before = stored[-2] if len(stored) >= 2 else None
    tail = _tail(client.history)
    history = client.history or None

    if client.prefix:
        replaces = last.id if last is not None and _same(last.user, client.message) else None
        return TurnPlan("continue", client.message, client.history, replaces, client.prefix)
    if last is None:
        return TurnPlan("new", client.message, history, None, "")
    if tail is not None and _same_turn(tail, last):
        return TurnPlan("new", client.message, history, None, "")
    if not client.history:
        if chat_known and len(stored) == 1 and _same(last.user, client.message):
            return TurnPlan("regenerate", client.message, (), last.id, "")
        return TurnPlan("new", client.message, None, None, "")
    if _same(last.user, client.message):
        return TurnPlan("regenerate", client.message, client.history, last.id, "")
    if tail is not None and before is not None and _same_turn(tail, before):
        return TurnPlan("edit", client.message, client.history, last.id, "")
    return TurnPlan("branch", client.message, client.history, None, "")


def _tail(history: Sequence[Message]) -> tuple[str, str] | None:
    if len(history) >= 2 and history[-2]["role"] == "user" and history[-1]["role"] == "assistant":
        return history[-2]["content"], history[-1]["content"]
    return None


def _norm(text: str) -> str:
    return " ".join(_THINK.sub("", text).split())


def _same(a: str, b: str) -> bool:
    return _norm(a) == _norm(b)


def _same_turn(pair: tuple[str, str], turn: StoredTurn) -> bool:
    if not _same(pair[0], turn.user):
        return False
    mine, theirs = _norm(pair[1]), _norm(turn.assistant)
    if mine == theirs or (len(mine) >= _SAME_REPLY_PREFIX and mine[:_SAME_REPLY_PREFIX] == theirs[:_SAME_REPLY_PREFIX]):
        return True
    short, long = sorted((mine, theirs), key=len)
    return len(short) >= 8 and 2 * len(short) >= len(long) and long.startswith(short)
