"""The upstream LLM: one OpenAI client per distinct endpoint, and a meaningful status for each way it fails."""

from __future__ import annotations

from typing import Any

import openai
from fastapi import Request

from engine.config import LLMConfig
from engine.service.errors import ServiceError


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
