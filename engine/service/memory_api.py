"""The memory API: prompt preview, the short-term state, core facts, diary entries, world-book status, health.

Routes are plain functions (FastAPI runs them in its thread pool) over the library's admin API
(`orch.admin`, engine/admin.py); they never reach into a store. Changes need `service.allow_edit`.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from engine.admin import Hit
from engine.orchestrator import MemoryOrchestrator
from engine.paths import validate_id
from engine.service.auth import own_user
from engine.service.errors import ServiceError, redact_paths
from engine.timerange import MAX_RANGE_DAYS, iso_range
from engine.service.models import (
    DiaryEntryOut,
    DiaryPage,
    ErrorResponse,
    FactIn,
    FactOut,
    fact_out,
    Health,
    HitOut,
    PromptPreview,
    PromptRequest,
    ShortTermOut,
    WindowMessageOut,
    WorldBookStatusOut,
)

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/characters/{character}", tags=["memory"])
public_router = APIRouter(tags=["health"])

_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 401, 403, 404, 413, 422, 503)}
CharacterId = Path(min_length=1, max_length=64, examples=["xiaoyue"], description="character id (folder under data/agents/)")
UserId = Path(min_length=1, max_length=64, examples=["alice"], description="user id")
MAX_DIARY_DAYS = MAX_RANGE_DAYS


def _orch(request: Request, character: str) -> MemoryOrchestrator:
    return request.app.state.registry.get(character)


def require_edit(request: Request) -> None:
    """A dependency: memory changes only where the operator switched them on (`service.allow_edit`)."""
    if not request.app.state.config.service.allow_edit:
        raise ServiceError(403, "this service is read-only: set service.allow_edit: true to change memory",
                           code="read_only")


def _user(request: Request, user: str) -> str:
    own_user(request, validate_id(user, kind="user id"))
    return user


@public_router.get("/health", response_model=Health, responses={503: {"model": Health}}, summary="Liveness, Redis and database reachability")
def health(request: Request, response: Response) -> Health:
    config = request.app.state.config
    redis_ok: bool | None = None
    if config.short_term.backend == "redis":
        import redis

        client = redis.Redis.from_url(config.short_term.redis_url, socket_connect_timeout=1, socket_timeout=1)
        try:
            redis_ok = bool(client.ping())
        except redis.RedisError:
            redis_ok = False
        finally:
            client.close()
    from dataclasses import asdict

    from engine.backends.db_health import database_health

    database = database_health(config.storage)
    ok = redis_ok is not False and (database is None or database.state == "up")
    status = "ok" if ok else "degraded"
    if status != "ok":
        response.status_code = 503
    return Health(status=status, version=request.app.version, short_term_backend=config.short_term.backend,
                  redis=redis_ok, characters_open=request.app.state.registry.opened(),
                  storage_backend=config.storage.backend, database=asdict(database) if database else None)


@router.post("/users/{user}/prompt", response_model=PromptPreview, responses=_ERRORS,
             summary="The prompt a chat message would get: messages, every hit and why it fired")
def preview(request: Request, body: PromptRequest, character: str = CharacterId, user: str = UserId) -> PromptPreview:
    orch = _orch(request, character)
    result = orch.build_prompt(body.message, user_id=_user(request, user), now=body.now)
    return PromptPreview(
        messages=result.messages, hits=[_hit(h) for h in result.hits], dropped=[_hit(h) for h in result.dropped],
        tokens=dict(result.tokens), timings_ms=dict(result.timings_ms),
        diagnostics=[redact_paths(d, data_dir=request.app.state.config.data_dir) for d in result.diagnostics],
        now=result.now, query_text=result.query_text,
    )


@router.get("/users/{user}/short-term", response_model=ShortTermOut, responses=_ERRORS,
            summary="The stored short-term window and rolling summary")
def short_term(request: Request, character: str = CharacterId, user: str = UserId,
               chat: str | None = Query(None, max_length=256, description="a chat id (default: the default chat)")
               ) -> ShortTermOut:
    state = _orch(request, character).admin.short_term(_user(request, user), chat_id=chat)
    return ShortTermOut(summary=state.brain.historical_summary,
                        messages=[WindowMessageOut(**dataclasses.asdict(m)) for m in state.messages])


@router.get("/users/{user}/facts", response_model=list[FactOut], responses=_ERRORS, summary="The user's core facts")
def list_facts(request: Request, character: str = CharacterId, user: str = UserId,
               include_deleted: bool = Query(False, description="also facts deleted (kept for their history)")) -> list[FactOut]:
    facts = _orch(request, character).admin.facts
    return [fact_out(f) for f in facts.list(_user(request, user), include_deleted=include_deleted)]


@router.post("/users/{user}/facts", response_model=FactOut, status_code=201, responses=_ERRORS,
             dependencies=[Depends(require_edit)],
             summary="Add a core fact (an equal or near-duplicate fact is returned instead)")
def addfact_out(request: Request, body: FactIn, character: str = CharacterId, user: str = UserId) -> FactOut:
    added = _orch(request, character).admin.facts.add(_user(request, user), body.text)
    log.info("memory api: %s/%s fact %s added", character, user, added.fact.id)
    return fact_out(added.fact)


@router.put("/users/{user}/facts/{fact_id}", response_model=FactOut, responses=_ERRORS,
            dependencies=[Depends(require_edit)], summary="Replace a fact's text (the old text goes to its history)")
def updatefact_out(request: Request, body: FactIn, character: str = CharacterId, user: str = UserId,
                fact_id: str = Path(min_length=1, max_length=64)) -> FactOut:
    fact = _orch(request, character).admin.facts.edit(_user(request, user), fact_id, body.text)
    log.info("memory api: %s/%s fact %s edited", character, user, fact_id)
    return fact_out(fact)


@router.delete("/users/{user}/facts/{fact_id}", response_model=FactOut, responses=_ERRORS,
               dependencies=[Depends(require_edit)], summary="Delete a fact (kept for its history unless purge=true)")
def deletefact_out(request: Request, character: str = CharacterId, user: str = UserId,
                fact_id: str = Path(min_length=1, max_length=64),
                purge: bool = Query(False, description="remove the fact and its history entirely")) -> FactOut:
    fact = _orch(request, character).admin.facts.delete(_user(request, user), fact_id, purge=purge)
    log.info("memory api: %s/%s fact %s deleted%s", character, user, fact_id, " (purged)" if purge else "")
    return fact_out(fact)


@router.get("/users/{user}/diary", response_model=DiaryPage, responses=_ERRORS,
            summary="Diary entries in [start, end), oldest first")
def diary(
    request: Request, character: str = CharacterId, user: str = UserId,
    start: str = Query(description="ISO date or time; a date is local midnight, a naive time is local",
                       examples=["2026-11-20"], max_length=40),
    end: str | None = Query(None, description="exclusive; default: one day after start", examples=["2026-11-22"],
                            max_length=40),
) -> DiaryPage:
    orch = _orch(request, character)
    lo, hi = _range(start, end, orch)
    entries = orch.admin.diary(_user(request, user), lo, hi)
    return DiaryPage(start=lo, end=hi, entries=[
        DiaryEntryOut(id=e.id, at=e.at, tag=e.tag, user=e.user, assistant=e.assistant) for e in entries
    ])


@router.get("/world-book", response_model=WorldBookStatusOut, responses=_ERRORS,
            summary="World-book files, entries, and every error with its file and line")
def world_book(request: Request, character: str = CharacterId) -> WorldBookStatusOut:
    status = dataclasses.asdict(_orch(request, character).admin.world_book().status)
    # Paths relative to the data folder: a client has no business knowing the server's layout.
    data_dir = request.app.state.config.data_dir

    def public(text: str | None) -> str | None:
        return None if text is None else redact_paths(text, data_dir=data_dir)

    status["folder"] = public(status["folder"])
    status["embed_error"] = public(status["embed_error"])
    status["errors"] = [{**e, "file": public(e["file"]), "message": public(e["message"])} for e in status["errors"]]
    return WorldBookStatusOut(**status)


# -- helpers -------------------------------------------------------------------------------------


def _range(start: str, end: str | None, orch: MemoryOrchestrator) -> tuple[datetime, datetime]:
    """[start, end) as aware datetimes; a bad value or range is a 400 naming it (`TimeRangeError`)."""
    return iso_range(start, end, orch.tz, max_days=MAX_DIARY_DAYS)


def _hit(h: Hit) -> HitOut:
    meta = {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v) for k, v in h.meta.items()}
    return HitOut(store=h.store, text=h.text, score=h.score, reason=h.reason, tokens=h.tokens, pinned=h.pinned, meta=meta)

