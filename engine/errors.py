"""One base error for the project; each subclass also inherits the builtin it really is."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(EngineError, ValueError):
    """A configuration file or value is invalid. The message names the key and the file."""


class InvalidIdError(EngineError, ValueError):
    """A character or user id that could escape the data folder or is otherwise unusable."""


class DataFileError(EngineError, ValueError):
    """A data file (YAML) cannot be read; the message names the file and the line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.reason = message


class LLMError(EngineError, RuntimeError):
    """The LLM could not be reached, timed out, or answered with something unusable."""


class EmbedderError(EngineError, RuntimeError):
    """The embedding backend failed or is misconfigured."""


class TimeExpressionError(EngineError, ValueError):
    """Time parsing was called with unusable input (e.g. a naive `now`)."""
