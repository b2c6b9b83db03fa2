"""Short-term context: the window of recent messages and the rolling summary (MetaGPT BrainMemory),
per (user, chat)."""

from engine.shortterm.backend import FileBackend, ShortTermBackend
from engine.shortterm.chats import DEFAULT_CHAT, chat_folder, validate_chat_id
from engine.shortterm.memory import FoldConflictError, ShortTermMemory, fit_window, turn_of
from engine.shortterm.state import Brain, Fold, State, WindowMessage
from engine.shortterm.summarizer import SummaryUpdate, extractive_summary, newest_lines, summarize

__all__ = [
    "DEFAULT_CHAT",
    "Brain",
    "FileBackend",
    "Fold",
    "FoldConflictError",
    "ShortTermBackend",
    "ShortTermMemory",
    "State",
    "SummaryUpdate",
    "WindowMessage",
    "chat_folder",
    "extractive_summary",
    "fit_window",
    "newest_lines",
    "summarize",
    "turn_of",
    "validate_chat_id",
]
