"""Request and response models of the HTTP service (the OpenAPI schema is generated from them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Text = Field(min_length=1, max_length=20_000)


def lone_surrogate(value: Any, path: str = "") -> str | None:
    """Where in a JSON value a string holds a lone surrogate (JSON allows `"\\ud800"`, UTF-8 cannot
    encode it, so it would fail later, upstream or in a file): 'messages.0.content', or None."""
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "<body>"
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        where = f"{path}.{key}" if path else str(key)
        found = lone_surrogate(key, where) or lone_surrogate(item, where)
        if found:
            return found
    return None


class RequestBody(BaseModel):
    """A request body: every string in it must be encodable as UTF-8."""

    @model_validator(mode="before")
    @classmethod
    def _no_lone_surrogates(cls, data: Any) -> Any:
        where = lone_surrogate(data)
        if where:
            raise ValueError(f"{where} contains a lone UTF-16 surrogate (like \\ud800), which is not text; "
                             "send valid Unicode")
        return data


# -- OpenAI chat ---------------------------------------------------------------------------------


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """An OpenAI chat message; list content (multi-part) is reduced to its text parts."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text or "" for p in self.content if p.type == "text")


class ChatCompletionRequest(RequestBody):
    """The OpenAI request body. Only the last user message is used as the new message; the engine's
    built prompt (persona, memory, its own window) replaces the client's conversation."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=200, examples=["xiaoyue", "xiaoyue/gpt-4o-mini"])
    """`<character>` or `<character>/<upstream model>`."""
    messages: list[ChatMessage] = Field(min_length=1, max_length=1000)
    stream: bool = False
    user: str | dict[str, Any] | None = Field(default=None, examples=["alice"])
    """The OpenAI end-user id, or an object with an `id`: the engine's user (see `identity`)."""
    metadata: dict[str, Any] | None = Field(default=None, examples=[{"chat_id": "c1"}])
    """`chat_id`: the chat (the short-term window is per chat); `kioku_request`: `conversation` or
    `housekeeping` (overrides the detection of a frontend's housekeeping requests)."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    stop: str | list[str] | None = None
    seed: int | None = None


class ErrorBody(BaseModel):
    message: str
    type: str
    code: str | None = None


class ErrorResponse(BaseModel):
    """OpenAI's error shape, used by every route."""

    error: ErrorBody


class ModelCard(BaseModel):
    id: str
    """The character id (its folder); `model` takes it or the name."""
    name: str | None = None
    """The character's display name (`name:` in character.yaml), which frontends such as Open WebUI show."""
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "kioku"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


# -- memory API ----------------------------------------------------------------------------------


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    short_term_backend: str
    redis: bool | None = None
    """Whether Redis answers a ping (None with the file backend)."""
    characters_open: list[str]
    storage_backend: str = "files"
    database: dict[str, str] | None = None
    """postgres only: {"state": "up" | "down" | "schema", "where": "user@host:port/db", "detail": ...}."""


class PromptRequest(RequestBody):
    message: str = Text
    now: datetime | None = None
    """Answer as if at this time (naive = the character's zone); default now."""


class HitOut(BaseModel):
    store: str
    text: str
    score: float
    reason: str
    """Why it fired: the keyword, the time expression and range, the similarity."""
    tokens: int
    pinned: bool
    meta: dict[str, Any]


class PromptPreview(BaseModel):
    """What a chat request with this message would send upstream, and why each piece is there."""

    messages: list[dict[str, str]]
    hits: list[HitOut]
    dropped: list[HitOut]
    """Hits over their threshold that a token budget trimmed."""
    tokens: dict[str, int]
    timings_ms: dict[str, float]
    diagnostics: list[str]
    now: datetime
    query_text: str


class FactIn(RequestBody):
    text: str = Field(min_length=1, max_length=2000)


class RevisionOut(BaseModel):
    text: str
    until: datetime
    change: str


class FactOut(BaseModel):
    id: str
    text: str
    learned_at: datetime
    updated_at: datetime | None = None
    source_turns: list[str] = []
    history: list[RevisionOut] = []
    deleted_at: datetime | None = None


def fact_out(f: Any) -> FactOut:
    """An `engine.admin.Fact` as the memory API and the MCP tools show it."""
    return FactOut(
        id=f.id, text=f.text, learned_at=f.learned_at, updated_at=f.updated_at, source_turns=list(f.source_turns),
        history=[RevisionOut(text=r.text, until=r.until, change=r.change) for r in f.history], deleted_at=f.deleted_at,
    )


class DiaryEntryOut(BaseModel):
    id: str
    at: datetime
    tag: str
    user: str
    assistant: str


class DiaryPage(BaseModel):
    start: datetime
    end: datetime
    entries: list[DiaryEntryOut]


class WindowMessageOut(BaseModel):
    id: str
    role: str
    content: str
    at: str
    tokens: int


class ShortTermOut(BaseModel):
    """The stored short-term state: the rolling summary and the window messages."""

    summary: str
    messages: list[WindowMessageOut]


class BookErrorOut(BaseModel):
    file: str
    line: int | None
    message: str


class WorldBookStatusOut(BaseModel):
    folder: str
    files: int
    files_loaded: int
    entries: int
    semantic_keys: int
    errors: list[BookErrorOut]
    """Each broken file and line, and why (the last good version of the file stays active)."""
    embed_error: str | None


# -- the inspector's view of a character (engine.admin) -------------------------------------------


class CharacterOut(BaseModel):
    id: str
    name: str
    """The display name from character.yaml."""
    language: str
    timezone: str
    allow_edit: bool = False
    """Whether this service accepts changes to memory (`service.allow_edit`)."""


class UserOut(BaseModel):
    id: str
    turns: int
    facts: int
    last_active: datetime | None = None


class DayCountOut(BaseModel):
    day: str
    """A local day, YYYY-MM-DD."""
    turns: int


class DiarySearchHitOut(BaseModel):
    id: str
    at: datetime
    tag: str
    user: str
    assistant: str
    score: float
    reason: str
    """Which half matched and how: words, meaning, context, range."""


class DiaryEditIn(RequestBody):
    user: str | None = Field(default=None, max_length=20_000)
    assistant: str | None = Field(default=None, max_length=20_000)
    tag: str | None = Field(default=None, max_length=200)


class WorldBookEntryOut(BaseModel):
    id: str
    file: str
    line: int
    keys: list[str]
    secondary_keys: list[str]
    logic: str
    content: str
    constant: bool
    enabled: bool


class WorldBookEntriesOut(BaseModel):
    entries: list[WorldBookEntryOut]
    problems: list[BookErrorOut]
    """Every error of the book's files, with file and line."""


class TryIn(RequestBody):
    message: str = Text
    now: datetime | None = None


class TryOut(BaseModel):
    """What the world book would inject for a message, and why; nothing is recorded."""

    hits: list[HitOut]
    diagnostics: list[str]
