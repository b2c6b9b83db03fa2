"""The HTTP service: OpenAI-compatible `/v1/chat/completions` with memory, and the memory API."""

from engine.service.app import create_app, factory
from engine.service.run import serve

__all__ = ["create_app", "factory", "serve"]
