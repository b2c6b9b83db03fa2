"""Keyword triggers, secondary logic, CJK and case rules, recursion, ordering and the token budget.

These run with semantic matching off, so every hit here is a keyword (or constant) hit.
"""

from __future__ import annotations

import pytest

from engine.config import WorldBookConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.worldbook import WorldBookStore
from engine.stores.worldbook.matcher import KeywordMatcher, fold
from engine.stores.worldbook.parse import parse_text

from worldbook_kit import retrieve


class NoEmbedder:
    """Keyword-only tests must not embed anything; this fails loudly if they try."""

    model_id = "none"
    dim = 4
    default_thresholds = {"world_book": 0.5}

    def embed(self, texts, *, role="passage"):
        raise AssertionError(f"unexpected embedding of {texts!r}")


def make_store(tmp_path, files: dict[str, str], *, budget: int = 10_000, **config) -> WorldBookStore:
    folder = tmp_path / "agent" / "data_base"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return WorldBookStore(
        paths=CharacterPaths(tmp_path / "agent"),
        config=WorldBookConfig(**{"semantic": False, "check_interval_s": 0, **config}),
        embedder=NoEmbedder(),
        prompts=Prompts("zh"),
        budget_tokens=budget,
    )


def ask(store: WorldBookStore, message: str, recent: tuple = ()) -> list:
    return retrieve(store, message, recent)


def fired(store: WorldBookStore, message: str, recent: tuple = ()) -> list[str]:
    return [h.meta["uid"] for h in ask(store, message, recent)]


