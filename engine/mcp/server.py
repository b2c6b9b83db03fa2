"""kioku's MCP server: tools, resources and a prompt over the library's admin API.

    server = build_server(MemoryAccess(registry, caller=lambda ctx: Caller("linzhou")))
    server.run("stdio")                          # `kioku mcp`; `kioku serve` mounts it at /mcp

Tools: search_memory, recall, list_facts, add_fact, correct_fact, forget_fact, lookup_world_book,
preview_prompt. Resources: kioku://characters, a character's persona and world book, a user's
facts. Prompt: with_memory. Every answer is text for the model plus the same as structured
content; every question is one call of `orch.admin` or `orch.build_prompt` (the MCP layer keeps no
memory logic). Bad arguments are protocol errors (-32602) whose message names the argument; a
change on a read-only server is -32600 naming `service.allow_edit`.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from engine.admin import FactNotFoundError, FactTextError, StoreDisabledError, characters
from engine.errors import EngineError, InvalidIdError
from engine.mcp import results as out
from engine.mcp.access import ArgumentError, MemoryAccess, ReadOnlyError, Target
from engine.paths import redact_paths
from engine.persona import persona_text
from engine.prompts import render
from engine.timerange import TimeRangeError, named_range, parse_when

log = logging.getLogger(__name__)

INSTRUCTIONS = """kioku is the long-term memory of a role-play character: every past turn between the
user and the character (the diary), durable facts about the user, and the character's world book.
Ask it before answering anything about the past: search_memory for a topic ("the trip", "猫"),
recall for a time ("昨天", "last Tuesday", 2026-11-20). Correct what it keeps about the user with
correct_fact / forget_fact (earlier texts are kept in history). Times are in the character's zone."""

F = TypeVar("F", bound=Callable[..., Any])

CharacterArg = Annotated[str | None, Field(max_length=64, description=(
    "character id (a folder under data/agents/); default: the server's character"))]
UserArg = Annotated[str | None, Field(max_length=64, description=(
    "user id; default: the user this connection belongs to"))]
NowArg = Annotated[str | None, Field(max_length=40, description=(
    "ISO time to answer at, for replays and tests (default: now)"))]
TimeArg = Annotated[str, Field(min_length=1, max_length=200, description=(
    "a time expression ('昨天', '上周二', 'last weekend') or an ISO date / interval "
    "('2026-11-20', '2026-11-18/2026-11-20')"))]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
EDIT = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def build_server(access: MemoryAccess, *, name: str = "kioku") -> MCPServer:
    """The server with every tool, resource and prompt, answering through `access`."""
    server = _quietly(lambda: MCPServer(name, title="kioku memory", instructions=INSTRUCTIONS, version=_version()))
    Tools(access).register(server)
    _resources(server, access)
    _prompts(server, access)
    return server


