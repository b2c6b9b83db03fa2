"""Search over a user's past turns: the index (`files.FileTurnIndex`) and its ranking (`rank`)."""

from engine.search.base import IndexStats, SearchHit, SearchRequest, Tuning, TurnDoc

__all__ = ["IndexStats", "SearchHit", "SearchRequest", "Tuning", "TurnDoc"]
