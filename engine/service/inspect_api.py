"""The routes behind the memory inspector page (and any other client): characters and users, the
diary's calendar, search and corrections, the world book's entries and a "try a message" box.

Every route calls the library's admin API (`orch.admin`, engine/admin.py) and nothing else; the
page at /inspector/ is static files that call these routes with the service token. Changes need
`service.allow_edit: true` and are logged.
"""

from __future__ import annotations

import logging
from datetime import datetime

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from engine.admin import characters
from engine.inspector import static_dir
from engine.service.errors import ServiceError, redact_paths
from engine.service.memory_api import require_edit, _ERRORS, CharacterId, UserId, _hit, _orch, _user
from engine.timerange import search_range
from engine.service.models import (
    BookErrorOut,
    CharacterOut,
    DayCountOut,
    DiaryEditIn,
    DiaryEntryOut,
    DiarySearchHitOut,
    TryIn,
    TryOut,
    UserOut,
    WorldBookEntriesOut,
    WorldBookEntryOut,
)

log = logging.getLogger(__name__)

top_router = APIRouter(prefix="/v1", tags=["inspector"])
router = APIRouter(prefix="/v1/characters/{character}", tags=["inspector"])
TurnId = Path(min_length=1, max_length=128, description="a diary turn id")


def mount_page(app) -> None:  # noqa: ANN001 - a FastAPI app
    """Serve the page's static files at /inspector/ (they hold no data; the API calls need the token)."""
    app.mount("/inspector/", StaticFiles(directory=static_dir(), html=True), name="inspector")

    @app.get("/inspector", include_in_schema=False)
    def _slash() -> RedirectResponse:
        return RedirectResponse("/inspector/")


@top_router.get("/characters", response_model=list[CharacterOut], responses=_ERRORS,
                summary="Every character of this service, with its display name")
def list_characters(request: Request) -> list[CharacterOut]:
    config = request.app.state.config
    return [CharacterOut(id=c.id, name=c.name, language=c.language, timezone=c.timezone,
                         allow_edit=config.service.allow_edit) for c in characters(config)]


@router.get("", response_model=CharacterOut, responses=_ERRORS, summary="One character as its memory sees it")
def character_info(request: Request, character: str = CharacterId) -> CharacterOut:
    orch = _orch(request, character)
    return CharacterOut(id=character, name=orch.character.name, language=orch.config.language,
                        timezone=orch.config.timezone, allow_edit=request.app.state.config.service.allow_edit)


@router.get("/users", response_model=list[UserOut], responses=_ERRORS,
            summary="The character's users with turn and fact counts and last activity")
def list_users(request: Request, character: str = CharacterId) -> list[UserOut]:
    admin = _orch(request, character).admin
    return [UserOut(id=u.id, turns=u.turns, facts=u.facts, last_active=u.last_active) for u in admin.users()
            if _visible(request, u.id)]


@router.get("/users/{user}/diary/days", response_model=list[DayCountOut], responses=_ERRORS,
            summary="Every local day with turns, and how many (the calendar)")
def diary_days(request: Request, character: str = CharacterId, user: str = UserId) -> list[DayCountOut]:
    admin = _orch(request, character).admin
    return [DayCountOut(day=d.day.isoformat(), turns=d.turns) for d in admin.diary_days(_user(request, user))]


@router.get("/users/{user}/diary/search", response_model=list[DiarySearchHitOut], responses=_ERRORS,
            summary="Search every turn by words and meaning, optionally within [start, end)")
def diary_search(
    request: Request, character: str = CharacterId, user: str = UserId,
    q: str = Query(min_length=1, max_length=2000, description="words or a question"),
    start: str | None = Query(None, max_length=40, description="ISO date or time"),
    end: str | None = Query(None, max_length=40, description="exclusive; a date means the end of that day"),
    k: int = Query(20, ge=1, le=100),
) -> list[DiarySearchHitOut]:
    orch = _orch(request, character)
    lo, hi = search_range(start, end, orch.tz, now=datetime.now(orch.tz))
    uid = _user(request, user)
    found = orch.admin.search_diary(uid, q, start=lo, end=hi, k=k)
    entries = {e.id: e for e in orch.admin.diary_turns(uid, [r.turn_id for r in found])}
    return [DiarySearchHitOut(id=e.id, at=e.at, tag=e.tag, user=e.user, assistant=e.assistant, score=r.score,
                              reason=f"{r.side}: {r.why}")
            for r in found if (e := entries.get(r.turn_id)) is not None]


@router.patch("/users/{user}/diary/{turn_id}", response_model=DiaryEntryOut, responses=_ERRORS,
              dependencies=[Depends(require_edit)], summary="Correct a turn's texts or tag (the index follows)")
def diary_edit(request: Request, body: DiaryEditIn, character: str = CharacterId, user: str = UserId,
               turn_id: str = TurnId) -> DiaryEntryOut:
    admin = _orch(request, character).admin
    e = admin.edit_turn(_user(request, user), turn_id, user=body.user, assistant=body.assistant, tag=body.tag)
    log.info("inspector: %s/%s diary turn %s edited", character, user, turn_id)
    return DiaryEntryOut(id=e.id, at=e.at, tag=e.tag, user=e.user, assistant=e.assistant)


@router.delete("/users/{user}/diary/{turn_id}", status_code=204, responses=_ERRORS,
               dependencies=[Depends(require_edit)], summary="Delete a turn from the diary (the index follows)")
def diary_delete(request: Request, character: str = CharacterId, user: str = UserId,
                 turn_id: str = TurnId) -> Response:
    _orch(request, character).admin.delete_turn(_user(request, user), turn_id)
    log.info("inspector: %s/%s diary turn %s deleted", character, user, turn_id)
    return Response(status_code=204)


@router.get("/world-book/entries", response_model=WorldBookEntriesOut, responses=_ERRORS,
            summary="Every world-book entry with its file, line, keys and logic, and every problem")
def world_book_entries(request: Request, character: str = CharacterId) -> WorldBookEntriesOut:
    view = _orch(request, character).admin.world_book()
    data_dir = request.app.state.config.data_dir
    return WorldBookEntriesOut(
        entries=[WorldBookEntryOut(id=e.id, file=e.file, line=e.line, keys=list(e.keys),
                                   secondary_keys=list(e.secondary_keys), logic=e.logic, content=e.content,
                                   constant=e.constant, enabled=e.enabled) for e in view.entries],
        problems=[BookErrorOut(file=redact_paths(str(p.file), data_dir=data_dir), line=p.line,
                               message=redact_paths(p.message, data_dir=data_dir)) for p in view.status.errors],
    )


@router.post("/world-book/try", response_model=TryOut, responses=_ERRORS,
             summary="Which world-book entries a message fires and why (nothing is recorded)")
def world_book_try(request: Request, body: TryIn, character: str = CharacterId) -> TryOut:
    orch = _orch(request, character)
    result = orch.admin.try_world_book(body.message, now=body.now)
    data_dir = request.app.state.config.data_dir
    return TryOut(hits=[_hit(h) for h in result.hits],
                  diagnostics=[redact_paths(d, data_dir=data_dir) for d in result.diagnostics])


def _visible(request: Request, user_id: str) -> bool:
    """A per-user token sees only its own user in listings."""
    try:
        _user(request, user_id)
    except ServiceError:
        return False
    return True
