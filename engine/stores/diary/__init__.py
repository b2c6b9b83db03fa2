"""The diary store: every past turn, one YAML file per local day, found by time expressions and
by hybrid search over every turn."""

from engine.stores.diary.entry import DiaryEntry, entry_id_for
from engine.stores.diary.store import DiaryStore

__all__ = ["DiaryEntry", "DiaryStore", "entry_id_for"]
