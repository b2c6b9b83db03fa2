"""`POST /v1/chat/completions`: decide whether the request is a conversation turn, build the prompt
with memory, call the upstream LLM, relay its answer (plain or SSE), and record the turn once the
answer is complete. `GET /v1/models`: the characters, with their display names.

Per request: the character and upstream model (`selection`), the user and chat (`identity`),
conversation or housekeeping (`housekeeping`; housekeeping goes upstream as the client sent it,
without memory, and is never recorded), and for a conversation turn how it relates to the stored
chat (`engine.conversation`: new, regenerate, edit, continue, branch). The response headers say
what was decided; the `engine.service.requests` logger logs it (`kioku serve` shows it).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timezone
from functools import partial
from typing import Any

import openai
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from engine.config import LLMConfig
from engine.conversation import STORED_TURNS, StoredTurn, TurnPlan, choose_chat, plan_turn, read_client
from engine.orchestrator import MemoryOrchestrator, new_turn_id
from engine.service.errors import ServiceError
from engine.service.headers import encode_header_value, header_text
from engine.service.housekeeping import METADATA_KEY, REQUEST_HEADER, classify
from engine.service.identity import IDENTITY_HEADERS, Identity, Principal, resolve
from engine.service.models import ChatCompletionRequest, ErrorResponse, ModelCard, ModelList
from engine.service.selection import CHARACTER_HEADER, find_character, select
from engine.admin import create_character
from engine.paths import character_id_for
from engine.service.speakers import USER_NAME_HEADER, character_from, speakers

from engine.service.upstream import upstream_client, upstream_error

log = logging.getLogger(__name__)
requests_log = logging.getLogger("engine.service.requests")
"""One line per chat request: what was decided and what was recorded."""

router = APIRouter(tags=["openai"])

RESPONSE_HEADERS = ("X-Kioku-Character", "X-Kioku-User", "X-Kioku-User-Source", "X-Kioku-Chat", "X-Kioku-Request",
                    "X-Kioku-Request-Reason", "X-Kioku-Turn", "X-Kioku-Turn-Id", "X-Kioku-Replaces")
_SAMPLING = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty",
             "frequency_penalty", "stop", "seed")
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 403, 404, 413, 422, 429, 502, 503, 504)
}
Record = Callable[[str], Awaitable[None]]


def build_messages(orch_messages: list[dict[str, str]], body: ChatCompletionRequest, mode: str) -> list[dict[str, str]]:
    """The engine's prompt, plus the client's system text after the persona when configured."""
    if mode != "append":
        return orch_messages
    system = "\n\n".join(m.text() for m in body.messages if m.role in ("system", "developer") and m.text().strip())
    if not system:
        return orch_messages
    at = 1 if orch_messages and orch_messages[0]["role"] == "system" else 0
    return [*orch_messages[:at], {"role": "system", "content": system}, *orch_messages[at:]]


@router.get("/v1/models", response_model=ModelList, responses=_ERRORS, summary="The characters, as OpenAI models")
def list_models(request: Request) -> ModelList:
    names = request.app.state.registry.names()
    return ModelList(data=[ModelCard(id=cid, name=shown) for cid, shown in sorted(names.items())])


@router.post(
    "/v1/chat/completions", responses=_ERRORS,
    summary="OpenAI-compatible chat completion with memory (plain or SSE with stream: true)",
)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Any:
    config = request.app.state.config
    registry = request.app.state.registry
    raw = request.scope["headers"]
    sent = {name: header_text(raw, name)
            for name in (CHARACTER_HEADER, USER_NAME_HEADER, REQUEST_HEADER, *IDENTITY_HEADERS)}
    system = [m.text() for m in body.messages if m.role in ("system", "developer")]
    told = speakers(system, character_header=sent[CHARACTER_HEADER], user_header=sent[USER_NAME_HEADER])
    principal: Principal = getattr(request.state, "principal", Principal(None))
    who = resolve(principal, body_user=body.user, metadata=body.metadata, headers=sent, policy=request.app.state.identity)
    metadata = body.metadata if isinstance(body.metadata, dict) else {}
    override = sent[REQUEST_HEADER] or (str(metadata[METADATA_KEY]) if metadata.get(METADATA_KEY) is not None else None)
    pairs = [(m.role, m.text()) for m in body.messages]
    decision = classify(pairs, override=override, rules=request.app.state.housekeeping_rules,
                        streamed=bool(body.stream))
    names = registry.names()
    known = find_character(told.character, names) if told.character else None
    if told.character and known is None and not decision.housekeeping and request.app.state.create_characters:
        await run_in_threadpool(create_character, config, character_id_for(told.character),
                                character_from(told, system))
        names = registry.names()
        known = find_character(told.character, names)
    # The character the frontend names, when kioku knows it, is the one meant (one connection for
    # every character); a header naming an unknown one is still an error (404 when opened).
    named = sent[CHARACTER_HEADER] or known
    sel = select(body.model, named, names=names, default_character=config.service.default_character)
    client_turn = None if decision.housekeeping else read_client(pairs)
    if not decision.housekeeping and client_turn is None:
        raise ServiceError(400, "the request has no user message with text: the last 'user' message is the new turn",
                           code="no_user_message")

    orch = await run_in_threadpool(registry.get, sel.character)
    llm = orch.config.llm
    client = upstream_client(request, llm)
    choice = None
    if client_turn is not None:
        # One chat id may carry many conversations (SillyTavern sends one per connection): each
        # gets its own window, found again by what the client sends.
        choice = await run_in_threadpool(choose_chat, client_turn, who.chat, partial(_stored, orch, who.user))
        who = dataclasses.replace(who, chat=choice.chat_id)
    headers = {"X-Kioku-Character": encode_header_value(sel.character), "X-Kioku-User": encode_header_value(who.user),
               "X-Kioku-User-Source": who.user_source, "X-Kioku-Chat": encode_header_value(who.chat),
               "X-Kioku-Request": decision.kind, "X-Kioku-Request-Reason": decision.reason}
    where = f"{sel.character}/{who.user} chat={who.chat}"

    record: Record | None = None
    if decision.housekeeping:
        messages = [m.model_dump(mode="json", exclude_none=True) for m in body.messages]
        requests_log.info("%s: housekeeping (%s): passed upstream without memory, nothing recorded", where,
                          decision.reason)
    else:
        assert client_turn is not None
        assert choice is not None
        plan = plan_turn(client_turn, choice.stored, chat_known=who.chat_source != "default")
        result = await orch.abuild_prompt(plan.message, user_id=who.user, chat_id=who.chat,
                                          history=None if plan.history is None else list(plan.history),
                                          exclude_turns=plan.exclude | choice.exclude, user_name=told.user,
                                          client_text="\n".join(system) if config.service.client_system == "append"
                                          else "")
        messages = build_messages(result.messages, body, config.service.client_system)
        if plan.prefix:
            messages.append({"role": "assistant", "content": plan.prefix})  # the reply to continue
        turn_id = new_turn_id(datetime.now(timezone.utc))
        headers.update({"X-Kioku-Turn": plan.kind, "X-Kioku-Turn-Id": turn_id})
        if plan.replaces:
            headers["X-Kioku-Replaces"] = plan.replaces
        record = _recorder(orch, plan, who, turn_id, where)

    params: dict[str, Any] = {"temperature": llm.temperature, "max_tokens": llm.max_tokens}
    params.update({k: getattr(body, k) for k in _SAMPLING if getattr(body, k) is not None})
    params = {k: v for k, v in params.items() if v is not None}
    model = sel.upstream_model or llm.model
    if not body.stream:
        return await _plain(request, client, model, messages, params, llm, body.model, headers, record, where)
    try:
        stream = await client.chat.completions.create(model=model, messages=messages, stream=True, **params)
    except openai.OpenAIError as exc:
        raise upstream_error(exc, llm) from exc
    events = relay(stream, record=record, where=where, model=body.model, llm=llm)
    return StreamingResponse(events, media_type="text/event-stream",
                             headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _stored(orch: MemoryOrchestrator, user: str, chat: str) -> list[StoredTurn]:
    return [StoredTurn(t.id, t.user, t.assistant) for t in orch.recent_turns(user, chat_id=chat, n=STORED_TURNS)]


def _text(value: str) -> str:
    """`value` as encodable text: an upstream may send a lone surrogate escape; it becomes '?'."""
    return value if value.isascii() else value.encode("utf-8", "replace").decode("utf-8")


class TextJSONResponse(JSONResponse):
    """JSON as UTF-8, a lone surrogate from the upstream replaced instead of failing the response."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def _recorder(orch: MemoryOrchestrator, plan: TurnPlan, who: Identity, turn_id: str, where: str) -> Record:
    async def record(reply: str) -> None:
        await orch.arecord_turn(plan.message, _text(plan.prefix + reply), user_id=who.user, chat_id=who.chat,
                                turn_id=turn_id, replaces=plan.replaces)
        replaced = f", replacing {plan.replaces}" if plan.replaces else ""
        requests_log.info("%s: conversation (%s): recorded turn %s%s", where, plan.kind, turn_id, replaced)

    return record


