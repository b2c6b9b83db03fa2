"""The turn-vector file and the row-text file of the search index, on real files: what is read
back is what was written, in the order asked, whatever that order."""

from __future__ import annotations

import numpy as np
import pytest

from engine.search.vectors import KINDS, TextFile, VectorFile


@pytest.fixture
def vectors(tmp_path):
    rng = np.random.default_rng(7)
    data = rng.standard_normal((50, KINDS, 8)).astype(np.float16)
    data[3, 0, :4] = [0.0, -0.0, np.inf, 6.1e-5]  # zero, signed zero, infinity, a subnormal-range value
    vf = VectorFile(tmp_path / "vectors.f16", dim=8)
    vf.reset()
    vf.append(data[:20])
    vf.append(data[20:])
    return vf, data


@pytest.mark.parametrize("rows", [[3], [0, 1, 2, 49], [49, 3, 17, 0], [5, 5, 2], []])
@pytest.mark.parametrize("kind", [None, 0, 1, 2])
def test_vectors_come_back_as_written_in_the_order_asked(vectors, rows, kind):
    vf, data = vectors
    rows = np.array(rows, dtype=np.int64)
    want = data[rows] if kind is None else data[rows, kind]
    got = vf.take(rows, kind=kind)
    assert got.dtype == np.float32
    assert got.shape == (want.shape if rows.size else ((0, KINDS, 8) if kind is None else (0, 8)))
    assert np.array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize("rows, kinds", [([49, 3, 17, 0], [1, 0, 2, 1]), ([5, 5, 2], [0, 1, 0]), ([0, 1, 2], [2, 2, 0])])
@pytest.mark.parametrize("bulk", [False, True])
def test_a_kind_per_row_comes_back_in_the_order_asked_by_lookup_or_by_cast(vectors, rows, kinds, bulk, monkeypatch):
    import engine.search.vectors as module

    if bulk:  # a bulk read casts instead of looking up: the same numbers
        monkeypatch.setattr(module, "BULK_CAST", 0)
    vf, data = vectors
    rows, kinds = np.array(rows, dtype=np.int64), np.array(kinds, dtype=np.int64)
    got = vf.take(rows, kind=kinds)
    assert got.dtype == np.float32 and np.array_equal(got, data[rows, kinds].astype(np.float32))


def test_row_texts_come_back_as_written_after_more_are_appended(tmp_path):
    tf = TextFile(tmp_path / "texts.jsonl")
    tf.reset()
    tf.append([["你好", "早上好", []], ["", "reply only", [["yesterday", "2023-05-07"]]]])
    assert tf.get(1) == ["", "reply only", [["yesterday", "2023-05-07"]]]
    tf.append([["第三行 ✓", "", []]])  # the file grew after it was mapped
    assert [tf.get(r) for r in (2, 0)] == [["第三行 ✓", "", []], ["你好", "早上好", []]]
    again = TextFile(tmp_path / "texts.jsonl")
    assert again.open(tf.all_ends()) and again.get(2) == ["第三行 ✓", "", []]
    tf.append([['say "hi"\n, then [go]', "\\", []]])  # JSON's own characters in the texts
    written = [["你好", "早上好", []], ["", "reply only", [["yesterday", "2023-05-07"]]], ["第三行 ✓", "", []],
               ['say "hi"\n, then [go]', "\\", []]]
    rows = [3, 0, 2, 2, 1]  # any order, repeats, the row appended after the last mapping
    assert tf.get_many(rows) == [written[r] for r in rows] and tf.get_many([]) == []


