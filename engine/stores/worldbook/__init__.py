"""The world book: author-written lore in YAML files, matched by keyword and by meaning.

The file formats are documented in the manual (docs/world-book.md).
"""

from __future__ import annotations

from pathlib import Path

from engine.stores.worldbook.book import book_files
from engine.stores.worldbook.model import BookError, Entry, Key, format_errors
from engine.stores.worldbook.parse import parse_file
from engine.stores.worldbook.store import BookStatus, WorldBookStore

__all__ = [
    "BookError",
    "BookStatus",
    "Entry",
    "Key",
    "WorldBookStore",
    "format_errors",
    "validate_folder",
]


def validate_folder(path: Path | str) -> list[BookError]:
    """Every problem in every world-book file of `path` (`*.yaml`, `*.yml`); [] when all is well.

    For the CLI's `check`: print `format_errors(errors)` and exit non-zero when the list is not empty.
    """
    folder = Path(path)
    if not folder.is_dir():
        return [BookError(str(folder), None, "no such folder")]
    errors: list[BookError] = []
    for file in book_files(folder):
        errors.extend(parse_file(Path(file)).errors)
    return errors