class Tools:
    """The tools, as methods: each settles its target through `access`, asks the admin API once
    and renders the typed result."""

    def __init__(self, access: MemoryAccess) -> None:
        self.access = access

    def register(self, server: MCPServer) -> None:
        for method, hints in (
            (self.search_memory, READ), (self.recall, READ), (self.list_facts, READ), (self.add_fact, EDIT),
            (self.correct_fact, EDIT), (self.forget_fact, EDIT.model_copy(update={"destructive_hint": True})),
            (self.lookup_world_book, READ), (self.preview_prompt, READ),
        ):
            server.add_tool(_protocol_errors(method, self.access), name=method.__name__, annotations=hints)

    def search_memory(
        self, query: Annotated[str, Field(min_length=1, max_length=2000, description="words or a question")],
        ctx: Context,
        time: Annotated[str | None, Field(max_length=200, description=(
            "only this time: a time expression ('昨天', 'last weekend') or an ISO date / interval"))] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="at most this many diary turns")] = 10,
        character: CharacterArg = None, user: UserArg = None, now: NowArg = None,
    ) -> Annotated[CallToolResult, out.SearchOut]:
        """Search the memory of the user and the character: every past turn (by words and by
        meaning), the facts kept about the user and the world book. Each hit has its time and why
        it matched. Give `time` to search only a period."""
        t = self._target(ctx, character, user)
        at = _now(t, now)
        when = named_range(time, t.orch.tz, now=at, past=True) if time else None
        found = t.orch.admin.search_memory(t.user, query, start=when.start if when else None,
                                           end=when.end if when else None, k=limit, now=at)
        found = replace(found, diagnostics=tuple(self._public(d) for d in found.diagnostics))
        return _answer(out.search_text(query, found, when, _names(t)), out.search_out(query, found, when))

    def recall(
        self, time: TimeArg, ctx: Context,
        limit: Annotated[int, Field(ge=1, le=200, description="at most this many turns (or days of digests)")] = 50,
        character: CharacterArg = None, user: UserArg = None, now: NowArg = None,
    ) -> Annotated[CallToolResult, out.RecallOut]:
        """What the user and the character talked about in a period ("what did we talk about last
        Tuesday"): that period's turns, or one digest per day when it holds many turns."""
        t = self._target(ctx, character, user)
        when = named_range(time, t.orch.tz, now=_now(t, now), past=True)
        found = t.orch.admin.recall(t.user, when.start, when.end, limit=limit)
        return _answer(out.recall_text(found, when, _names(t)), out.recall_out(found, when))

    def list_facts(
        self, ctx: Context,
        include_forgotten: Annotated[bool, Field(description="also facts that were forgotten (kept for history)")] = False,
        character: CharacterArg = None, user: UserArg = None,
    ) -> Annotated[CallToolResult, out.FactsOut]:
        """The durable facts kept about the user, with their ids (for correct_fact / forget_fact)
        and earlier texts."""
        t = self._target(ctx, character, user)
        facts = t.orch.admin.facts.list(t.user, include_deleted=include_forgotten)
        return _answer(out.facts_text(t.user, facts), out.FactsOut(user=t.user, facts=[out.fact_out(f) for f in facts]))

    def add_fact(
        self, text: Annotated[str, Field(min_length=1, max_length=1000, description="the fact, e.g. 讨厌吃香菜")],
        ctx: Context, character: CharacterArg = None, user: UserArg = None,
    ) -> Annotated[CallToolResult, out.FactChangeOut]:
        """Keep a new durable fact about the user (an equal fact already kept is returned instead).
        Needs a server that may change memory."""
        t = self._target(ctx, character, user, edit=True)
        change = out.added_out(t.orch.admin.facts.add(t.user, text))
        log.info("mcp: %s/%s fact %s %s", t.character, t.user, change.fact.id, change.change)
        return _answer(out.fact_change_text(change), change)

    def correct_fact(
        self, fact_id: Annotated[str, Field(min_length=1, max_length=64, description="from list_facts")],
        text: Annotated[str, Field(min_length=1, max_length=1000, description="the corrected fact")],
        ctx: Context, character: CharacterArg = None, user: UserArg = None,
    ) -> Annotated[CallToolResult, out.FactChangeOut]:
        """Replace a fact's text; the old text stays in the fact's history. Needs a server that may
        change memory."""
        t = self._target(ctx, character, user, edit=True)
        change = out.fact_change_out("corrected", t.orch.admin.facts.edit(t.user, fact_id, text))
        log.info("mcp: %s/%s fact %s corrected", t.character, t.user, fact_id)
        return _answer(out.fact_change_text(change), change)

    def forget_fact(
        self, fact_id: Annotated[str, Field(min_length=1, max_length=64, description="from list_facts")],
        ctx: Context, character: CharacterArg = None, user: UserArg = None,
    ) -> Annotated[CallToolResult, out.FactChangeOut]:
        """Forget a fact: it no longer reaches any prompt, and stays in the file, marked deleted, for
        its history. Needs a server that may change memory."""
        t = self._target(ctx, character, user, edit=True)
        change = out.fact_change_out("forgotten", t.orch.admin.facts.delete(t.user, fact_id))
        log.info("mcp: %s/%s fact %s forgotten", t.character, t.user, fact_id)
        return _answer(out.fact_change_text(change), change)

    def lookup_world_book(
        self, text: Annotated[str, Field(min_length=1, max_length=4000, description="a message or any text")],
        character: CharacterArg = None, now: NowArg = None,
    ) -> Annotated[CallToolResult, out.WorldBookOut]:
        """The character's world-book (lore) entries a text brings up, and why each fired."""
        _, orch = self.access.character(character)
        at = parse_when(now, orch.tz, argument="now") if now else None
        result = orch.admin.try_world_book(text, now=at)
        result = replace(result, diagnostics=tuple(self._public(d) for d in result.diagnostics))
        return _answer(out.world_book_text(text, result), out.world_book_out(text, result))

    def preview_prompt(
        self, message: Annotated[str, Field(min_length=1, max_length=8000, description="the user's next message")],
        ctx: Context, character: CharacterArg = None, user: UserArg = None, now: NowArg = None,
    ) -> Annotated[CallToolResult, out.PromptOut]:
        """The prompt kioku would build for the user's next message: the messages, every memory hit
        with its store, score and why it fired. Nothing is recorded."""
        from engine.show import format_result

        t = self._target(ctx, character, user)
        result = t.orch.build_prompt(message, user_id=t.user, now=_now(t, now))
        result = replace(result, diagnostics=tuple(self._public(d) for d in result.diagnostics))
        return _answer(format_result(result), out.prompt_out(result))

    def _target(self, ctx: Context, character: str | None, user: str | None, *, edit: bool = False) -> Target:
        if edit:
            self.access.require_edit()
        return self.access.target(ctx, character=character, user=user)

    def _public(self, text: str) -> str:
        return redact_paths(text, data_dir=self.access.data_dir)


