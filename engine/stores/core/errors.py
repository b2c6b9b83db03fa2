"""Errors of the core-memory store; each is an `EngineError` and the builtin it really is."""

from __future__ import annotations

from engine.errors import EngineError


class FactNotFoundError(EngineError, KeyError):
    """No live fact with that id for that user."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0])


class FactTextError(EngineError, ValueError):
    """A fact's text is empty, too long or contains characters a fact may not hold."""


class FactStoreBusyError(EngineError, TimeoutError):
    """Another process held the user's fact file lock for longer than the configured wait."""
