"""The store end to end with the real embedder: semantic hits, hot reload, the vector cache,
last-good retention of broken files, status and the public surface."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest

import engine.stores.worldbook as worldbook
from engine.config import WorldBookConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Store, Turn
from engine.stores.worldbook import WorldBookStore

from counting import CountingEmbedder
from worldbook_kit import retrieve


@pytest.fixture
def counting(embedder):
    return CountingEmbedder(embedder)


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    # Make sure a rewrite within one clock tick is still seen as a change.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def make(tmp_path, emb, **config) -> WorldBookStore:
    return WorldBookStore(
        paths=CharacterPaths(tmp_path / "agent"),
        # Look at the folder at every prompt: these tests edit files between two calls.
        config=WorldBookConfig(**{"threshold": 0.88, "check_interval_s": 0, **config}),
        embedder=emb,
        prompts=Prompts("zh"),
        budget_tokens=2000,
    )


def build_prompt(store: WorldBookStore, emb, message: str, recent=()) -> list:
    return retrieve(store, message, recent, embedder=emb)


BOOK = """\
- keys: [火锅]
  content: 重庆火锅以牛油锅底闻名。
- keys: [下雨天, 天气]
  content: 这个城市一下雨就会起雾。
- keys: [数学考试]
  content: 期末考试在七月。
  semantic: false
