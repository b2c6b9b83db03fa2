"""World-book files: both formats, every field, and malformed files reported with file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.stores.worldbook import BookError, format_errors, validate_folder
from engine.stores.worldbook.parse import FIELDS, parse_file, parse_text


def parse_ok(text: str):
    entries, errors = parse_text(text, file="t.yaml", name="t.yaml")
    assert errors == []
    return entries


class TestSimpleFormat:
    """MoeChat's `关键词: 详细描述` mapping, unchanged."""

    def test_each_pair_is_an_entry_injected_as_keyword_colon_description(self):
        entries = parse_ok("重庆: 山城，火锅之都\nParis: capital of France\n2077: 故事发生的年份\n")
        assert [e.content for e in entries] == ["重庆: 山城，火锅之都", "Paris: capital of France", "2077: 故事发生的年份"]
        assert [[k.text for k in e.keys] for e in entries] == [["重庆"], ["Paris"], ["2077"]]
        assert [e.line for e in entries] == [1, 2, 3]
        assert [e.uid for e in entries] == ["t.yaml#1", "t.yaml#2", "t.yaml#3"]
        first = entries[0]
        assert (first.constant, first.enabled, first.order, first.semantic) == (False, True, 100, True)

    def test_multiline_description(self):
        (entry,) = parse_ok("小月: |\n  橘猫。\n  很胖。\n")
        assert entry.content == "小月: 橘猫。\n很胖。"

    def test_a_regex_keyword_is_allowed(self):
        (entry,) = parse_ok("'/chong\\s*qing/i': 重庆的拼音\n")
        assert entry.keys[0].regex is not None and entry.keys[0].regex.flags & re.IGNORECASE


class TestExtendedFormat:
    """A list of entries at the top level or under `entries:`."""

    FULL = """\
- keys: [重庆, /chong\\s*qing/i]
  secondary_keys: [火锅, 夜景]
  logic: and_all
  content: 重庆是山城。
  constant: false
  enabled: true
  order: 7
  case_sensitive: true
  whole_words: false
  semantic: false
  threshold: 0.9
  comment: 作者备注
"""

    def test_every_field(self):
        (e,) = parse_ok(self.FULL)
        assert [k.text for k in e.keys] == ["重庆", "/chong\\s*qing/i"]
        assert e.keys[0].regex is None and e.keys[1].regex is not None
        assert [k.text for k in e.secondary_keys] == ["火锅", "夜景"]
        assert (e.logic, e.content, e.constant, e.enabled, e.order) == ("and_all", "重庆是山城。", False, True, 7)
        assert (e.case_sensitive, e.whole_words, e.semantic, e.threshold, e.comment) == (
            True, False, False, 0.9, "作者备注"
        )
        assert e.semantic_keys == ()  # semantic: false

    def test_the_schema_lists_every_documented_field(self):
        text = _readme_world_book_section()
        for name in FIELDS:
            assert f"`{name}`" in text, name

    def test_entries_key_and_single_string_key(self):
        entries = parse_ok("entries:\n  - keys: 重庆\n    content: 山城\n  - constant: true\n    content: 没有手机\n")
        assert [[k.text for k in e.keys] for e in entries] == [["重庆"], []]
        assert entries[1].constant and entries[1].semantic_keys == ()
        assert [e.line for e in entries] == [2, 4]

    def test_semantic_keys_skip_regexes_and_duplicates(self):
        (e,) = parse_ok("- keys: [a, /b/, a, c]\n  content: x\n")
        assert e.semantic_keys == ("a", "c")

    def test_both_formats_in_one_folder(self, tmp_path):
        (tmp_path / "simple.yaml").write_text("重庆: 山城\n", encoding="utf-8")
        (tmp_path / "extended.yml").write_text("- keys: [a]\n  content: b\n", encoding="utf-8")
        assert validate_folder(tmp_path) == []
        assert len(parse_file(tmp_path / "simple.yaml").entries) == 1
        assert len(parse_file(tmp_path / "extended.yml").entries) == 1


GOOD = "- keys: [ok]\n  content: fine\n"

