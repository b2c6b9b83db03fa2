"""`POST /v1/chat/completions`: build the prompt with memory, call the upstream LLM, relay its answer
(plain or SSE), and record the turn once the answer is complete.

Selection, from unmodified OpenAI clients:
- character: the `X-Kioku-Character` header, else the model name `<character>` or
  `<character>/<upstream model>`, else `service.default_character`;
- upstream model: the part after the slash, else a model name that names no character (with the
  header or the default character), else the character's `llm.model`;
- user: the `X-Kioku-User` header, else the OpenAI `user` field, else `service.default_user`.

Only the LAST user message of the request is used: the engine keeps the conversation itself (its
short-term window and summary) and its built prompt replaces the client's history. The client's
system messages are dropped, or appended after the persona with `service.client_system: append`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import openai
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from engine.config import LLMConfig
from engine.orchestrator import MemoryOrchestrator, new_turn_id
from engine.paths import validate_id
from engine.service.errors import ServiceError
from engine.service.headers import encode_header_value, header_text
from engine.service.models import ChatCompletionRequest, ErrorResponse, ModelCard, ModelList

log = logging.getLogger(__name__)

router = APIRouter(tags=["openai"])

CHARACTER_HEADER = "X-Kioku-Character"
USER_HEADER = "X-Kioku-User"
_SAMPLING = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty",
             "frequency_penalty", "stop", "seed")
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 404, 413, 422, 429, 502, 503, 504)
}


@dataclass(frozen=True)
class Selection:
    character: str
    user: str
    upstream_model: str | None
    """None: the character's configured `llm.model`."""


def select(body: ChatCompletionRequest, headers: Any, *, available: list[str], default_character: str | None,
           default_user: str) -> Selection:
    """Which character, user and upstream model a request means (see the module docstring)."""
    model = body.model.strip()
    head, _, tail = model.partition("/")
    header = (headers.get(CHARACTER_HEADER) or "").strip()
    if header:
        character = header
        upstream = tail if head == header and tail else (None if model == header else model)
    elif head in available and tail:
        character, upstream = head, tail
    elif model in available:
        character, upstream = model, None
    elif default_character:
        character, upstream = default_character, model
    else:
        raise ServiceError(
            404, f"model {model!r} names no character: use '<character>' or '<character>/<upstream model>' "
            f"(characters: {', '.join(available) or 'none'}), or send the {CHARACTER_HEADER} header",
            code="model_not_found",
        )
    user = (headers.get(USER_HEADER) or "").strip() or (body.user or "").strip() or default_user
    validate_id(character, kind="character id")
    validate_id(user, kind="user id")
    return Selection(character, user, upstream or None)


def build_messages(orch_messages: list[dict[str, str]], body: ChatCompletionRequest, mode: str) -> list[dict[str, str]]:
    """The engine's prompt, plus the client's system text after the persona when configured."""
    if mode != "append":
        return orch_messages
    system = "\n\n".join(m.text() for m in body.messages if m.role in ("system", "developer") and m.text().strip())
    if not system:
        return orch_messages
    at = 1 if orch_messages and orch_messages[0]["role"] == "system" else 0
    return [*orch_messages[:at], {"role": "system", "content": system}, *orch_messages[at:]]


def last_user_message(body: ChatCompletionRequest) -> str:
    for m in reversed(body.messages):
        if m.role == "user":
            text = m.text().strip()
            if not text:
                raise ServiceError(400, "the last user message has no text", code="empty_message")
            return text
    raise ServiceError(400, "the request has no user message: the last 'user' message is the new turn",
                       code="no_user_message")


def upstream_client(request: Request, llm: LLMConfig) -> openai.AsyncOpenAI:
    """One client (connection pool) per distinct upstream, for the app's lifetime."""
    if llm.backend != "openai":
        raise ServiceError(
            503, f"no upstream LLM configured (llm.backend is {llm.backend!r}; set llm.backend: openai, "
            "llm.base_url and the key in the variable named by llm.api_key_env)",
            kind="server_error", code="no_upstream",
        )
    key = (llm.base_url, llm.api_key.get_secret_value() if llm.api_key else None, llm.timeout_s, llm.max_retries)
    clients: dict[tuple, openai.AsyncOpenAI] = request.app.state.upstreams
    client = clients.get(key)
    if client is None:
        client = openai.AsyncOpenAI(
            base_url=llm.base_url, api_key=key[1] or "unused", timeout=llm.timeout_s, max_retries=llm.max_retries,
        )
        clients[key] = client
    return client


async def close_upstreams(app: Any) -> None:
    for client in app.state.upstreams.values():
        await client.close()
    app.state.upstreams.clear()