def _resources(server: MCPServer, access: MemoryAccess) -> None:
    @server.resource("kioku://characters", name="characters", mime_type="application/json",
                     description="Every character: id, display name, language, time zone")
    def list_characters() -> str:
        return _json([{"id": c.id, "name": c.name, "language": c.language, "timezone": c.timezone}
                      for c in characters(access.characters.config)])

    @server.resource("kioku://characters/{character}/persona", name="persona", mime_type="text/plain",
                     description="A character's persona as kioku puts it into every prompt")
    @_protocol(access)
    def persona(character: str) -> str:
        _, orch = access.character(character)
        text = persona_text(orch.character, orch.prompts)
        return render(text, user=orch.character.user_name, char=orch.character.name)

    @server.resource("kioku://characters/{character}/world-book", name="world-book", mime_type="application/json",
                     description="A character's world-book entries: keys, content, file and line")
    @_protocol(access)
    def world_book(character: str) -> str:
        _, orch = access.character(character)
        view = orch.admin.world_book()
        return _json({"entries": [{"id": e.id, "file": e.file, "line": e.line, "keys": list(e.keys),
                                   "secondary_keys": list(e.secondary_keys), "logic": e.logic, "content": e.content,
                                   "constant": e.constant, "enabled": e.enabled} for e in view.entries],
                      "problems": [redact_paths(f"{p.file}:{p.line}: {p.message}", data_dir=access.data_dir)
                                   for p in view.status.errors]})

    @server.resource("kioku://characters/{character}/users/{user}/facts", name="facts", mime_type="application/json",
                     description="The durable facts a character keeps about a user")
    @_protocol(access)
    def facts(character: str, user: str, ctx: Context) -> str:
        t = access.target(ctx, character=character, user=user)
        listed = t.orch.admin.facts.list(t.user)
        return out.FactsOut(user=t.user, facts=[out.fact_out(f) for f in listed]).model_dump_json(indent=2)


