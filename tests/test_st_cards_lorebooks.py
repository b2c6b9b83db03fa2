"""SillyTavern cards and lorebooks through `kioku import` / `kioku export` (issue 38 item 3): the
fixtures (tests/fixtures/sillytavern/, built from the specs and SillyTavern 1.12.6's own entry
template) come in as characters and world-book files, go out unchanged, and fire as they did;
hostile files give an error naming the file and where, and nothing is written."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from engine.cli import main
from engine.config import WorldBookConfig
from engine.formats.sillytavern.errors import FormatError
from engine.formats.sillytavern.cards import BLANK_PNG, card_png, png_text_chunks, read_card
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.worldbook import WorldBookStore
from engine.stores.worldbook.parse import parse_file

from worldbook_kit import retrieve

FIXTURES = Path(__file__).parent / "fixtures" / "sillytavern"
# Ours, and (st-*) ones built independently from the specs and SillyTavern 1.12.6's source by
# make_card_fixtures.py with struct/zlib/zipfile only (not kioku's writers): a PNG as 1.12.6 writes
# one (a V2 card plus its relabelled ccv3 chunk), a V1 PNG, a V3 PNG and JSON, a CHARX.
LOREBOOKS = ["eldoria-worldinfo.json", "chongqing-worldinfo-zh.json", "stars-lorebook-v3.json",
             "st-worldinfo-harbor.json", "st-worldinfo-jianghu-zh.json", "st-lorebook-v3-observatory.json"]
CARDS = ["xiaoyue-v2.json", "ann-v3.json", "pip-v1.json", "st-card-v1-marta.json", "st-card-v2-xiaoyue-zh.json",
         "st-card-v3-rhea.json"]
CARD_FILES = [("st-card-v1-marta.png", "png"), ("st-card-v2-xiaoyue-st1126.png", "png"), ("st-card-v3-rhea.png", "png"),
              ("st-card-v3-lumen.charx", "charx")]


def kioku(data: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data)])


def _character(data: Path, name: str = "host") -> None:
    folder = data / "agents" / name
    folder.mkdir(parents=True)
    (folder / "character.yaml").write_text(f"name: {name}\n", encoding="utf-8")


@pytest.mark.parametrize("fixture", LOREBOOKS)
def test_a_lorebook_round_trip_is_lossless(tmp_path, fixture, capsys):
    data = tmp_path / "data"
    _character(data)
    assert kioku(data, "import", "lorebook", str(FIXTURES / fixture), "--char", "host", "--name", "book") == 0
    yaml_file = data / "agents" / "host" / "data_base" / "book.yaml"
    parsed = parse_file(yaml_file)
    original = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    assert not parsed.errors and len(parsed.entries) == len(
        original["entries"] if "entries" in original else original["data"]["entries"])
    out = tmp_path / "out.json"
    assert kioku(data, "export", "lorebook", "--char", "host", "--file", "book", "-o", str(out)) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == original  # every field, unchanged
    first = yaml_file.read_text(encoding="utf-8")
    assert kioku(data, "import", "lorebook", str(out), "--char", "host", "--name", "book") == 0
    assert yaml_file.read_text(encoding="utf-8") == first


def test_an_edit_in_kioku_goes_out_and_the_rest_stays(tmp_path):
    data = tmp_path / "data"
    _character(data)
    kioku(data, "import", "lorebook", str(FIXTURES / "eldoria-worldinfo.json"), "--char", "host", "--name", "eldoria")
    yaml_file = data / "agents" / "host" / "data_base" / "eldoria.yaml"
    text = yaml_file.read_text(encoding="utf-8").replace("Eldoria is a kingdom of rivers and bridges.",
                                                          "Eldoria is a kingdom of canals.")
    yaml_file.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    kioku(data, "export", "lorebook", "--char", "host", "--file", "eldoria", "-o", str(out))
    got = json.loads(out.read_text(encoding="utf-8"))["entries"]["0"]
    want = json.loads((FIXTURES / "eldoria-worldinfo.json").read_text(encoding="utf-8"))["entries"]["0"]
    assert got == {**want, "content": "Eldoria is a kingdom of canals."}


def _store(data: Path, name: str, **config) -> WorldBookStore:
    return WorldBookStore(paths=CharacterPaths(data / "agents" / name),
                          config=WorldBookConfig(**{"semantic": False, "check_interval_s": 0, **config}),
                          embedder=_NoEmbedder(), prompts=Prompts("en"), budget_tokens=10_000)


class _NoEmbedder:
    model_id, dim, default_thresholds = "none", 4, {"world_book": 0.5}

    def embed(self, texts, *, role="passage"):
        raise AssertionError("keyword-only")


@pytest.mark.parametrize("message, fired", [
    ("Tell me about Eldoria", ["Eldoria is a kingdom", "Magic has a price."]),
    ("a dragon egg", ["Magic has a price."]),                     # and_all: egg and nest both needed
    ("the DRAGONS have an egg in the nest", ["Dragons guard", "Magic has a price."]),  # /regex/i
    ("pip is here", ["Magic has a price."]),                       # case-sensitive key
    ("the secret", ["Magic has a price."]),                        # delay 4: the chat is too short
    ("unused x", ["Magic has a price."]),                          # disabled
])
def test_imported_entries_fire_as_sillytavern_says(tmp_path, message, fired):
    data = tmp_path / "data"
    _character(data)
    kioku(data, "import", "lorebook", str(FIXTURES / "eldoria-worldinfo.json"), "--char", "host", "--name", "eldoria")
    hits = retrieve(_store(data, "host", recursion_depth=0), message)
    assert len(hits) == len(fired) and all(any(h.text.startswith(f) for h in hits) for f in fired), hits


def test_a_sticky_imported_entry_stays_after_its_delay(tmp_path):
    data = tmp_path / "data"
    _character(data)
    kioku(data, "import", "lorebook", str(FIXTURES / "eldoria-worldinfo.json"), "--char", "host", "--name", "eldoria")
    recent = []
    for n in range(3):
        recent += [{"role": "user", "content": "the secret" if n == 2 else f"hi {n}"}, {"role": "assistant", "content": "ok"}]
    hits = retrieve(_store(data, "host"), "go on", tuple(recent))
    assert any(h.text == "The queen is a dragon." and h.reason.startswith("sticky") for h in hits)


def _v3_png() -> bytes:
    doc = json.loads((FIXTURES / "ann-v3.json").read_text(encoding="utf-8"))
    return card_png(doc, BLANK_PNG)


def _charx() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("card.json", (FIXTURES / "xiaoyue-v2.json").read_text(encoding="utf-8"))
        z.writestr("assets/icon/main.png", BLANK_PNG)
    return buf.getvalue()


@pytest.mark.parametrize("name, make, fmt", [
    *[(c, None, "json") for c in CARDS],
    *[(c, None, fmt) for c, fmt in CARD_FILES],
    ("ann-v3.png", _v3_png, "png"),
    ("xiaoyue.charx", _charx, "charx"),
])
def test_a_card_comes_in_as_a_character_and_goes_out_unchanged(tmp_path, name, make, fmt):
    data = tmp_path / "data"
    src = FIXTURES / name if make is None else tmp_path / name
    if make is not None:
        src.write_bytes(make())
    original = read_card(src.read_bytes(), file=name)
    assert kioku(data, "import", "card", str(src), "--char", "c1") == 0
    char_yaml = (data / "agents" / "c1" / "character.yaml").read_text(encoding="utf-8")
    assert f"name: {original.name}" in char_yaml
    assert original.text("description").split("。")[0][:12] in char_yaml
    if original.book is not None:
        assert not parse_file(data / "agents" / "c1" / "data_base" / "card-book.yaml").errors
    out = tmp_path / f"out.{fmt}"
    assert kioku(data, "export", "card", "--char", "c1", "-o", str(out)) == 0
    back = read_card(out.read_bytes(), file="out")
    assert (back.spec, back.data, back.outer) == (original.spec, original.data, original.outer)
    assert (back.book.entries if back.book else None) == (original.book.entries if original.book else None)
    if fmt == "png":  # a V3 card also in ccv3, as SillyTavern writes it; every card in chara
        want = {"chara", "ccv3"} if original.spec == "chara_card_v3" else {"chara"}
        assert set(png_text_chunks(out.read_bytes(), file="out")) & {"chara", "ccv3"} == want
    if fmt == "charx":  # its assets and other members go back out as they came
        assert _members(out.read_bytes()) == _members(src.read_bytes())
        again = tmp_path / "again.charx"
        assert kioku(data, "import", "card", str(out), "--char", "c2") == 0
        assert kioku(data, "export", "card", "--char", "c2", "-o", str(again)) == 0
        assert _members(again.read_bytes()) == _members(src.read_bytes())


def _members(charx: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(charx)) as z:
        return {n: z.read(n) for n in z.namelist() if n != "card.json"}


def test_a_png_card_with_both_chunks_is_read_from_ccv3():
    card = read_card(_v3_png(), file="ann.png")
    assert card.spec == "chara_card_v3" and card.data["nickname"] == "Annie"


def _png_chunk(kind: bytes, body: bytes, *, length: int | None = None, crc: int | None = None) -> bytes:
    return (struct.pack(">I", len(body) if length is None else length) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) if crc is None else crc))


_IHDR = BLANK_PNG[8:33]
_GOOD_TEXT = _png_chunk(b"tEXt", b"chara\0" + base64.b64encode(b'{"name": "x"}'))
_IEND = _png_chunk(b"IEND", b"")
HOSTILE = [
    ("truncated.png", _v3_png()[:300], "truncated"),
    ("huge-chunk.png", b"\x89PNG\r\n\x1a\n" + _IHDR + struct.pack(">I", 50 * 1024 * 1024) + b"tEXt" + b"chara\0",
     "chunk 'tEXt'"),
    ("bad-crc.png", b"\x89PNG\r\n\x1a\n" + _IHDR + _png_chunk(b"tEXt", b"chara\0eyJ9", crc=1) + _IEND, "bad CRC"),
    ("not-base64.png", b"\x89PNG\r\n\x1a\n" + _IHDR + _png_chunk(b"tEXt", b"chara\0%%%") + _IEND, "not base64"),
    ("deep.json", b"[" * 10_000 + b"]" * 10_000, "nested deeper"),
    ("types.json", json.dumps({"spec": "chara_card_v2", "data": {"name": "x", "description": 5}}).encode(),
     "field 'description'"),
    ("bomb.charx", None, "card.json"),
    ("climbing.charx", "../../escape.png", "a path outside the archive"),
    ("absolute.charx", "/etc/cron.d/x", "a path outside the archive"),
    ("asset-bomb.charx", "assets/big.bin", "the assets pass"),
    ("runaway.json", json.dumps({"name": "x", "description": "", "character_book": {"entries": [
        {"keys": ["ok"], "content": "fine"}, {"keys": ["/(a+)+$/"], "content": "slow"}]}}).encode(), "entry 2"),
]


def _bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", b" " * (40 * 1024 * 1024))
    return buf.getvalue()


def _charx_with(member: str) -> bytes:
    """A good card with one more member (`assets/big.bin` holds 65 MB of zeros, a few KB zipped)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", (FIXTURES / "xiaoyue-v2.json").read_text(encoding="utf-8"))
        z.writestr(member, b"\0" * (65 * 1024 * 1024) if member.endswith("big.bin") else BLANK_PNG)
    return buf.getvalue()


