"""Search over a user's past turns: the `TurnIndex` seam and its files implementation."""

from engine.search.base import IndexStats, SearchHit, SearchRequest, Tuning, TurnDoc, TurnIndex

__all__ = ["IndexStats", "SearchHit", "SearchRequest", "Tuning", "TurnDoc", "TurnIndex"]