def entry(keys, content="c", **fields) -> str:
    lines = [f"- keys: {keys!r}".replace("'", '"'), f"  content: {content}"]
    lines += [f"  {k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


class TestKeywords:
    def test_simple_format_fires_on_keyword_with_reason(self, tmp_path):
        store = make_store(tmp_path, {"w.yaml": "重庆: 山城\n成都: 天府之国\n"})
        (hit,) = ask(store, "我下周去重庆出差")
        assert hit.text == "重庆: 山城"
        assert hit.reason == 'key "重庆" in message 0 (current)'
        assert hit.score == 1.0 and not hit.pinned and hit.tokens > 0
        assert hit.meta["line"] == 1 and hit.meta["kind"] == "keyword"

    @pytest.mark.parametrize(
        ("keys", "fields", "message", "fires"),
        [
            (["Paris"], {}, "I love paris in spring", True),
            (["Paris"], {"case_sensitive": True}, "I love paris in spring", False),
            (["Paris"], {"case_sensitive": True}, "I love Paris in spring", True),
            (["cat"], {}, "a category error", False),
            (["cat"], {"whole_words": False}, "a category error", True),
            (["cat"], {}, "the cat, again", True),
            (["cat"], {}, "我的cat很胖", True),
            (["C++"], {}, "I write C++.", True),
            (["C++"], {}, "I write ObjC++ code", False),
            (["猫"], {}, "我家小猫咪", True),
            (["猫"], {"whole_words": True}, "熊猫", True),
            (["iPhone手机"], {}, "买了iphone手机", True),
            (["iPhone手机"], {}, "买了xiphone手机", False),
            (["ŞEHİR"], {}, "bu şehir güzel", False),  # İ lowercases to two characters: kept as is
            (["Straße"], {}, "die STRASSE", False),
            (["Straße"], {}, "die straße", True),
        ],
        ids=lambda v: str(v) if not isinstance(v, dict) else ",".join(v) or "defaults",
    )
    def test_case_and_whole_word_rules(self, tmp_path, keys, fields, message, fires):
        store = make_store(tmp_path, {"w.yaml": entry(keys, **fields)})
        assert bool(fired(store, message)) is fires

    @pytest.mark.parametrize(
        ("key", "message", "fires"),
        [
            ("/chong\\\\s*qing/i", "Chong Qing is hot", True),
            ("/chong\\\\s*qing/", "Chong Qing is hot", False),
            ("/第[一二三]章/", "我读到第二章了", True),
            ("/^hello$/m", "hi\nhello\nbye", True),
        ],
    )
    def test_regex_keys(self, tmp_path, key, message, fires):
        store = make_store(tmp_path, {"w.yaml": f'- keys: ["{key}"]\n  content: c\n'})
        hits = ask(store, message)
        assert bool(hits) is fires
        if fires:
            assert hits[0].meta["key"] == key.replace("\\\\", "\\")

    @pytest.mark.parametrize(
        ("logic", "message", "fires"),
        [
            ("and_any", "Akira", False),
            ("and_any", "Akira and her sword", True),
            ("and_all", "Akira and her sword", False),
            ("and_all", "Akira, her sword and blade", True),
            ("not_any", "Akira", True),
            ("not_any", "Akira and her blade", False),
            ("not_all", "Akira and her blade", True),
            ("not_all", "Akira, sword, blade", False),
        ],
    )
    def test_secondary_key_logic(self, tmp_path, logic, message, fires):
        text = entry(["Akira"], secondary_keys='["sword", "blade"]', logic=logic)
        store = make_store(tmp_path, {"w.yaml": text})
        assert bool(fired(store, message)) is fires

    def test_secondary_key_alone_does_not_fire(self, tmp_path):
        store = make_store(tmp_path, {"w.yaml": entry(["Akira"], secondary_keys='["sword"]')})
        assert fired(store, "a sword") == []

    def test_scan_messages_covers_the_previous_messages(self, tmp_path):
        files = {"w.yaml": "重庆: 山城\n成都: 天府\n小月: 猫\n"}
        recent = (
            {"role": "user", "content": "小月在哪"},
            {"role": "assistant", "content": "她在成都"},
        )
        assert fired(make_store(tmp_path, files), "好的", recent) == ["w.yaml#2"]
        store = make_store(tmp_path, files, scan_messages=3)
        hits = ask(store, "去重庆", recent)
        assert [h.reason for h in hits] == [
            'key "重庆" in message 0 (current)',
            'key "成都" in message 1 (assistant)',
            'key "小月" in message 2 (user)',
        ]
        assert fired(make_store(tmp_path, files, scan_messages=1), "好的", recent) == []

    def test_disabled_entries_never_fire(self, tmp_path):
        store = make_store(tmp_path, {"w.yaml": entry(["a"], enabled=False) + entry(["a"], constant=True, enabled=False)})
        assert fired(store, "a") == []

    def test_matcher_on_many_keys_and_overlaps(self):
        entries, _ = parse_text("重庆: a\n重庆火锅: b\n火锅: c\n", file="f", name="f")
        found = KeywordMatcher(entries).scan("我爱重庆火锅")
        assert sorted(m.key for m in found) == ["火锅", "重庆", "重庆火锅"]
        assert fold("İSTANBUL") == "İstanbul" and len(fold("İ")) == 1


class TestConstantsOrderBudget:
    def test_constants_first_then_order_then_trim_from_the_end(self, tmp_path):
        text = (
            entry(["x"], "常驻设定", constant=True, order=1)
            + entry(["a"], "低优先级", order=10)
            + entry(["b"], "高优先级", order=200)
            + entry(["c"], "默认优先级")
        )
        store = make_store(tmp_path, {"w.yaml": text})
        hits = ask(store, "a b c")
        assert [h.text for h in hits] == ["常驻设定", "高优先级", "默认优先级", "低优先级"]
        assert hits[0].pinned and hits[0].reason == "constant entry"
        budget = hits[0].tokens + hits[1].tokens + hits[2].tokens
        store.budget_tokens = budget
        assert [h.text for h in ask(store, "a b c")] == ["常驻设定", "高优先级", "默认优先级"]
        store.budget_tokens = 1  # constants are never trimmed
        assert [h.text for h in ask(store, "a b c")] == ["常驻设定"]

    def test_budget_trims_from_the_end_not_the_biggest(self, tmp_path):
        text = entry(["a"], "短", order=3) + entry(["b"], "一段很长很长很长很长很长很长很长的设定", order=2) + entry(["c"], "短", order=1)
        store = make_store(tmp_path, {"w.yaml": text})
        hits = ask(store, "a b c")
        store.budget_tokens = hits[0].tokens + 1
        assert [h.meta["uid"] for h in ask(store, "a b c")] == ["w.yaml#1"]


class TestRecursion:
    FILES = {
        "w.yaml": entry(["重庆"], "重庆有火锅") + entry(["火锅"], "火锅要配冰粉") + entry(["冰粉"], "冰粉是甜的")
        + entry(["甜"], "小月爱吃甜的")
    }

    def test_off_by_default(self, tmp_path):
        assert fired(make_store(tmp_path, self.FILES), "去重庆") == ["w.yaml#1"]

    @pytest.mark.parametrize("depth", [1, 2, 5])
    def test_bounded_depth(self, tmp_path, depth):
        store = make_store(tmp_path, self.FILES, recursion_depth=depth)
        hits = ask(store, "去重庆")
        assert len(hits) == min(1 + depth, 4)
        if depth >= 1:
            assert hits[1].reason == 'key "火锅" in entry w.yaml#1 (recursion 1)'
            assert hits[1].meta["kind"] == "recursion"

    def test_constant_content_recurses_and_cycles_stop(self, tmp_path):
        text = entry([], "世界里有重庆", constant=True) + entry(["重庆"], "重庆的世界") + entry(["世界"], "x")
        store = make_store(tmp_path, {"w.yaml": text}, recursion_depth=10)
        assert sorted(fired(store, "你好")) == ["w.yaml#1", "w.yaml#2", "w.yaml#3"]
