"""The prompt-time call shared by the world-book store tests (match, store, semantic)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from engine.stores.base import Query

NOW = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)


def retrieve(store, message: str, recent=(), *, embedder=None, now: datetime = NOW) -> list:
    """What the orchestrator does for user u1: ask the store for its query pieces, embed them in one
    batch with `embedder`, retrieve. Without an embedder (keyword-only tests) nothing is embedded and
    the query carries no pieces."""
    dim = embedder.dim if embedder is not None else 4
    pieces = {}
    if embedder is not None:
        texts = store.query_texts(message, list(recent))
        vectors = embedder.embed(texts, role="query") if texts else np.zeros((0, dim), np.float32)
        pieces = {"world_book": (tuple(texts), vectors)}
    query = Query(message=message, user_id="u1", now=now, recent=tuple(recent), text=message,
                  vector=np.zeros(dim, dtype=np.float32), pieces=pieces)
    return store.retrieve(query)
