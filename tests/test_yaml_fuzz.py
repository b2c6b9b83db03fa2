"""Fuzzing the YAML loaders (bounded runs): every input either loads or raises the documented
error type with a file and line — never another exception, never a hang.

Inputs: YAML-ish noise, valid documents with random edits (anchors, aliases, brackets, tags,
impossible dates, control characters, lone surrogates), the shipped config.yaml and
character.yaml with random edits, and alias bombs of random shape. Each test prints its counts
(run with -s to see them)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.character import load_character
from engine.config import load_config
from engine.errors import ConfigError, DataFileError
from engine.fileio import SMALL_LIMITS, UniqueKeyLoader, YAMLLimits, check_yaml, parse_yaml
from engine.paths import character_paths

ROOT = Path(__file__).resolve().parent.parent
FUZZ = settings(
    max_examples=1500, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
TIGHT = YAMLLimits(max_bytes=20_000, max_depth=8, max_nodes=400, max_scalar_chars=200)

NOISE = list("-:?[]{},&*!|>'\"#%@` \n\n\n\t.0123456789abxyz") + ["小", "月", "\u3000", "\x00", "\x85", "\ufeff", "\ud800", "\u2028"]
FRAGMENTS = [
    "&a ", "*a", "&b [*a, *a]", "<<: *a\n", "<<: {x: 1}\n", "[", "]", "{", "}", "- ", ": ", "\n  ", "\n- ",
    "!!binary ", "!!timestamp ", "2026-02-30", "2026-13-01 25:00:00", "!!python/object:os.system ", "!!set ",
    "'", '"', "? ", "%YAML 1.1\n", "---\n", "...\n", "\t", "\x00", "\ud800", "0x", "!!int ", "!!float ",
    "~", "null", "雾川镇: ", "[" * 40, "]" * 40, "- " * 40, "x" * 300,
]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)


@st.composite
def edited(draw, base: st.SearchStrategy[str]) -> str:
    """`base` with a few random insertions, deletions and replacements."""
    text = draw(base)
    for _ in range(draw(st.integers(0, 5))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "noise"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)):]
        else:
            text = text[:at] + draw(st.text(st.sampled_from(NOISE), max_size=6)) + text[at:]
    return text


@st.composite
def bombs(draw) -> str:
    depth, width = draw(st.integers(2, 9)), draw(st.integers(2, 9))
    lines = [f"- &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"- &l{n} [{', '.join([f'*l{n - 1}'] * width)}]" for n in range(1, depth)]
    return "\n".join(lines) + "\n"


yaml_texts = st.one_of(
    st.text(st.sampled_from(NOISE), max_size=120),
    edited(documents.map(lambda d: yaml.safe_dump(d, allow_unicode=True))),
    edited(st.just("")),
)
CONFIG_TEXT = (ROOT / "config.yaml").read_text(encoding="utf-8")
CHARACTER_TEXT = (ROOT / "data/agents/xiaoyue/character.yaml").read_text(encoding="utf-8")


def _outcome(counts: Counter, call) -> None:
    try:
        call()
    except (DataFileError, ConfigError) as exc:
        assert str(exc).strip(), "an error with no message"
        counts[type(exc).__name__] += 1
    else:
        counts["ok"] += 1


@pytest.mark.timeout(600)
def test_parse_yaml_fuzz():
    counts: Counter = Counter()

    @FUZZ
    @given(st.one_of(yaml_texts, bombs()))
    def run(text):
        def call():
            try:
                parse_yaml(text, path="fuzz.yaml", limits=TIGHT)
            except DataFileError as exc:
                assert exc.path == "fuzz.yaml"
                raise
        _outcome(counts, call)

    run()
    print(f"\nparse_yaml: {sum(counts.values())} inputs, {dict(counts)}")
    assert counts["ok"] and counts["DataFileError"]


@pytest.mark.timeout(600)
def test_bombs_are_refused_with_the_line_of_the_first_alias():
    counts: Counter = Counter()

    @FUZZ
    @given(bombs())
    def run(text):
        with pytest.raises(DataFileError) as err:
            parse_yaml(text, path="bomb.yaml")
        assert "bomb.yaml:2: YAML aliases (*l0) are not allowed" in str(err.value)
        counts["refused"] += 1

    run()
    print(f"\nbombs: {counts['refused']} refused")


@pytest.mark.timeout(600)
def test_loader_class_raises_only_yaml_errors():
    """Stores that call `yaml.load(text, Loader=UniqueKeyLoader)` themselves catch yaml.YAMLError."""
    counts: Counter = Counter()

    @FUZZ
    @given(st.one_of(yaml_texts, bombs()))
    def run(text):
        try:
            yaml.load(text, Loader=UniqueKeyLoader.with_limits(TIGHT))  # noqa: S506 - a safe loader
            check_yaml(text, TIGHT)
            counts["ok"] += 1
        except yaml.MarkedYAMLError as exc:
            assert (exc.problem_mark or exc.context_mark) is not None
            counts["MarkedYAMLError"] += 1
        except yaml.YAMLError:
            counts["YAMLError"] += 1

    run()
    print(f"\nUniqueKeyLoader: {sum(counts.values())} inputs, {dict(counts)}")
    assert counts["ok"] and counts["MarkedYAMLError"]


def _write(path: Path, text: str) -> None:
    # Files hold bytes: a lone surrogate cannot be in one, so it becomes an invalid byte instead.
    path.write_bytes(text.encode("utf-8", "surrogateescape") if "\ud800" not in text else text.replace("\ud800", "\udcff").encode("utf-8", "surrogateescape"))


@pytest.mark.timeout(600)
def test_load_config_fuzz(tmp_path):
    counts: Counter = Counter()
    path = tmp_path / "config.yaml"

    @FUZZ
    @given(st.one_of(edited(st.just(CONFIG_TEXT)), yaml_texts, bombs()))
    def run(text):
        _write(path, text)

        def call():
            try:
                load_config(path, env={})
            except (DataFileError, ConfigError) as exc:
                assert str(path) in str(exc)
                raise
        _outcome(counts, call)

    run()
    print(f"\nload_config: {sum(counts.values())} inputs, {dict(counts)}")
    assert counts["ok"] and counts["ConfigError"] and counts["DataFileError"]


@pytest.mark.timeout(600)
def test_environment_values_fuzz():
    counts: Counter = Counter()

    # One of each outcome always: a value that parses to a valid budget is rare among random YAML
    # texts (a fresh clone's run once drew none of 1,500, and the coverage check below failed).
    @FUZZ
    @example("1500")
    @example("abc")
    @example("[")
    @given(st.one_of(yaml_texts, bombs()))
    def run(value):
        _outcome(counts, lambda: load_config(env={"KIOKU__RETRIEVAL__BUDGET_TOKENS": value}))

    run()
    print(f"\nKIOKU__ values: {sum(counts.values())} inputs, {dict(counts)}")
    assert counts["ok"] and counts["ConfigError"] and counts["DataFileError"]


@pytest.mark.timeout(600)
def test_load_character_fuzz(tmp_path):
    counts: Counter = Counter()
    paths = character_paths(tmp_path, "c1")
    paths.root.mkdir(parents=True)

    @FUZZ
    @given(st.one_of(edited(st.just(CHARACTER_TEXT)), yaml_texts, bombs()))
    def run(text):
        _write(paths.character_file, text)

        def call():
            try:
                load_character(paths)
            except (DataFileError, ConfigError) as exc:
                assert str(paths.character_file) in str(exc)
                raise
        _outcome(counts, call)

    run()
    print(f"\nload_character: {sum(counts.values())} inputs, {dict(counts)}")
    assert counts["ok"] and counts["DataFileError"]


LIMIT_CASES = [
    ("alias", "a: &x [1, 2]\nb: *x\n", SMALL_LIMITS, r"f\.yaml:2: YAML aliases \(\*x\) are not allowed"),
    ("merge via alias", "base: &b {k: 1}\nc:\n  <<: *b\n", SMALL_LIMITS, r"f\.yaml:3: YAML aliases"),
    ("depth", "a: " + "[" * 40 + "]" * 40 + "\n", SMALL_LIMITS, r"f\.yaml:1: nested deeper than 32 levels"),
    ("deep enough to crash libyaml", "[" * 60_000 + "]" * 60_000, SMALL_LIMITS, r"f\.yaml:1: nested deeper"),
    ("values", "[" + "1," * 60_000 + "]", SMALL_LIMITS, r"f\.yaml:1: more than 50000 values"),
    ("value size", "a: 1\nb: " + "x" * 2_000_000 + "\n", YAMLLimits(max_bytes=4 << 20), r"f\.yaml:2: a value of 2000000 characters"),
    ("text size", "a: " + "x" * (1 << 20) + "\n", SMALL_LIMITS, r"f\.yaml:1: the text is \d+ characters long, over the limit of 1048576"),
    ("impossible date", "a: 1\nb: 2026-02-30\n", SMALL_LIMITS, r"f\.yaml:2: unreadable value '2026-02-30'"),
    ("control character", "a: 1\nb: \x01\n", SMALL_LIMITS, r"f\.yaml:2: character U\+0001 is not allowed"),
    ("lone surrogate", "a: 1\nb: \ud800\n", SMALL_LIMITS, r"f\.yaml(:2)?: .*(surrogate|not allowed|UTF-8)"),
]


@pytest.mark.parametrize("text, limits, expected", [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES])
def test_each_limit_names_file_and_line(text, limits, expected):
    with pytest.raises(DataFileError) as err:
        parse_yaml(text, path="f.yaml", limits=limits)
    assert re.search(expected, str(err.value)), str(err.value)


def test_file_size_is_checked_before_reading(tmp_path):
    from engine.fileio import read_text_strict

    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(3 << 30)  # a sparse 3 GB file: reading it would take the memory
    with pytest.raises(DataFileError, match=r"big\.yaml: the file is 3221225472 bytes, over the limit of 1048576"):
        read_text_strict(big, max_bytes=1 << 20)
