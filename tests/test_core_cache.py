"""The core cache: a warm open serves the facts from the column snapshot in `.cache/`, never from a
YAML parse, and what it serves is exactly what parsing `core_mem.yml` gives."""

import json
import logging

import faiss
import numpy as np
import pytest

import engine.stores.core.repo as repo_module
from engine.config import CoreConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.factory import files_core_store
from engine.stores.core.facts import fact_to_dict

from core_kit import T0, TZ, ask, warmed
from counting import CountingEmbedder


# Every shape the file allows: history, a deleted fact, several source turns, hand-added entries.
FILE = """\
- id: fa
  text: 住在成都
  learned_at: '2026-10-01T09:00:00+08:00'
  updated_at: '2026-11-05T09:12:00+08:00'
  source_turns: [t-0001, t-0042]
  history:
  - text: 住在重庆
    until: '2026-11-05T09:12:00+08:00'
    change: update
- id: fb
  text: 养了一只猫叫小白
  learned_at: '2026-10-02T10:00:00+08:00'
  updated_at: '2026-10-02T10:00:00+08:00'
  source_turns: [t-0002]
  history:
  - text: 养了一只猫叫小白
    until: '2026-11-09T08:00:00+08:00'
    change: delete
  deleted_at: '2026-11-09T08:00:00+08:00'
- text: 喜欢爬山
  learned_at: 2026-10-03 08:00
- 讨厌吃香菜
- id: fe
  text: 在学日语
  learned_at: '2026-10-04T10:00:00+08:00'
  source_turns: [t-0002]
"""


@pytest.fixture
def make_store(tmp_path, embedder):
    made = []

    def make():
        store = files_core_store(
paths=CharacterPaths(tmp_path / "xiaoyue"), config=CoreConfig(),
                                embedder=CountingEmbedder(embedder), llm=None, prompts=Prompts("zh"), tz=TZ)
        made.append(store)
        return warmed(store)

    yield make
    for store in made:
        store.close()


@pytest.fixture
def core_file(tmp_path):
    path = CharacterPaths(tmp_path / "xiaoyue").user("alice").core_file
    path.parent.mkdir(parents=True)
    path.write_text(FILE, encoding="utf-8")
    return path


@pytest.fixture
def no_yaml(monkeypatch):
    """Fail the test if the store parses core_mem.yml."""

    def refuse(*args, **kwargs):
        raise AssertionError("core_mem.yml was parsed")

    monkeypatch.setattr(repo_module, "parse_facts", refuse)


def opened(make_store):
    """A store that has read the file and, closing, written the cache (readers never write it)."""
    store = make_store()
    facts = store.facts("alice", include_deleted=True)
    store.close()
    return store, facts


def test_warm_open_equals_a_parse_and_parses_no_yaml(make_store, core_file, request):
    _, parsed = opened(make_store)
    assert [f.text for f in parsed] == ["住在成都", "养了一只猫叫小白", "喜欢爬山", "讨厌吃香菜", "在学日语"]
    request.getfixturevalue("no_yaml")
    warm = make_store()
    # A hit first (builds one Fact), then the full listing (builds the rest, in file order).
    [hit] = ask(warm, "我住在哪里？")
    assert hit.text == "- 住在成都（2026-11-05 记下）" and hit.meta["learned_at"] == "2026-10-01T09:00:00+08:00"
    assert warm.facts("alice", include_deleted=True) == parsed
    assert [f.text for f in warm.facts("alice")] == ["住在成都", "喜欢爬山", "讨厌吃香菜", "在学日语"]
    assert warm.embedder.passages == []


def test_write_after_a_warm_open_keeps_order_and_history(make_store, core_file, request):
    opened(make_store)  # builds the cache
    request.getfixturevalue("no_yaml")
    warm = make_store()
    ask(warm, "我讨厌吃什么？")  # some rows built, the rest still columns
    updated = warm.update_fact("alice", "fe", "在学法语", at=T0)
    warm.close()
    assert [(r.text, r.change) for r in updated.history] == [("在学日语", "update")]
    again = make_store()
    facts = again.facts("alice", include_deleted=True)
    assert [f.text for f in facts] == ["住在成都", "养了一只猫叫小白", "喜欢爬山", "讨厌吃香菜", "在学法语"]
    assert facts[-1] == updated and facts[:-1] == warm.facts("alice", include_deleted=True)[:-1]
    assert warm.embedder.passages == ["在学法语"] and again.embedder.passages == []


@pytest.mark.parametrize("version", [1, 2])
def test_flat_cache_of_older_versions_keeps_its_vectors(make_store, core_file, version):
    """A cache written before the graph index (a flat IndexIDMap2; version 1 also before the column
    snapshot): its vectors move into the new index, nothing is embedded again."""
    store, parsed = opened(make_store)
    cache = CharacterPaths(core_file.parents[2]).user("alice").cache
    state = json.loads((cache / "core_state.json").read_text(encoding="utf-8"))
    rows = [(f, h) for f, h in zip(state["rows"]["fact"], state["rows"]["hash"]) if f is not None]
    index = store.repo.user("alice").index
    vectors = np.stack([index.vector(f) for f, _ in rows])
    flat = faiss.IndexIDMap2(faiss.IndexFlatIP(vectors.shape[1]))
    faiss_ids = [10 + i for i in range(len(rows))]
    flat.add_with_ids(vectors, np.asarray(faiss_ids, dtype=np.int64))
    faiss.write_index(flat, str(cache / "core.faiss"))
    if version == 1:
        entries = {f: [i, h] for (f, h), i in zip(rows, faiss_ids)}
        facts = [fact_to_dict(f) for f in parsed]
    else:
        entries = {"fact": [f for f, _ in rows], "faiss": faiss_ids, "hash": [h for _, h in rows]}
        facts = state["facts"]
    old = {"version": version, "model": state["model"], "dim": state["dim"], "file_hash": state["file_hash"],
           "next_id": 10 + len(rows), "entries": entries, "facts": facts}
    (cache / "core_state.json").write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    upgraded = make_store()
    assert upgraded.facts("alice", include_deleted=True) == parsed and upgraded.embedder.passages == []
    assert "住在成都" in ask(upgraded, "我住在哪里？")[0].text
    upgraded.close()
    assert json.loads((cache / "core_state.json").read_text(encoding="utf-8"))["version"] == 3


def test_snapshot_that_disagrees_is_rebuilt_with_a_warning(make_store, core_file, caplog):
    _, parsed = opened(make_store)
    state_path = CharacterPaths(core_file.parents[2]).user("alice").cache / "core_state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state["facts"]["text"].pop()
    state_path.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert make_store().facts("alice", include_deleted=True) == parsed
    assert "corrupt" in caplog.text and "differ in length" in caplog.text