def upstream_error(exc: Exception, llm: LLMConfig) -> ServiceError:
    """A meaningful status for each way the upstream can fail; never a bare 500."""
    where = f"upstream LLM at {llm.base_url or 'api.openai.com'}"
    if isinstance(exc, openai.APITimeoutError):
        return ServiceError(504, f"{where} did not answer within {llm.timeout_s:g}s (llm.timeout_s)",
                            kind="upstream_error", code="upstream_timeout")
    if isinstance(exc, openai.APIConnectionError):
        return ServiceError(502, f"cannot reach {where}: {exc}", kind="upstream_error", code="upstream_unreachable")
    if isinstance(exc, openai.APIStatusError):
        detail = _upstream_message(exc)
        status = exc.status_code
        if status in (401, 403):
            return ServiceError(502, f"{where} refused the engine's credentials ({status}: {detail}); "
                                f"check the key in ${llm.api_key_env}", kind="upstream_error", code="upstream_auth")
        if status == 429:
            return ServiceError(429, f"{where} is rate limiting: {detail}", kind="upstream_error", code="upstream_rate_limit")
        if 400 <= status < 500:
            return ServiceError(status, f"{where} rejected the request ({status}): {detail}", kind="upstream_error",
                                code="upstream_rejected")
        return ServiceError(502, f"{where} failed ({status}): {detail}", kind="upstream_error", code="upstream_failed")
    return ServiceError(502, f"{where} answered with something that is not an OpenAI chat completion: "
                        f"{type(exc).__name__}: {exc}", kind="upstream_error", code="upstream_bad_response")


def _upstream_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(exc.message)


@router.get("/v1/models", response_model=ModelList, responses=_ERRORS, summary="The characters, as OpenAI models")
def list_models(request: Request) -> ModelList:
    return ModelList(data=[ModelCard(id=c) for c in request.app.state.registry.available()])


@router.post(
    "/v1/chat/completions", responses=_ERRORS,
    summary="OpenAI-compatible chat completion with memory (plain or SSE with stream: true)",
)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Any:
    config = request.app.state.config
    registry = request.app.state.registry
    sent = {name: header_text(request.scope["headers"], name) for name in (CHARACTER_HEADER, USER_HEADER)}
    sel = select(body, sent, available=registry.available(),
                 default_character=config.service.default_character, default_user=config.service.default_user)
    message = last_user_message(body)
    orch: MemoryOrchestrator = await run_in_threadpool(registry.get, sel.character)
    llm = orch.config.llm
    client = upstream_client(request, llm)
    result = await orch.abuild_prompt(message, user_id=sel.user)
    params: dict[str, Any] = {"temperature": llm.temperature, "max_tokens": llm.max_tokens}
    params.update({k: getattr(body, k) for k in _SAMPLING if getattr(body, k) is not None})
    params = {k: v for k, v in params.items() if v is not None}
    messages = build_messages(result.messages, body, config.service.client_system)
    model = sel.upstream_model or llm.model
    turn_id = new_turn_id(datetime.now(timezone.utc))
    # Ids of any script: percent-encoded UTF-8 (see engine.service.headers); never Latin-1.
    headers = {"X-Kioku-Turn-Id": turn_id, "X-Kioku-Character": encode_header_value(sel.character),
               "X-Kioku-User": encode_header_value(sel.user)}

    if not body.stream:
        try:
            completion = await client.chat.completions.create(model=model, messages=messages, **params)
            text = completion.choices[0].message.content if completion.choices else None
        except (openai.OpenAIError, AttributeError, TypeError, ValueError) as exc:
            raise upstream_error(exc, llm) from exc
        if text is None or not isinstance(text, str):
            raise upstream_error(ValueError("no message content in the first choice"), llm)
        payload = completion.model_dump(mode="json", exclude_unset=True)
        payload["model"] = body.model
        # Render the whole response first: if that fails, nothing is recorded and a retry is safe.
        response = JSONResponse(payload, headers=headers)
        if text.strip():
            if await request.is_disconnected():
                # The client gave up (a timeout, most likely) and may retry: its turn never happened.
                log.warning("client went away before the reply for %s/%s was sent; nothing recorded",
                            sel.character, sel.user)
                return response
            await orch.arecord_turn(message, text, user_id=sel.user, turn_id=turn_id)
        return response

    try:
        stream = await client.chat.completions.create(model=model, messages=messages, stream=True, **params)
    except openai.OpenAIError as exc:
        raise upstream_error(exc, llm) from exc
    events = relay(stream, orch=orch, message=message, user=sel.user, turn_id=turn_id, model=body.model, llm=llm)
    return StreamingResponse(events, media_type="text/event-stream",
                             headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def relay(stream: Any, *, orch: MemoryOrchestrator, message: str, user: str, turn_id: str, model: str,
                llm: LLMConfig) -> AsyncIterator[bytes]:
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
            yield b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"
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
        log.warning("stream for %s/%s broke off; nothing recorded: %s", orch.paths.root.name, user, problem)
        payload = {"error": {"message": f"stream broke off: {problem}", "type": "upstream_error",
                             "code": "upstream_stream_broken"}}
        yield b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"
        return
    await orch.arecord_turn(message, "".join(parts), user_id=user, turn_id=turn_id)
    yield b"data: [DONE]\n\n"