@pytest.mark.parametrize("name, body, says", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_card_is_a_clear_error_and_writes_nothing(tmp_path, capsys, name, body, says):
    data = tmp_path / "data"
    _character(data, "kept")
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    src = tmp_path / name
    src.write_bytes(_bomb() if body is None else _charx_with(body) if name.endswith(".charx") else body)
    assert kioku(data, "import", "card", str(src)) != 0
    err = capsys.readouterr().err
    assert name in err and says in err, err
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


def test_a_good_png_text_chunk_alone_is_not_enough_without_iend(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + _IHDR + _GOOD_TEXT
    with pytest.raises(FormatError, match=r"x\.png: byte \d+: the PNG is truncated"):
        read_card(png, file="x.png")


@pytest.mark.parametrize("name, body, code, says", [
    ("good.json", (FIXTURES / "eldoria-worldinfo.json").read_bytes(), 0, "good.json: ok"),
    ("card.json", (FIXTURES / "xiaoyue-v2.json").read_bytes(), 0, "card.json: ok"),
    ("slow.json", json.dumps({"entries": {"0": {"key": ["ok"], "content": "a"}, "1": {"key": ["/(a+)+$/"], "content": "b"}}}).encode(),
     1, "slow.json: entry 2 (uid 1)"),
    ("flags.json", json.dumps({"entries": {"0": {"key": ["/x/y"], "content": "a"}}}).encode(), 1, "flags.json (as a world-book file)"),
    ("cut.png", _v3_png()[:200], 1, "cut.png: chunk"),
])
def test_kioku_check_names_the_file_and_entry_of_a_sillytavern_file(tmp_path, capsys, name, body, code, says):
    src = tmp_path / name
    src.write_bytes(body)
    assert main(["check", str(src)]) == code
    assert says in capsys.readouterr().out
