"""The one error of SillyTavern's files: which file, where in it, what is wrong."""

from __future__ import annotations

from engine.errors import EngineError


class FormatError(EngineError, ValueError):
    """A file kioku cannot read as the format it claims; nothing is imported from it."""

    def __init__(self, file: str, where: str | None, message: str) -> None:
        self.file, self.where, self.message = file, where, message
        super().__init__(f"{file}: {where}: {message}" if where else f"{file}: {message}")
