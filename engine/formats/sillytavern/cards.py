"""Character cards: PNG (a `chara` and/or `ccv3` text chunk holding base64 JSON), JSON (V1 flat,
`chara_card_v2`, `chara_card_v3`) and CHARX (a zip with `card.json`), read and written.

Untrusted files: a PNG is walked chunk by chunk with its lengths and CRCs checked against the
bytes actually there, a chunk or file over its limit is refused before it is read into memory, a
CHARX member is read only by name (`card.json`) with its uncompressed size bounded, and nothing in
a card names a path kioku writes to. Every refusal names the file and the chunk, member or field.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import struct
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from engine.formats.sillytavern.errors import FormatError, read_json
from engine.formats.sillytavern.worldinfo import Lorebook, lorebook_from

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_TEXT_CHUNK = 16 * 1024 * 1024
MAX_ASSET_BYTES = 64 * 1024 * 1024
"""A CHARX's members besides card.json, uncompressed, in all (images, a module)."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CARD_CHUNKS = ("ccv3", "chara")
"""Preferred first: a V3 card's own chunk, then the V2 one SillyTavern also writes."""
TEXT_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
"""The V1 fields, also the core of V2 and V3."""
# A 1x1 transparent PNG for a card that came without an image.
BLANK_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


@dataclass(frozen=True)
class Card:
    spec: str
    """"chara_card_v1", "chara_card_v2" or "chara_card_v3"."""
    data: dict[str, Any]
    """The card's fields (V1's top level, V2/V3's `data`) without `character_book`, verbatim."""
    book: Lorebook | None
    """The embedded `character_book`, as world-book entries."""
    image: bytes | None = None
    """The PNG the card came in (written back on export)."""
    outer: dict[str, Any] = field(default_factory=dict)
    """V2/V3 fields beside `data` (`spec_version`, ...), verbatim."""
    archive: bytes | None = None
    """The CHARX the card came in: its members besides `card.json` (the assets its `data.assets`
    names, a module's files) are written back on export."""

    @property
    def name(self) -> str:
        return str(self.data.get("name") or "")

    def text(self, key: str) -> str:
        value = self.data.get(key)
        return value if isinstance(value, str) else ""


def read_card(data: bytes, *, file: str) -> Card:
    if len(data) > MAX_FILE_BYTES:
        raise FormatError(file, None, f"the file is {len(data):,} bytes, over the limit of {MAX_FILE_BYTES:,}")
    if data.startswith(PNG_SIGNATURE):
        chunks = png_text_chunks(data, file=file)
        for name in CARD_CHUNKS:
            if name in chunks:
                doc = read_json(_b64(chunks[name], file=file, where=f"chunk {name!r}"), file=file, where=f"chunk {name!r}")
                return card_from(doc, file=file, image=data)
        raise FormatError(file, None, "a PNG without a `chara` or `ccv3` text chunk is not a character card")
    if data.startswith(b"PK\x03\x04"):
        card = card_from(read_json(_charx_card(data, file=file), file=file, where="member 'card.json'"), file=file)
        _charx_members(data, file=file)
        return replace(card, archive=data)
    return card_from(read_json(data, file=file), file=file)


def is_card(doc: Any) -> bool:
    """Whether a JSON document is a card (V2/V3 by its spec, V1 by its greeting) rather than a lorebook."""
    return isinstance(doc, dict) and (doc.get("spec") in ("chara_card_v2", "chara_card_v3") or "first_mes" in doc)


def card_from(doc: Any, *, file: str, image: bytes | None = None) -> Card:
    if not isinstance(doc, dict):
        raise FormatError(file, None, f"a card must be a JSON object, got {type(doc).__name__}")
    spec = doc.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3"):
        data = doc.get("data")
        if not isinstance(data, dict):
            raise FormatError(file, "field 'data'", f"a {spec} card keeps its fields in a `data` object")
        outer = {k: v for k, v in doc.items() if k != "data"}
    elif spec is None and "name" in doc:
        spec, data, outer = "chara_card_v1", doc, {}
    else:
        raise FormatError(file, "field 'spec'", f"unknown card spec {spec!r} (chara_card_v2, chara_card_v3, or a V1 card)")
    for key in TEXT_FIELDS:
        if key in data and data[key] is not None and not isinstance(data[key], str):
            raise FormatError(file, f"field {key!r}", f"must be text, got {type(data[key]).__name__}")
    if not str(data.get("name") or "").strip():
        raise FormatError(file, "field 'name'", "the card has no name")
    greetings = data.get("alternate_greetings", [])
    if not isinstance(greetings, list) or not all(isinstance(g, str) for g in greetings):
        raise FormatError(file, "field 'alternate_greetings'", "must be a list of texts")
    book = None
    if data.get("character_book") is not None:
        book = lorebook_from(data["character_book"], file=f"{file} (character_book)", shape="character_book")
    rest = {k: v for k, v in data.items() if k != "character_book"}
    return Card(spec, rest, book, image, outer)


def card_json(card: Card, book: dict[str, Any] | None) -> dict[str, Any]:
    """The card as its spec writes it, with `book` (a `character_book` document) embedded."""
    data = dict(card.data)
    if book is not None:
        data["character_book"] = book
    if card.spec == "chara_card_v1":
        return data
    return {"spec": card.spec, **card.outer, "data": data}


