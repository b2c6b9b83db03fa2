"""The fact index (real FAISS): exact retrieval, the near-duplicate guard on the graph above its
exact-scan size, dead rows after updates and deletes, compaction, and the cache round trip."""

import numpy as np
import pytest

from engine.stores.core.cache import IndexCache
from engine.stores.core.index import FactIndex

DIM = 32


def unit(rng, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def ids(n, prefix="f"):
    return [f"{prefix}{i}" for i in range(n)]


@pytest.mark.parametrize("guard_exact_max", [10_000, 8], ids=["exact_guard", "graph_guard"])
def test_search_and_guard_agree_with_brute_force_through_updates_and_deletes(guard_exact_max):
    rng = np.random.default_rng(7)
    index = FactIndex(DIM, guard_exact_max=guard_exact_max)
    live = dict(zip(ids(300), unit(rng, 300)))
    for fact_id, vector in live.items():  # one by one, as facts arrive
        index.append_rows([fact_id], ["h"], vector[None])
    for fact_id in ids(300)[::3]:  # a third replaced by a new text (dead row + new row)
        live[fact_id] = unit(rng, 1)[0]
        index.append_rows([fact_id], ["h2"], live[fact_id][None])
    gone = ids(300)[1::3]
    index.remove(gone)  # a third deleted: dead rows now outnumber none of the live ones yet
    for fact_id in gone:
        del live[fact_id]
    assert len(index) == len(live) == 200 and index.dead == 200
    names, matrix = list(live), np.stack(list(live.values()))
    for q in unit(rng, 20):
        exact = np.argsort(-(matrix @ q))[:5]
        assert [f for f, _ in index.search(q, 5)[0]] == [names[i] for i in exact]
    for name in names[::10]:  # a near-duplicate of a live fact finds that fact
        near = live[name] + 0.01 * unit(rng, 1)[0]
        found, score = index.nearest(near / np.linalg.norm(near))
        assert found == name and score > 0.99


def test_dead_rows_are_compacted_when_they_outnumber_live_ones():
    rng = np.random.default_rng(3)
    index = FactIndex(DIM, guard_exact_max=8)
    index.append_rows(ids(600), ["h"] * 600, unit(rng, 600))
    index.remove(ids(600)[:500])
    assert index.dead == 0 and len(index.row_fact) == len(index) == 100  # rebuilt from the live rows
    q = unit(rng, 1)[0]
    assert index.search(q, 1)[0][0][0] in ids(600)[500:]


def test_cache_round_trip_keeps_rows_dead_rows_and_vectors(tmp_path):
    class Emb:
        model_id, dim = "test/32", DIM

    rng = np.random.default_rng(5)
    index = FactIndex(DIM)
    index.append_rows(ids(20), [f"h{i}" for i in range(20)], unit(rng, 20))
    index.remove(["f3", "f4"])
    IndexCache(tmp_path, Emb()).save(index, file_hash="abc", facts=[])
    loaded = IndexCache(tmp_path, Emb()).load()
    assert loaded is not None and loaded.file_hash == "abc"
    again = loaded.index
    assert again.row_fact == index.row_fact and again.dead == 2 and again.embedded_hash == index.embedded_hash
    q = unit(rng, 1)[0]
    assert again.search(q, 5) == index.search(q, 5)