async def _plain(request: Request, client: openai.AsyncOpenAI, model: str, messages: list[dict[str, Any]],
                 params: dict[str, Any], llm: LLMConfig, shown_model: str, headers: dict[str, str],
                 record: Record | None, where: str) -> JSONResponse:
    """The upstream's completion as the client's reply; the turn is recorded before it is sent."""
    try:
        completion = await client.chat.completions.create(model=model, messages=messages, **params)
        text = completion.choices[0].message.content if completion.choices else None
    except (openai.OpenAIError, AttributeError, TypeError, ValueError) as exc:
        raise upstream_error(exc, llm) from exc
    if text is None or not isinstance(text, str):
        raise upstream_error(ValueError("no message content in the first choice"), llm)
    payload = completion.model_dump(mode="json", exclude_unset=True)
    payload["model"] = shown_model
    # Render the whole response first: if that fails, nothing is recorded and a retry is safe.
    response = TextJSONResponse(payload, headers=headers)
    if record is not None and text.strip():
        if await request.is_disconnected():
            # The client gave up (a timeout, most likely) and may retry: its turn never happened.
            log.warning("%s: the client went away before the reply was sent; nothing recorded", where)
            return response
        await record(text)
    return response


async def relay(stream: Any, *, record: Record | None, where: str, model: str, llm: LLMConfig) -> AsyncIterator[bytes]:
    """Relay the upstream's chunks as SSE; record the turn after the last one, then send [DONE].

    The answer is complete when the upstream reported a `finish_reason` and sent some text. A client
    that goes away mid-stream cancels this generator: nothing is recorded. An upstream that fails or
    stops early ends the stream with an error event (no [DONE]): nothing is recorded."""
    parts: list[str] = []
    finished = False
    problem: str | None = None
    try:
        async for chunk in stream:
            data = chunk.model_dump(mode="json", exclude_unset=True)
            data["model"] = model
            for choice in chunk.choices or ():
                if choice.delta is not None and choice.delta.content:
                    parts.append(choice.delta.content)
                if choice.finish_reason:
                    finished = True
            yield b"data: " + json.dumps(data, ensure_ascii=False).encode("utf-8", "replace") + b"\n\n"
        if not finished or not parts:
            problem = "the upstream stream ended without " + ("a finish_reason" if not finished else "any text")
    except Exception as exc:  # noqa: BLE001 - any upstream failure ends the stream with an error event
        problem = upstream_error(exc, llm).message
    finally:
        if problem is not None or not finished:
            try:
                await stream.close()
            except Exception:  # noqa: BLE001 - already failing; the connection is dropped either way
                pass
    if problem is not None:
        log.warning("%s: stream broke off; nothing recorded: %s", where, problem)
        payload = {"error": {"message": f"stream broke off: {problem}", "type": "upstream_error",
                             "code": "upstream_stream_broken"}}
        yield b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"
        return
    if record is not None:
        await record("".join(parts))
    yield b"data: [DONE]\n\n"

