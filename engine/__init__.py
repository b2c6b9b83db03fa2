"""kioku (記憶): a multi-tier character memory engine.

    from engine import MemoryOrchestrator
    orch = MemoryOrchestrator.from_config("xiaoyue")
    result = orch.build_prompt("昨天我们聊了什么？", user_id="linzhou")
"""

from engine.adapters.embedder import Embedder
from engine.adapters.llm import LLM, OpenAIChatLLM, ScriptedLLM
from engine.character import Character, load_character
from engine.config import EngineConfig, load_config
from engine.errors import (
    ConfigError,
    DataFileError,
    EmbedderError,
    EngineError,
    InvalidIdError,
    LLMError,
    TimeExpressionError,
)
from engine.orchestrator import MemoryOrchestrator, PromptResult
from engine.stores.base import Hit, Query, Store, Turn

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Character",
    "ConfigError",
    "DataFileError",
    "Embedder",
    "EmbedderError",
    "EngineConfig",
    "EngineError",
    "Hit",
    "InvalidIdError",
    "LLMError",
    "MemoryOrchestrator",
    "OpenAIChatLLM",
    "PromptResult",
    "Query",
    "ScriptedLLM",
    "Store",
    "TimeExpressionError",
    "Turn",
    "load_character",
    "load_config",
]
