"""Hostile world-book files: runaway regexes, oversized files and entries, YAML alias bombs and deep
nesting. Each is reported with its file and line, and the rest of the book keeps working."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.stores.worldbook import validate_folder

from test_worldbook_match import entry, fired, make_store

ROOT = Path(__file__).resolve().parent.parent

# Patterns that backtrack exponentially on a long run of one letter followed by a mismatch.
# (The issue's /(a+)+$/ is not among them: the `regex` engine recognises that shape; it is below.)
RUNAWAY = [
    pytest.param("(a|aa)+$", "a" * 40 + "!", id="alternation-overlap"),
    pytest.param("(a|a)+$", "a" * 40 + "!", id="alternation-same"),
    pytest.param("(\\w|\\w\\w)+$", "ab" * 20 + "!", id="word-overlap"),
]


class TestRegexTimeouts:
    @pytest.mark.parametrize(("pattern", "attack"), RUNAWAY)
    def test_a_runaway_key_is_skipped_named_and_the_rest_fires(self, tmp_path, pattern, attack):
        files = {"evil.yaml": entry(["good"], "好条目") + f"- keys: ['/{pattern}/']\n  content: 坏条目\n"}
        store = make_store(tmp_path, files, regex_timeout_ms=5)
        assert fired(store, f"{attack} good") == ["evil.yaml#1"]
        (problem,) = [p for p in store.problems() if "regex key" in p]
        path = tmp_path / "agent/data_base/evil.yaml"
        assert problem.startswith(f"{path}:3: regex key {'/' + pattern + '/'!r} ran out of its 5 ms on 1 message(s)")
        fired(store, attack)
        assert "on 2 message(s)" in [p for p in store.problems() if "regex key" in p][0]

    @pytest.mark.parametrize(
        ("message", "fires"),
        [("a" * 27 + "!", False), ("a" * 27, True), ("baaa", True), ("你好", False)],
        ids=["issue-attack", "run-at-end", "short", "chinese"],
    )
    def test_the_issue_pattern_matches_normally_without_a_timeout(self, tmp_path, message, fires):
        store = make_store(tmp_path, {"w.yaml": "- keys: ['/(a+)+$/']\n  content: c\n"}, regex_timeout_ms=50)
        assert bool(fired(store, message)) is fires
        assert store.problems() == []

    def test_the_prompt_budget_stops_many_slow_keys(self, tmp_path):
        keys = "".join(f"- keys: ['/(a|aa)+${i}/']\n  content: c{i}\n" for i in range(30))
        store = make_store(tmp_path, {"w.yaml": keys + entry(["good"], "好")},
                           regex_timeout_ms=10, regex_budget_ms=30)
        assert fired(store, "a" * 40 + "! good") == ["w.yaml#31"]
        problems = store.problems()
        assert any("regex budget ran out on 1 prompt(s)" in p for p in problems)
        assert 1 <= sum("ran out of its 10 ms" in p for p in problems) < 30

    def test_a_fixed_key_leaves_the_problems(self, tmp_path):
        store = make_store(tmp_path, {"w.yaml": "- keys: ['/(a|aa)+$/']\n  content: c\n"}, regex_timeout_ms=5)
        fired(store, "a" * 40 + "!")
        assert store.problems()
        (tmp_path / "agent/data_base/w.yaml").write_text("- keys: ['/a+$/']\n  content: c\n", encoding="utf-8")
        store.refresh()
        assert store.problems() == []

    def test_through_build_prompt_the_diagnostics_name_the_key(self, tmp_path, embedder):
        shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue",
                        ignore=shutil.ignore_patterns("users", ".cache"))
        (tmp_path / "agents/xiaoyue/data_base/evil.yaml").write_text(
            "- keys: ['/(a|aa)+$/']\n  content: 坏条目\n", encoding="utf-8")
        config = load_config(overrides={"data_dir": str(tmp_path), "world_book": {"regex_timeout_ms": 5}}, env={})
        now = datetime(2026, 5, 1, 12, tzinfo=ZoneInfo("Asia/Shanghai"))
        with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as orch:
            result = orch.build_prompt("a" * 40 + "! 缆车几点开？", user_id="u1", now=now)
        assert not [d for d in result.diagnostics if "skipped, " in d]  # the store answered in time
        assert any("evil.yaml:1: regex key '/(a|aa)+$/' ran out" in d for d in result.diagnostics)
        assert any("缆车" in h.text for h in result.hits if h.store == "world_book")


def _bomb(levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, levels):
        prev, cur = chr(ord("a") + n - 1), chr(ord("a") + n)
        lines.append(f"{cur}: &{cur} [{','.join(['*' + prev] * 9)}]")
    return "\n".join(lines) + "\n"


HOSTILE = [
    # (file name, text, expected line, words in the message)
    pytest.param("bomb", _bomb(), 2, "aliases", id="billion-laughs"),
    pytest.param("bomb-extended", "- keys: [x]\n  content: &c big\n- keys: [y]\n  content: *c\n", 4, "aliases",
                 id="alias-in-extended"),
    pytest.param("merge", "base: &b\n  x: 1\nother:\n  <<: *b\n", 4, "aliases", id="merge-key"),
    pytest.param("deep-flow", "[" * 100_000 + "]" * 100_000 + "\n", 1, "nested more than 20", id="deep-100k"),
    pytest.param("deep-block", "".join("  " * i + f"k{i}:\n" for i in range(30)) + "  " * 30 + "v\n", 21,
                 "nested more than 20", id="deep-block"),
    pytest.param("long-entry", "- keys: [x]\n  content: " + "长" * 6000 + "\n", 2, "6,000 characters", id="entry-size"),
    pytest.param("long-simple", "重庆: " + "长" * 6000 + "\n", 1, "over the limit of 5,000", id="simple-size"),
    pytest.param("long-key", "- keys: [" + "k" * 600 + "]\n  content: c\n", 1, "600 characters", id="key-size"),
    pytest.param("big-file", "".join(f"键{i}: 描述{i}\n" for i in range(200_000)), None, "larger than the limit",
                 id="file-size"),
    pytest.param("bad-regex", "- keys: ['/a{1,99999999999}/']\n  content: c\n", 1, "bad regex", id="huge-repeat"),
]


class TestHostileFiles:
    @pytest.mark.parametrize(("name", "text", "line", "words"), HOSTILE)
    def test_reported_with_file_and_line_and_the_rest_loads(self, tmp_path, name, text, line, words):
        files = {f"{name}.yaml": text, "good.yaml": "重庆: 山城\n"}
        store = make_store(tmp_path, files)
        (error,) = store.status().errors
        assert error.file == str(tmp_path / f"agent/data_base/{name}.yaml")
        assert words in error.message
        if line is not None:
            assert error.line == line
        else:  # the size cap names the line where the limit is crossed
            assert error.line == text.encode()[: 2048 * 1024].count(b"\n") + 1
        assert str(error).startswith(f"{error.file}:{error.line}: ")
        assert fired(store, "去重庆") == ["good.yaml#1"]
        assert str(error) in store.problems()
        # The CLI's check reports the same thing.
        assert [str(e) for e in validate_folder(tmp_path / "agent/data_base")] == [str(error)]

    def test_limits_come_from_config(self, tmp_path):
        files = {"a.yaml": "重庆: 山城山城山城\n", "b.yaml": "".join(f"k{i}: v\n" for i in range(400))}
        store = make_store(tmp_path, files, max_entry_chars=3, max_file_kb=1)
        errors = {Path(e.file).name: e for e in store.status().errors}
        assert set(errors) == {"a.yaml", "b.yaml"}
        assert "(world_book.max_entry_chars)" in errors["a.yaml"].message
        assert errors["b.yaml"].line == "".join(f"k{i}: v\n" for i in range(400)).encode()[:1024].count(b"\n") + 1

    def test_a_file_that_grows_too_big_keeps_its_last_good_version(self, tmp_path):
        store = make_store(tmp_path, {"w.yaml": "重庆: 山城\n"}, max_file_kb=1)
        (tmp_path / "agent/data_base/w.yaml").write_text("重庆: 山城\n" + "x: " + "y" * 2000 + "\n", encoding="utf-8")
        store.refresh()
        assert fired(store, "去重庆") == ["w.yaml#1"]
        assert "larger than the limit" in store.status().errors[0].message