def card_png(card_doc: dict[str, Any], image: bytes | None) -> bytes:
    """A PNG holding `card_doc` as SillyTavern writes one: a `chara` chunk (V2-readable), and a
    `ccv3` chunk too for a V3 card; the image's own card chunks replaced."""
    png = image or BLANK_PNG
    text = base64.b64encode(json.dumps(card_doc, ensure_ascii=False).encode()).decode("ascii")
    chunks = [("chara", text)]
    if card_doc.get("spec") == "chara_card_v3":
        chunks.append(("ccv3", text))
        v2 = {**card_doc, "spec": "chara_card_v2", "spec_version": "2.0"}
        chunks[0] = ("chara", base64.b64encode(json.dumps(v2, ensure_ascii=False).encode()).decode("ascii"))
    out = bytearray(PNG_SIGNATURE)
    for kind, body in _chunks(png, file="image"):
        if kind == b"tEXt" and body.split(b"\0", 1)[0].decode("latin-1").lower() in CARD_CHUNKS:
            continue
        if kind == b"IEND":
            for keyword, value in chunks:
                out += _chunk(b"tEXt", keyword.encode("latin-1") + b"\0" + value.encode("ascii"))
        out += _chunk(kind, body)
    return bytes(out)


def png_text_chunks(data: bytes, *, file: str) -> dict[str, str]:
    """The PNG's tEXt chunks by (lower-case) keyword."""
    out: dict[str, str] = {}
    for kind, body in _chunks(data, file=file):
        if kind == b"tEXt":
            keyword, _, text = body.partition(b"\0")
            out[keyword.decode("latin-1").lower()] = text.decode("latin-1")
    return out


def _chunks(data: bytes, *, file: str):
    if not data.startswith(PNG_SIGNATURE):
        raise FormatError(file, None, "not a PNG (bad signature)")
    pos = len(PNG_SIGNATURE)
    while True:
        if pos + 8 > len(data):
            raise FormatError(file, f"byte {pos}", "the PNG is truncated (no IEND chunk)")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        name = kind.decode("latin-1", "replace")
        if kind == b"tEXt" and length > MAX_TEXT_CHUNK:
            raise FormatError(file, f"chunk {name!r} at byte {pos}",
                              f"{length:,} bytes, over the limit of {MAX_TEXT_CHUNK:,} for a text chunk")
        end = pos + 12 + length
        if end > len(data):
            raise FormatError(file, f"chunk {name!r} at byte {pos}",
                              f"says {length:,} bytes but the file ends {len(data) - pos - 12:,} bytes in (truncated)")
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        if zlib.crc32(kind + body) != crc:
            raise FormatError(file, f"chunk {name!r} at byte {pos}", "bad CRC (the file is damaged)")
        yield kind, body
        if kind == b"IEND":
            return
        pos = end


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _b64(text: str, *, file: str, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(file, where, f"not base64: {exc}") from None


def _charx_card(data: bytes, *, file: str) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            try:
                info = z.getinfo("card.json")
            except KeyError:
                raise FormatError(file, None, "a CHARX archive without `card.json`") from None
            if info.file_size > MAX_TEXT_CHUNK:
                raise FormatError(file, "member 'card.json'", f"{info.file_size:,} bytes uncompressed, over the "
                                  f"limit of {MAX_TEXT_CHUNK:,}")
            with z.open(info) as member:
                body = member.read(MAX_TEXT_CHUNK + 1)
            if len(body) > MAX_TEXT_CHUNK:
                raise FormatError(file, "member 'card.json'", "larger than its header says (a zip bomb?)")
            return body
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise FormatError(file, None, f"a damaged CHARX archive: {exc}") from None


def _charx_members(data: bytes, *, file: str) -> list[zipfile.ZipInfo]:
    """The members of a CHARX besides `card.json`, checked: a name that is absolute or climbs out of
    the archive (another program may extract it), or members over MAX_ASSET_BYTES uncompressed in
    all, are refused by name."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = [i for i in z.infolist() if i.filename != "card.json" and not i.is_dir()]
    total = 0
    for info in members:
        name = info.filename
        if name.startswith(("/", "\\")) or ":" in name.split("/")[0] or ".." in name.replace("\\", "/").split("/"):
            raise FormatError(file, f"member {name!r}", "a path outside the archive")
        total += info.file_size
        if total > MAX_ASSET_BYTES:
            raise FormatError(file, f"member {name!r}", f"the assets pass {MAX_ASSET_BYTES:,} bytes uncompressed")
    return members


def card_charx(card_doc: dict[str, Any], archive: bytes | None = None) -> bytes:
    """A CHARX of `card_doc`, with the other members of `archive` (the CHARX it came in) as they were."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", json.dumps(card_doc, ensure_ascii=False, indent=2))
        if archive is not None:
            with zipfile.ZipFile(io.BytesIO(archive)) as src:
                for info in _charx_members(archive, file="the stored card.charx"):
                    z.writestr(info, src.read(info.filename))
    return buf.getvalue()
