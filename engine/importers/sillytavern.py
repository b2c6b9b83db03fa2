"""SillyTavern's cards and lorebooks in and out of a kioku character.

    kioku import card Seraphina.png            -> data/agents/Seraphina/ (persona + world book)
    kioku import lorebook Eldoria.json --char Seraphina
    kioku export card --char Seraphina -o out.png
    kioku export lorebook --char Seraphina --file Eldoria -o Eldoria.json

A card's fields become the persona (`character.yaml`: name, description and scenario as the
setting, personality, example messages); its `character_book` becomes the world-book file
`card-book.yaml`; the card itself (every field, the image) is kept in the character's
`sillytavern/` folder, so export writes back what kioku does not use and what the author edited
in kioku. A lorebook becomes one world-book file (`formats/sillytavern/worldinfo.py` says how each
field maps). Written atomically; an existing file or character is never overwritten unless asked;
a file kioku's world book would refuse is refused before anything is written, with its entry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.admin import create_character
from engine.character import Character
from engine.config import EngineConfig
from engine.errors import EngineError
from engine.fileio import atomic_write_bytes, atomic_write_text, dump_yaml, load_yaml_file, read_bytes_capped
from engine.formats.sillytavern.cards import (
    MAX_FILE_BYTES, PNG_SIGNATURE, Card, card_charx, card_from, card_json, card_png, is_card, read_card,
)
from engine.formats.sillytavern.errors import FormatError, read_json
from engine.formats.sillytavern.worldinfo import Lorebook, lorebook_from, lorebook_json, read_lorebook
from engine.importers.steps import require_character
from engine.paths import CharacterPaths, character_id_for, character_paths, validate_id
from engine.stores.worldbook.parse import parse_text

CARD_BOOK = "card-book"
"""World-book file name (without .yaml) of a card's embedded lorebook."""
SHAPES = ("worldinfo", "lorebook_v3", "character_book")


class SillyTavernImportError(EngineError, ValueError):
    """Cannot import or export here (no such character, one exists, a world-book file differs)."""


@dataclass(frozen=True)
class Imported:
    character_id: str
    files: tuple[str, ...]
    """What was written."""
    entries: int
    """World-book entries imported."""

    def __str__(self) -> str:
        return f"{self.character_id}: {self.entries} world-book entries; wrote " + ", ".join(self.files)


def import_card(path: Path, config: EngineConfig, *, character_id: str | None = None, overwrite: bool = False) -> Imported:
    data = read_bytes_capped(Path(path), max_bytes=MAX_FILE_BYTES)
    card = read_card(data, file=str(path))
    char_id = validate_id(character_id or _id_for(card.name), kind="character id")
    paths = character_paths(config.data_dir, char_id)
    book_text = _book_text(card.book, str(paths.world_book_dir / f"{CARD_BOOK}.yaml")) if card.book else None
    persona = Character(
        name=card.name.strip(),
        settings=_settings(card),
        personality=card.text("personality").strip(),
        message_examples=card.text("mes_example").strip(),
    )
    if paths.root.exists() and not overwrite:
        raise SillyTavernImportError(f"character {char_id!r} exists ({paths.root}); choose another id with --char, "
                           "or --overwrite to replace its persona and card")
    if not create_character(config, char_id, persona):
        atomic_write_text(paths.character_file, dump_yaml(persona.model_dump(exclude_defaults=True)))
    written = [str(paths.character_file)]
    folder = paths.root / "sillytavern"
    folder.mkdir(exist_ok=True)
    atomic_write_text(folder / "card.json", json.dumps(card_json(card, None), ensure_ascii=False, indent=2))
    written.append(str(folder / "card.json"))
    if card.image is not None:
        atomic_write_bytes(folder / "card.png", card.image)
        written.append(str(folder / "card.png"))
    if card.archive is not None:  # its assets go back out with the card
        atomic_write_bytes(folder / "card.charx", card.archive)
        written.append(str(folder / "card.charx"))
    if book_text is not None:
        target = paths.world_book_dir / f"{CARD_BOOK}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, book_text)
        written.append(str(target))
    return Imported(char_id, tuple(written), len(card.book.entries) if card.book else 0)


def import_lorebook(path: Path, config: EngineConfig, *, character_id: str, name: str | None = None,
                    overwrite: bool = False) -> Imported:
    paths = _existing(config, character_id)
    book = read_lorebook(read_bytes_capped(Path(path), max_bytes=MAX_FILE_BYTES), file=str(path))
    stem = validate_id(name or _id_for(Path(path).stem), kind="world-book file name")
    target = paths.world_book_dir / f"{stem}.yaml"
    text = _book_text(book, str(target))
    if target.exists() and target.read_text(encoding="utf-8") != text and not overwrite:
        raise SillyTavernImportError(f"{target} exists and differs; --overwrite replaces it, or --name picks another file")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)
    return Imported(paths.root.name, (str(target),), len(book.entries))


