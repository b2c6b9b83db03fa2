"""Short-term context: the window of recent messages and the rolling summary (MetaGPT BrainMemory)."""

from engine.shortterm.backend import Brain, FileBackend, ShortTermBackend, State, WindowMessage
from engine.shortterm.memory import ShortTermMemory, fit_window
from engine.shortterm.summarizer import SummaryUpdate, extractive_summary, summarize

__all__ = [
    "Brain",
    "FileBackend",
    "ShortTermBackend",
    "ShortTermMemory",
    "State",
    "SummaryUpdate",
    "WindowMessage",
    "extractive_summary",
    "fit_window",
    "summarize",
]