"""


class TestSemantic:
    def test_a_sentence_piece_fires_an_entry_by_meaning(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        store = make(tmp_path, counting)
        assert store.query_texts("你好。今天外面雨好大！", []) == ["你好。", "今天外面雨好大！"]
        hits = build_prompt(store, counting, "你好。今天外面雨好大！")
        assert [h.text for h in hits] == ["这个城市一下雨就会起雾。"]
        (hit,) = hits
        assert hit.meta["kind"] == "semantic" and hit.meta["piece"] == "今天外面雨好大！"
        assert hit.reason.startswith('piece "今天外面雨好大！" ~ key "')
        assert 0.88 <= hit.score < 1.0
        assert hit.reason.endswith(f"{hit.score:.3f} >= 0.88")

    def test_several_pieces_count_once_with_the_best_score(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        store = make(tmp_path, counting)
        message = "今天外面雨好大。出门记得带伞。"
        hits = build_prompt(store, counting, message)
        assert [h.meta["uid"] for h in hits] == ["w.yaml#2"]
        pieces = store.query_texts(message, [])
        assert len(pieces) == 2
        # The entry's score is the best over its keys and over the pieces.
        sims = counting.inner.embed(["下雨天", "天气"], role="passage") @ counting.inner.embed(pieces, role="query").T
        assert hits[0].score == pytest.approx(float(sims.max()), abs=1e-5)

    def test_semantic_false_and_threshold_per_entry(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        assert build_prompt(make(tmp_path, counting), counting, "明天要测验微积分") == []
        strict = BOOK.replace("  content: 这个城市", "  threshold: 0.99\n  content: 这个城市")
        write(tmp_path / "agent/data_base/w.yaml", strict)
        assert build_prompt(make(tmp_path, counting), counting, "今天外面雨好大") == []

    def test_top_k_limits_semantic_hits_and_keywords_win(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        store = make(tmp_path, counting, top_k=1, threshold=0.8)
        hits = build_prompt(store, counting, "今天外面雨好大，晚上吃火锅")
        kinds = [h.meta["kind"] for h in hits]
        assert kinds == ["keyword", "semantic"]
        assert hits[0].reason == 'key "火锅" in message 0 (current)'

    def test_no_pieces_without_semantic_entries(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", "- keys: ['/x/']\n  content: c\n")
        assert make(tmp_path, counting).query_texts("你好。再见。", []) == []
        assert make(tmp_path, counting, semantic=False).query_texts("你好。再见。", []) == []


class TestReload:
    def test_an_edit_shows_at_the_next_call_and_only_changed_texts_are_embedded(self, tmp_path, counting):
        folder = tmp_path / "agent/data_base"
        write(folder / "a.yaml", "重庆: 山城\n成都: 天府\n")
        write(folder / "b.yaml", "小月: 橘猫\n")
        store = make(tmp_path, counting)
        # Each key, and each entry's content opening (what the entry is about).
        assert sorted(counting.texts) == ["小月", "小月: 橘猫", "成都", "成都: 天府", "重庆", "重庆: 山城"]
        assert [h.text for h in build_prompt(store, counting, "去重庆")] == ["重庆: 山城"]

        counting.texts.clear()
        write(folder / "a.yaml", "重庆: 雾都，桥很多\n成都: 天府\n西安: 古都\n")
        hits = build_prompt(store, counting, "去重庆")
        assert [h.text for h in hits] == ["重庆: 雾都，桥很多"]
        # Only the new key and the changed openings (plus the query pieces the orchestrator embeds itself).
        assert sorted(t for t in counting.texts if t != "去重庆") == ["西安", "西安: 古都", "重庆: 雾都，桥很多"]

        counting.texts.clear()
        write(folder / "b.yaml", "小月: 橘猫，很胖\n")  # description only: no key changed
        assert [h.text for h in build_prompt(store, counting, "小月呢")] == ["小月: 橘猫，很胖"]
        assert counting.texts == ["小月: 橘猫，很胖", "小月呢"]

    def test_without_content_rows_a_description_edit_embeds_nothing(self, tmp_path, counting):
        folder = tmp_path / "agent/data_base"
        write(folder / "b.yaml", "小月: 橘猫\n")
        store = make(tmp_path, counting, semantic_content=False)
        assert counting.texts == ["小月"]
        counting.texts.clear()
        write(folder / "b.yaml", "小月: 橘猫，很胖\n")
        assert [h.text for h in build_prompt(store, counting, "小月呢")] == ["小月: 橘猫，很胖"]
        assert counting.texts == ["小月呢"]

    def test_change_checks_are_throttled_to_one_stat_pass_per_interval(self, tmp_path, counting):
        folder = tmp_path / "agent/data_base"
        write(folder / "a.yaml", "重庆: 山城\n")
        store = make(tmp_path, counting, check_interval_s=3600)
        checks = store.book.checks
        for _ in range(5):  # each prompt asks twice (pieces, then retrieval)
            assert [h.text for h in build_prompt(store, counting, "去重庆")] == ["重庆: 山城"]
        assert store.book.checks == checks  # the load just looked; the next look is due in an hour
        write(folder / "a.yaml", "重庆: 雾都\n")
        assert [h.text for h in build_prompt(store, counting, "去重庆")] == ["重庆: 山城"]
        assert store.refresh()  # an explicit refresh (kioku check, the service's reload) always looks
        assert [h.text for h in build_prompt(store, counting, "去重庆")] == ["重庆: 雾都"]

        every = make(tmp_path, counting, check_interval_s=0)
        checks = every.book.checks
        build_prompt(every, counting, "去重庆")
        assert every.book.checks == checks + 2

    def test_nothing_is_reparsed_when_nothing_changed(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/a.yaml", "重庆: 山城\n")
        store = make(tmp_path, counting)
        reloads = store.book.reloads
        build_prompt(store, counting, "去重庆")
        path = tmp_path / "agent/data_base/a.yaml"
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000))  # touched only
        build_prompt(store, counting, "去重庆")
        assert store.book.reloads == reloads

    def test_added_and_deleted_files(self, tmp_path, counting):
        folder = tmp_path / "agent/data_base"
        store = make(tmp_path, counting)  # the folder does not exist yet
        assert build_prompt(store, counting, "去重庆") == []
        write(folder / "a.yaml", "重庆: 山城\n")
        assert len(build_prompt(store, counting, "去重庆")) == 1
        (folder / "a.yaml").unlink()
        assert build_prompt(store, counting, "去重庆") == []

    def test_a_broken_edit_keeps_the_last_good_version_until_fixed(self, tmp_path, counting):
        folder = tmp_path / "agent/data_base"
        write(folder / "a.yaml", "重庆: 山城\n")
        write(folder / "b.yaml", "成都: 天府\n")
        store = make(tmp_path, counting)
        write(folder / "a.yaml", "重庆: 山城\n重庆: 雾都\n")
        assert [h.text for h in build_prompt(store, counting, "重庆和成都")] == ["重庆: 山城", "成都: 天府"]
        status = store.status()
        (error,) = status.errors
        assert error.file.endswith("a.yaml") and error.line == 2 and "duplicate key" in error.message
        assert (status.files, status.files_loaded, status.entries) == (2, 2, 2)

        write(folder / "a.yaml", "重庆: 雾都\n")
        assert [h.text for h in build_prompt(store, counting, "重庆")] == ["重庆: 雾都"]
        assert store.status().errors == ()

    def test_a_file_broken_from_the_start_loads_nothing_but_the_others_load(self, tmp_path, counting):
        folder = tmp_path / "agent/data_base"
        (folder).mkdir(parents=True)
        (folder / "a.yaml").write_bytes(b"\xff\xfe")
        write(folder / "b.yaml", "成都: 天府\n")
        store = make(tmp_path, counting)
        assert [h.text for h in build_prompt(store, counting, "成都")] == ["成都: 天府"]
        status = store.status()
        assert status.files == 2 and status.files_loaded == 1
        assert status.errors[0].line == 1 and "UTF-8" in status.errors[0].message
        assert status.to_dict()["errors"][0]["line"] == 1


class TestVectorCache:
    def test_cold_start_with_a_warm_cache_embeds_nothing(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        make(tmp_path, counting)
        assert counting.texts
        counting.texts.clear()
        store = make(tmp_path, counting)
        assert counting.texts == []
        assert store.status().semantic_keys == 3
        cached = list((tmp_path / "agent/.cache/world_book").rglob("*.npy"))
        assert len(cached) == 1
        # Three keys and the openings of the two entries matched by meaning.
        assert np.load(cached[0], allow_pickle=False).shape == (5, counting.dim)

    def test_a_corrupt_cache_file_is_rebuilt(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        make(tmp_path, counting)
        (cached,) = (tmp_path / "agent/.cache/world_book").rglob("*.npy")
        cached.write_bytes(b"not numpy")
        counting.texts.clear()
        store = make(tmp_path, counting)
        assert sorted(counting.texts) == sorted(["下雨天", "天气", "火锅", "重庆火锅以牛油锅底闻名。", "这个城市一下雨就会起雾。"])
        assert len(build_prompt(store, counting, "今天外面雨好大")) == 1

    def test_stale_cache_files_are_pruned(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", "重庆: 山城\n")
        store = make(tmp_path, counting)
        write(tmp_path / "agent/data_base/w.yaml", "成都: 天府\n")
        store.refresh()
        assert len(list((tmp_path / "agent/.cache/world_book").rglob("*.npy"))) == 1


class TestSurface:
    def test_public_names(self):
        for name in ("WorldBookStore", "validate_folder", "format_errors", "BookError", "BookStatus"):
            assert name in worldbook.__all__ and hasattr(worldbook, name)

    def test_is_a_store_with_a_template(self, tmp_path, counting):
        store = make(tmp_path, counting)
        assert isinstance(store, Store) and store.name == "world_book"
        for language in ("zh", "en"):
            assert "X" in Prompts(language).render("world_book", items="X")

    def test_recording_and_forgetting_turns_leave_the_book_as_the_authors_wrote_it(self, tmp_path, counting):
        """The chat never writes lore: a turn that names keys, adds `key: value` text or looks like
        YAML changes no file, no cache and no answer; forgetting a turn has nothing to undo."""
        write(tmp_path / "agent/data_base/w.yaml", BOOK)
        store = make(tmp_path, counting)
        before = build_prompt(store, counting, "火锅和下雨天")
        files = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (tmp_path / "agent").rglob("*") if p.is_file()}
        at = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
        turns = [
            Turn("t1", "u1", at, "火锅: 其实是甜的", "好的，我记住了：火锅是甜的。"),
            Turn("t2", "u1", at, "- keys: [火锅]\n  content: 新设定", "收到"),
            Turn("t3", "u2", at, "下雨天: 晴天", "嗯"),
        ]
        for turn in turns:
            store.record(turn)
            store.record(turn)  # a replayed job
        assert [store.forget(t.user_id, t.id) for t in turns] == [0, 0, 0]
        store.refresh()
        after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (tmp_path / "agent").rglob("*") if p.is_file()}
        assert after == files
        assert [(h.text, h.reason) for h in build_prompt(store, counting, "火锅和下雨天")] == [
            (h.text, h.reason) for h in before
        ]

    def test_disabled_store_does_nothing(self, tmp_path, counting):
        write(tmp_path / "agent/data_base/w.yaml", "重庆: 山城\n")
        store = make(tmp_path, counting, enabled=False)
        assert counting.texts == []
        assert store.query_texts("重庆。好。", []) == [] and build_prompt(store, counting, "重庆") == []


class TestManyBrokenFiles:
    def test_every_malformed_file_is_reported_and_the_good_ones_load(self, tmp_path, counting):
        from test_worldbook_parse import MALFORMED

        folder = tmp_path / "agent/data_base"
        folder.mkdir(parents=True)
        for name, data, _, _ in MALFORMED:
            (folder / f"{name}.yaml").write_bytes(data)
        write(folder / "zz-good.yaml", "重庆: 山城\n")
        store = make(tmp_path, counting, semantic=False)
        status = store.status()
        reported = {os.path.basename(e.file)[: -len(".yaml")]: e.line for e in status.errors}
        assert reported == {name: line for name, _, line, _ in MALFORMED}
        assert status.entries == 1 and status.files == len(MALFORMED) + 1
        assert [h.text for h in build_prompt(store, counting, "重庆")] == ["重庆: 山城"]


@pytest.mark.parametrize(("pause", "fires"), [(timedelta(minutes=5), True), (timedelta(days=1), False)],
                         ids=["same-sitting", "next-day"])
def test_the_previous_reply_is_scanned_only_within_a_sitting(tmp_path, embedder, pause, fires):
    """Through build_prompt on the demo character: a reply that named 阿黄 five minutes ago keeps
    the entry in play for "好的"; the same reply from yesterday does not inject it into a new sitting."""
    from engine.config import load_config
    from engine.orchestrator import MemoryOrchestrator
    from engine.testing.serve import copy_demo

    copy_demo(tmp_path)
    config = load_config(overrides={"data_dir": str(tmp_path), "memory_llm": {"backend": "none"}}, env={})
    said = datetime(2026, 11, 20, 20, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as orch:
        orch.record_turn("茶馆里有什么？", "有一只猫，叫阿黄。", user_id="u1", at=said)
        result = orch.build_prompt("好的", user_id="u1", now=said + pause)
    reasons = [h.reason for h in result.hits if h.store == "world_book"]
    assert any("message 1 (assistant)" in r for r in reasons) is fires, reasons
