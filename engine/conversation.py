"""Reconcile the history a chat client sends with the turns the engine has stored.

Frontends keep their own copy of a chat and send it with every request; they also regenerate a
reply, continue one, edit an earlier message or branch. `plan_turn` decides, from the client's
messages and the turns stored in the same chat's window, what the new request is:

| kind | the client's messages | what is recorded |
|---|---|---|
| new | its history ends with the last stored turn (or it sends no history) | a new turn |
| regenerate | the same user message as the last stored turn, whose reply the client dropped | replaces that turn |
| edit | its history is the stored chat before the last turn, the message differs | replaces the last turn |
| continue | it ends with a partial assistant reply to its last user message | replaces that turn when it is the stored one, with the reply appended |
| branch | its history matches none of that | a new turn; the window follows the client |

Replacing deletes a stored turn, so it is taken only on evidence (`_backs`): the client's history
must show the stored chat up to the replaced turn, exchange for exchange, as far as both reach,
and at least one exchange of it. Two chats that begin alike, or a frontend that sends every chat
under one chat id, look like a regenerate by the last message alone; they are branches, and
nothing is deleted. A turn that may be the one replaced but could not be confirmed is still kept
out of the prompt (`TurnPlan.exclude`): the reply being swiped away is never fed back to the model
as a memory.

The window of the prompt is the client's history when it sent one, so an edited or branched chat
is what the character sees; a client that sends only its new message gets the stored window.
Pure: no I/O; texts are compared without white space (frontends re-space what they join).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
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
    exclude: frozenset[str] = frozenset()
    """Stored turns kept out of this prompt: the one replaced, and one that may be (a reply the
    client may be swiping away, when the evidence did not allow replacing it)."""


STORED_TURNS = 64
"""How many of the chat's last stored turns the planner compares with the client's history."""


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
    """What to do with `client` given the chat's stored turns (oldest first, up to STORED_TURNS).

    `chat_known`: the client named its chat. Then a history-less request that repeats the chat's
    only turn is a regenerate of the first message; without a chat id, a client that sends only
    its new message is taken to rely on the engine's window, and repeating a message is just that."""
    last = stored[-1] if stored else None
    earlier = stored[:-1]
    history = client.history or None
    repeats = last is not None and _same(last.user, client.message)
    maybe = frozenset({last.id}) if repeats and last is not None else frozenset()

    if client.prefix:
        if repeats and last is not None and _backs(client.history, earlier):
            return TurnPlan("continue", client.message, client.history, last.id, client.prefix, maybe)
        return TurnPlan("continue", client.message, client.history, None, client.prefix, maybe)
    if last is None:
        return TurnPlan("new", client.message, history, None, "")
    exchanges = _exchanges(client.history)
    if exchanges and _same_turn(exchanges[-1], last):
        return TurnPlan("new", client.message, history, None, "")
    if not client.history:
        if chat_known and not earlier and repeats:
            return TurnPlan("regenerate", client.message, (), last.id, "", maybe)
        return TurnPlan("new", client.message, None, None, "")
    if _backs(client.history, earlier):
        if repeats:
            return TurnPlan("regenerate", client.message, client.history, last.id, "", maybe)
        return TurnPlan("edit", client.message, client.history, last.id, "", frozenset({last.id}))
    return TurnPlan("branch", client.message, client.history, None, "", maybe)


def _backs(history: Sequence[Message], earlier: Sequence[StoredTurn]) -> bool:
    """Whether the client's history shows the stored turns before a replaced one: its exchanges
    and those turns agree, aligned at their ends, over all that both hold (the client may hold
    more: a greeting, turns the window let go; or fewer: it cut its context), and they share one
    exchange at least. A chat stored with no turn before the replaced one has nothing to show."""
    exchanges = _exchanges(history)
    n = min(len(exchanges), len(earlier))
    if n == 0:
        return False
    return all(_same_turn(pair, turn) for pair, turn in zip(exchanges[-n:], earlier[-n:]))