def _prompts(server: MCPServer, access: MemoryAccess) -> None:
    @server.prompt(name="with_memory", title="Answer with kioku's memory",
                   description="A user message wrapped with what the character remembers that bears on it "
                               "(persona, world book, facts, diary, summary, current time)")
    @_protocol(access)
    def with_memory(message: str, ctx: Context, character: str | None = None, user: str | None = None) -> list[dict]:
        t = access.target(ctx, character=character, user=user)
        result = t.orch.build_prompt(message, user_id=t.user)
        memory = "\n\n".join(m["content"] for m in result.messages if m["role"] == "system")
        return [{"role": "user", "content": f"<memory>\n{memory}\n</memory>\n\n{message}"}]


# -- answers and errors --------------------------------------------------------------------------


def _answer(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured.model_dump(mode="json"))


def _protocol_errors(fn: F, access: MemoryAccess) -> F:
    """`fn` with the library's errors turned into protocol errors: the client's mistakes are
    -32602 naming the argument, a change on a read-only server -32600, the server's own faults
    -32603 (unexpected ones with a reference to the logged traceback, never a path)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MCPError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure answers as a protocol error
            raise protocol_error(exc, access) from None

    return call  # type: ignore[return-value]


def _protocol(access: MemoryAccess) -> Callable[[F], F]:
    """`_protocol_errors` as a decorator (resources and the prompt)."""
    return lambda fn: _protocol_errors(fn, access)


def protocol_error(exc: Exception, access: MemoryAccess) -> MCPError:
    """The protocol's error for an exception a tool, resource or prompt raised."""
    if isinstance(exc, (ArgumentError, TimeRangeError)):
        return _invalid(exc.argument, str(exc))
    if isinstance(exc, FactNotFoundError):
        return _invalid("fact_id", f"{exc} (list_facts shows the ids)")
    if isinstance(exc, FactTextError):
        return _invalid("text", str(exc))
    if isinstance(exc, InvalidIdError):
        return MCPError(INVALID_PARAMS, str(exc))
    if isinstance(exc, ReadOnlyError):
        return MCPError(INVALID_REQUEST, str(exc), {"reason": "read_only", "setting": "service.allow_edit"})
    if isinstance(exc, StoreDisabledError):
        return MCPError(INVALID_REQUEST, str(exc), {"reason": "store_disabled"})
    if isinstance(exc, EngineError):
        log.warning("mcp: %s: %s", type(exc).__name__, exc)
        return MCPError(INTERNAL_ERROR, redact_paths(f"{type(exc).__name__}: {exc}", data_dir=access.data_dir))
    ref = secrets.token_hex(4)
    log.error("mcp: unexpected error (ref %s)", ref, exc_info=exc)
    return MCPError(INTERNAL_ERROR, f"internal error ({type(exc).__name__}); the server log has the details under ref {ref}")


def _invalid(argument: str, message: str) -> MCPError:
    text = message if message.startswith(argument) else f"{argument}: {message}"
    return MCPError(INVALID_PARAMS, text, {"argument": argument})


# -- small helpers -------------------------------------------------------------------------------


def _now(t: Target, now: str | None) -> datetime:
    return parse_when(now, t.orch.tz, argument="now") if now else datetime.now(t.orch.tz)


def _names(t: Target) -> out.Names:
    return out.Names(user=t.orch.character.user_name, char=t.orch.character.name, tz=t.orch.tz)


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kioku")
    except PackageNotFoundError:
        return "0"


def _quietly(build: Callable[[], MCPServer]) -> MCPServer:
    """Build the server without the SDK configuring the host's logging: `MCPServer()` calls
    `logging.basicConfig` (a handler on the root logger, level INFO), which a library must not do
    to `kioku serve` or to an application embedding it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return build()
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)


__all__ = ["INSTRUCTIONS", "Tools", "build_server", "protocol_error"]
