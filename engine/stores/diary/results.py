"""Typed results the diary's admin API hands out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class DiarySearchResult:
    """One turn found by `DiaryStore.search`."""

    turn_id: str
    at: datetime
    side: str
    """The half that matched best: "user" or "assistant"."""
    text: str
    """That half's text."""
    score: float
    why: str
    """"words", "meaning", "context" or "range"."""
