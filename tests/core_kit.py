"""Helpers shared by the core-memory store tests (test_core_store.py, test_core_cache.py)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from engine.stores.base import Query

TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 11, 2, 20, 0, tzinfo=TZ)


def warmed(store):
    """The relevance decision's reference facts embedded up front (once per process anyway), so
    that the embedder's records (a `counting.CountingEmbedder`) show only the store's own fact work."""
    store.relevance.reference()
    for record in (store.embedder.calls, store.embedder.texts, store.embedder.passages):
        record.clear()
    return store


def ask(store, message, user_id="alice"):
    """What the store retrieves for `message` from `user_id` at T0."""
    vector = store.embedder.inner.embed([message], role="query")[0]
    return store.retrieve(Query(message=message, user_id=user_id, now=T0, recent=(), text=message, vector=vector))