def test_a_rebuilt_index_never_reads_the_graph_file_of_the_one_it_replaced(tmp_path, embedder):
    """An unusable index is rebuilt from scratch; its old graph file must go with it. Kept, it was
    read back after the rebuilt rows were saved but before their own graph was (it is written only
    every 500 rows), and its row numbers pointed at other turns' vectors."""
    from engine.search.base import TurnDoc
    from engine.search.files import FileTurnIndex

    rng = np.random.default_rng(7)

    def docs(prefix: str, n: int) -> tuple[list[TurnDoc], np.ndarray]:
        v = rng.standard_normal((n, KINDS, embedder.dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=-1, keepdims=True)
        return [TurnDoc(f"{prefix}{i}", 1_700_000_000 + i, f"{prefix} {i}", "ok") for i in range(n)], v

    old_docs, old_vectors = docs("old", 10)
    old = FileTurnIndex(tmp_path / "ix", embedder)
    old.add(old_docs, vectors=old_vectors)
    old.save(force=True)
    assert (tmp_path / "ix" / "graph.faiss").is_file()
    (tmp_path / "ix" / "meta.npz").write_bytes(b"not an index")  # unusable: rebuilt empty
    new_docs, new_vectors = docs("new", 12)
    rebuilt = FileTurnIndex(tmp_path / "ix", embedder)
    rebuilt.add(new_docs, vectors=new_vectors)
    rebuilt.save()  # the rows, not yet the graph
    reopened = FileTurnIndex(tmp_path / "ix", embedder)
    for row in range(12):
        rows, _ = reopened.graph.search(new_vectors[row, 2], 1)
        assert rows.tolist() == [row]


@pytest.mark.parametrize("batches", [[1500], [500, 1000], [7] * 214 + [2]])
def test_a_small_graph_finds_exactly_the_nearest_rows_however_they_were_added(tmp_path, batches):
    """Up to EXACT_ROWS rows a search scans the graph's storage: the nearest rows exactly, so the
    files backend and a Postgres worker's copy (which add rows in other batches) agree."""
    from engine.search.vectors import EXACT_ROWS, TurnGraph

    rng = np.random.default_rng(11)
    centers = rng.standard_normal((30, 64)).astype(np.float32)
    rows = centers[rng.integers(0, 30, sum(batches))] + 0.5 * rng.standard_normal((sum(batches), 64)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    assert len(rows) <= EXACT_ROWS
    graph = TurnGraph(64, tmp_path / "g.faiss", m=16)
    start = 0
    for n in batches:
        graph.add(rows[start : start + n])
        start += n
    stored = rows.astype(np.float16).astype(np.float32)  # the graph keeps fp16
    for q in rng.standard_normal((25, 64)).astype(np.float32):
        q /= np.linalg.norm(q)
        found, sims = graph.search(q, 200)
        exact = stored @ q
        np.testing.assert_allclose(sims, exact[found], atol=1e-4)  # fp16 arithmetic
        assert len(set(found.tolist())) == 200 and np.all(np.diff(sims) <= 1e-6)
        cut = np.sort(exact)[::-1][199]
        assert set(np.flatnonzero(exact > cut + 1e-4).tolist()) <= set(found.tolist())  # none of the nearest missed


@pytest.mark.parametrize("pick", ["a run of rows", "scattered rows", "one row", "no rows"])
def test_the_nearest_among_some_rows_are_exactly_the_nearest_of_those_rows(tmp_path, pick):
    """A long time range's candidates by meaning: FAISS scans only the range's fp16 vectors (a run
    of rows by a range test, scattered rows by a set), and finds what a product over them finds."""
    from engine.search.vectors import TurnGraph

    rng = np.random.default_rng(5)
    rows = rng.standard_normal((6000, 32)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    graph = TurnGraph(32, tmp_path / "g.faiss", m=16)
    graph.add(rows)
    among = {"a run of rows": np.arange(1200, 4100), "scattered rows": np.sort(rng.choice(6000, 900, replace=False)),
             "one row": np.array([17]), "no rows": np.zeros(0, dtype=np.int64)}[pick]
    stored = rows.astype(np.float16).astype(np.float32)
    for q in rng.standard_normal((10, 32)).astype(np.float32):
        q /= np.linalg.norm(q)
        found = graph.scan_among(q, among, 50)
        sims = stored[among] @ q
        best = among[np.argsort(-sims)[: min(50, among.size)]]
        assert set(found.tolist()) <= set(among.tolist())
        assert sorted(found.tolist()) == sorted(best.tolist())