# (id, file bytes, expected 1-based line, a fragment of the message)
MALFORMED = [
    ("bad-indentation", b"a: b\n  c: d\n", 2, "indentation"),
    ("tab", b"- keys: [a]\n\tcontent: b\n", 2, "tab"),
    ("duplicate-key", "重庆: 山城\n成都: 天府\n重庆: 又一个\n".encode(), 3, "duplicate key '重庆' (first at line 1)"),
    ("list-for-mapping", b"- keys: [a]\n  content: b\n- - keys\n  - content\n", 3, "must be a mapping"),
    ("wrong-type", b"- keys: [a]\n  content: b\n- keys: [c]\n  content: d\n  order: \"high\"\n", 5, "'order'"),
    ("empty-file", b"", 1, "no entries"),
    ("invalid-utf8", "重庆: 山城\n成都: 天府\n".encode() + b"bad: \xff\xfe\n", 3, "invalid UTF-8 byte 0xff"),
    ("bad-regex", b"- keys: [a]\n  content: b\n- keys:\n    - ok\n    - /[unclosed/\n  content: c\n", 5, "bad regex"),
    ("unknown-field", b"- keys: [a]\n  content: b\n  priority: 3\n", 3, "unknown field 'priority'"),
    ("no-keys", b"- keys: [a]\n  content: b\n- content: orphan\n", 3, "has no keys"),
    ("missing-content", b"- keys: [a]\n", 1, "missing field 'content'"),
    ("list-as-description", b"a: b\nc:\n  - d\n", 3, "must be text, got a list"),
    ("bad-logic", b"- keys: [a]\n  secondary_keys: [b]\n  logic: and_some\n  content: c\n", 3, "'logic'"),
    ("bad-regex-flag", b"- keys: ['/a/q']\n  content: c\n", 1, "unknown regex flag 'q'"),
    ("scalar-top-level", b"just text\n", 1, "top level must be a mapping"),
    ("entries-plus-junk", b"entries:\n  - keys: [a]\n    content: b\nother: 1\n", 4, "unknown top-level key"),
]


class TestMalformed:
    """Each broken file is reported with its file and line, and the good files still load."""

    @pytest.mark.parametrize(("data", "line", "fragment"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
    def test_reported_with_file_and_line(self, tmp_path, data, line, fragment):
        (tmp_path / "good.yaml").write_text(GOOD, encoding="utf-8")
        (tmp_path / "broken.yaml").write_bytes(data)
        errors = validate_folder(tmp_path)
        assert len(errors) >= 1
        error = errors[0]
        assert isinstance(error, BookError)
        assert Path(error.file).name == "broken.yaml"
        assert error.line == line, error
        assert fragment in error.message, error
        assert str(error).startswith(f"{error.file}:{line}: ")
        assert parse_file(tmp_path / "broken.yaml").entries == ()
        assert len(parse_file(tmp_path / "good.yaml").entries) == 1

    def test_all_errors_of_a_file_are_reported(self):
        text = "- keys: [a]\n  content: b\n  order: high\n- content: c\n- keys: [d]\n  content: e\n  colour: red\n"
        _, errors = parse_text(text, file="f.yaml", name="f.yaml")
        assert [e.line for e in errors] == [3, 4, 7]

    def test_format_errors_and_missing_folder(self, tmp_path):
        errors = [BookError("a.yaml", 3, "bad"), BookError("b.yaml", None, "worse")]
        assert format_errors(errors) == "a.yaml:3: bad\nb.yaml: worse"
        (missing,) = validate_folder(tmp_path / "nope")
        assert "no such folder" in missing.message

    def test_byte_order_mark_is_accepted(self):
        from engine.stores.worldbook.parse import parse_bytes

        parsed = parse_bytes("\ufeff重庆: 山城\n".encode(), path=Path("bom.yaml"))
        assert parsed.errors == () and parsed.entries[0].keys[0].text == "重庆"


class TestExamples:
    def test_the_example_folder_and_the_format_doc_examples_are_valid(self):
        folder = Path(__file__).parent / "data/worldbook/example"
        assert validate_folder(folder) == []
        doc = _readme_world_book_section()
        blocks = re.findall(r"```yaml\n(.*?)```", doc, re.DOTALL)
        assert len(blocks) == 2
        for block in blocks:
            assert parse_ok(block)

    def test_numbers_are_keys_but_booleans_are_not(self):
        (e,) = parse_ok("- keys: 2077\n  content: 年份\n  threshold: 1\n")
        assert e.keys[0].text == "2077" and e.threshold == 1.0
        _, errors = parse_text("- keys: [a, true]\n  content: x\n", file="f", name="f")
        assert "keys.1" in errors[0].message


def _readme_world_book_section() -> str:
    """The manual's world-book page: the format documentation users read."""
    return (Path(__file__).parents[1] / "docs" / "world-book.md").read_text(encoding="utf-8")