def export_lorebook(config: EngineConfig, *, character_id: str, name: str, shape: str | None = None) -> bytes:
    """A world-book file as SillyTavern JSON: the shape it came in (or `shape`)."""
    paths = _existing(config, character_id)
    file = paths.world_book_dir / f"{validate_id(name, kind='world-book file name')}.yaml"
    if not file.is_file():
        have = sorted(p.stem for p in paths.world_book_dir.glob("*.yaml")) if paths.world_book_dir.is_dir() else []
        raise SillyTavernImportError(f"no world-book file {file.name} for {character_id!r} (files: {', '.join(have) or 'none'})")
    entries, extra, came = _book_file(file)
    return _dump(lorebook_json(entries, shape or came, extra))


def export_card(config: EngineConfig, *, character_id: str, fmt: str = "png") -> bytes:
    """The character as a card: the imported one with kioku's edits, or a new V2 card."""
    paths = _existing(config, character_id)
    persona = Character.model_validate(load_yaml_file(paths.character_file) or {})
    stored = paths.root / "sillytavern" / "card.json"
    if stored.is_file():
        card = card_from(json.loads(stored.read_text(encoding="utf-8")), file=str(stored))
    else:
        card = Card("chara_card_v2", {"name": persona.name}, None, None, {"spec_version": "2.0"})
    data = dict(card.data)
    data["name"] = persona.name
    if persona.personality != card.text("personality").strip():
        data["personality"] = persona.personality
    if persona.message_examples != card.text("mes_example").strip():
        data["mes_example"] = persona.message_examples
    if persona.settings != _settings(card):
        data["description"], data["scenario"] = persona.settings, ""
    card = Card(card.spec, data, None, card.image, card.outer)
    book = None
    book_file = paths.world_book_dir / f"{CARD_BOOK}.yaml"
    if book_file.is_file():
        entries, extra, _ = _book_file(book_file)
        book = lorebook_json(entries, "character_book", extra)
    doc = card_json(card, book)
    if fmt == "json":
        return _dump(doc)
    if fmt == "charx":
        archive = paths.root / "sillytavern" / "card.charx"
        return card_charx(doc, archive.read_bytes() if archive.is_file() else None)
    image = paths.root / "sillytavern" / "card.png"
    return card_png(doc, image.read_bytes() if image.is_file() else None)


def check_file(path: Path) -> list[str]:
    """What an import of this card or lorebook would refuse (each naming the file and where), or []."""
    data = read_bytes_capped(Path(path), max_bytes=MAX_FILE_BYTES)
    try:
        if data.startswith((PNG_SIGNATURE, b"PK\x03\x04")):
            book = read_card(data, file=str(path)).book
        else:
            doc = read_json(data, file=str(path))
            book = card_from(doc, file=str(path)).book if is_card(doc) else lorebook_from(doc, file=str(path))
        if book is not None:
            _book_text(book, f"{path} (as a world-book file)")
    except FormatError as exc:
        return [str(exc)]
    return []


# -- helpers ------------------------------------------------------------------------------------


def _book_text(book: Lorebook, where: str) -> str:
    """The world-book YAML of `book`, checked by the world book's own parser first (`where` names
    the file it becomes, in errors)."""
    text = dump_yaml(book.to_yaml_data())
    _, errors = parse_text(text, file=where, name=Path(where).name)
    if errors:
        first = errors[0]
        n = _entry_at(text, first.line)
        raise FormatError(where, f"entry {n}" if n else None, f"{first.message} ({len(errors)} problem(s) in all)")
    return text


def _entry_at(text: str, line: int | None) -> int | None:
    if not line:
        return None
    starts = [i for i, row in enumerate(text.splitlines()[:line], 1) if row.startswith("- ")]
    return len(starts) or None


def _book_file(file: Path) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    doc = load_yaml_file(file)
    if isinstance(doc, list):
        return doc, {}, "worldinfo"
    if isinstance(doc, dict) and isinstance(doc.get("entries"), list):
        st = (doc.get("extra") or {}).get("sillytavern") or {}
        return doc["entries"], st.get("book") or {}, st.get("shape") or "worldinfo"
    if isinstance(doc, dict):  # the simple format: keyword: description
        return [{"keys": [str(k)], "content": f"{k}: {v}"} for k, v in doc.items()], {}, "worldinfo"
    raise FormatError(str(file), None, "not a world-book file")


def _existing(config: EngineConfig, character_id: str) -> CharacterPaths:
    return require_character(config, character_id, error=SillyTavernImportError)


def _settings(card: Card) -> str:
    """The persona's setting: the card's description, then its scenario."""
    scenario = card.text("scenario").strip()
    return "\n\n".join(t for t in (card.text("description").strip(), f"Scenario: {scenario}" if scenario else "") if t)


def _id_for(name: str) -> str:
    return character_id_for(re.sub(r"[\\/]", "_", name.strip()) or "card")


def _dump(doc: Any) -> bytes:
    return (json.dumps(doc, ensure_ascii=False, indent=4) + "\n").encode("utf-8")