def _exchanges(history: Sequence[Message]) -> list[tuple[str, str]]:
    """(user, reply) for each assistant message that answers the user message just before it."""
    return [(history[i - 1]["content"], m["content"]) for i, m in enumerate(history)
            if i and m["role"] == "assistant" and history[i - 1]["role"] == "user"]


def normalize(text: str) -> str:
    """A text as compared: reasoning blocks dropped, no white space (a frontend joins a continued
    reply with a space, re-wraps lines or trims them; the words are the same)."""
    return "".join(_THINK.sub("", text).split())


def _same(a: str, b: str) -> bool:
    return normalize(a) == normalize(b)


def _same_turn(pair: tuple[str, str], turn: StoredTurn) -> bool:
    if not _same(pair[0], turn.user):
        return False
    mine, theirs = normalize(pair[1]), normalize(turn.assistant)
    if mine == theirs or (len(mine) >= _SAME_REPLY_PREFIX and mine[:_SAME_REPLY_PREFIX] == theirs[:_SAME_REPLY_PREFIX]):
        return True
    short, long = sorted((mine, theirs), key=len)
    return len(short) >= 8 and 2 * len(short) >= len(long) and long.startswith(short)


MAX_BRANCHES = 200
"""Most windows one chat id is split into (a frontend that sends all its chats under one id)."""


@dataclass(frozen=True)
class ChatChoice:
    """Which stored window a client's conversation is (`choose_chat`)."""

    chat_id: str
    matched: int
    """How many of the client's last exchanges that window holds (0: a new window)."""
    stored: tuple[StoredTurn, ...] = ()
    """That window's stored turns, oldest first, as `load` read them (what `plan_turn` compares)."""
    exclude: frozenset[str] = frozenset()
    """Turns of other windows that may be the one this request replaces (a chat's first reply
    swiped, where the first message alone cannot tell a swipe from a new chat): kept out of the
    prompt, never deleted."""


def branch_id(chat_id: str, n: int) -> str:
    """The id of the n-th window (n >= 1) that conversations under `chat_id` are split into."""
    return f"{chat_id}~{n}"


def choose_chat(client: ClientTurn, chat_id: str, load: Callable[[str], Sequence[StoredTurn]], *,
                max_branches: int = MAX_BRANCHES) -> ChatChoice:
    """The window of `chat_id` (the named chat, or the default) that the client's conversation
    continues, regenerates or edits, or a new one when none does. A frontend that sends every chat
    under one id (SillyTavern's headers are one setting per connection) gets one window per chat:
    the stored windows are `chat_id`, `chat_id~1`, `chat_id~2`, ... (`load` reads one's turns,
    oldest first; the first empty one ends them), and a conversation is found again by its content.

    A client that sends no history relies on the named window: `chat_id` itself."""
    if not client.history:
        return ChatChoice(chat_id, 0, tuple(load(chat_id)))
    exchanges = _exchanges(client.history)
    best: ChatChoice | None = None
    first_free: str | None = None
    same_start: set[str] = set()
    for n in range(max_branches + 1):
        candidate = chat_id if n == 0 else branch_id(chat_id, n)
        stored = load(candidate)
        if not stored:
            first_free = candidate
            break
        held = max(_aligned(exchanges, stored), _aligned(exchanges, stored[:-1]))
        if held and (best is None or held > best.matched):
            best = ChatChoice(candidate, held, tuple(stored))
        if _same(stored[0].user, client.message):
            same_start.add(stored[0].id)
    if best is not None:
        return best
    if first_free is None:
        first_free = branch_id(chat_id, max_branches)  # all taken: the last one takes the overflow
    # A new window. With no exchange yet, a chat that began with the same message may be the one
    # whose first reply is being swiped: its first turn stays out of this prompt.
    return ChatChoice(first_free, 0, (), frozenset(same_start) if not exchanges else frozenset())


def _aligned(exchanges: Sequence[tuple[str, str]], stored: Sequence[StoredTurn]) -> int:
    """How many exchanges the client's and the stored chat share, aligned at their ends (0 when
    their last ones differ)."""
    n = 0
    for pair, turn in zip(reversed(exchanges), reversed(stored)):
        if not _same_turn(pair, turn):
            break
        n += 1
    return n
