"""A book that changes one file at a time grows by merging segments, and always answers exactly
like a book loaded fresh from the same folder (keywords, meaning, constants, errors)."""

from __future__ import annotations

import math
import random

import pytest

from test_worldbook_match import fired, make_store
from test_worldbook_semantic import ask, demo_store


def _file(n: int, version: int) -> str:
    lines = [f"地点{n}号{k}: 第{version}版的设定{k}\n" for k in range(3)]
    if n % 7 == 0:
        lines = [f"- keys: [人物{n}]\n  content: 第{version}版\n"] + (
            [f"- constant: true\n  content: 常驻{n}\n"] if version % 2 else [])
    return "".join(lines)


EDITS = [pytest.param(seed, id=f"seed{seed}") for seed in (1, 2, 3)]


@pytest.mark.parametrize("seed", EDITS)
def test_random_edits_answer_like_a_fresh_load(tmp_path, seed):
    rng = random.Random(seed)
    folder = tmp_path / "agent/data_base"
    store = make_store(tmp_path, {})
    versions: dict[int, int] = {}
    for step in range(60):
        n = rng.randrange(25)
        action = rng.random()
        path = folder / f"f{n:02d}.yaml"
        if action < 0.15 and n in versions:
            path.unlink()
            del versions[n]
        elif action < 0.2 and n in versions:
            path.write_text("坏: [\n", encoding="utf-8")  # broken: its last good version stays
        else:
            versions[n] = versions.get(n, 0) + 1
            path.write_text(_file(n, versions[n]), encoding="utf-8")
        store.refresh()
        if step % 10 == 9:
            fresh = make_store(tmp_path / f"fresh{step}", {})
            for p in folder.glob("*.yaml"):
                (tmp_path / f"fresh{step}/agent/data_base" / p.name).write_bytes(p.read_bytes())
            fresh.refresh()
            message = "".join(f"地点{k}号1 人物{k} " for k in range(25))
            # Broken files keep their last good version in `store` but load nothing when fresh.
            broken = {e.file.rsplit("/", 1)[1] for e in store.status().errors}
            got = [u for u in fired(store, message) if u.split("#")[0] not in broken]
            assert got == fired(fresh, message), step
    snap = store.book.snapshot
    assert len(snap.segments) <= 2 * math.log2(max(2, len(snap.table.entries))) + 1


def test_keys_added_one_by_one_stay_in_few_segments_and_all_fire(tmp_path):
    folder = tmp_path / "agent/data_base"
    store = make_store(tmp_path, {})
    for n in range(200):
        (folder / f"k{n:03d}.yaml").write_text(f"钥匙{n:03d}号: 设定\n", encoding="utf-8")
        assert store.refresh()
    snap = store.book.snapshot
    assert snap.count == 200
    # A binary counter of segment sizes: at most one segment per power of two.
    assert len(snap.segments) <= math.log2(200) + 1
    assert sorted(len(s.entries) for s in snap.segments) == sorted(set(len(s.entries) for s in snap.segments))
    message = " ".join(f"钥匙{n:03d}号" for n in range(0, 200, 13))
    assert fired(store, message) == [f"k{n:03d}.yaml#1" for n in range(0, 200, 13)]


def test_editing_one_file_again_and_again_does_not_keep_its_old_versions(tmp_path):
    folder = tmp_path / "agent/data_base"
    store = make_store(tmp_path, {"a.yaml": "重庆: 山城\n", "b.yaml": "成都: 天府\n"})
    for n in range(300):
        (folder / "a.yaml").write_text(f"重庆: 第{n}版\n", encoding="utf-8")
        store.refresh()
    snap = store.book.snapshot
    assert snap.count == 2 and [h.text for h in [*_hits(store, "重庆 成都")]] == ["重庆: 第299版", "成都: 天府"]
    # Dead versions are dropped by merges and compaction: never more than twice the live book.
    assert sum(len(s.entries) for s in snap.segments) <= 2 * snap.count + 2
    assert len(snap.table.entries) <= 2 * snap.count + 1000


def _hits(store, message):
    from test_worldbook_match import ask as keyword_ask

    return keyword_ask(store, message)


def test_meaning_is_searched_across_segments(tmp_path, embedder):
    store = demo_store(tmp_path, embedder, check_interval_s=0)
    before = [h.meta["uid"] for h in ask(store, embedder, "那个撑船四十年的老爷爷叫什么")]
    folder = tmp_path / "agent/data_base"
    for n in range(5):  # each edit adds a segment; the demo entries stay in the first one
        (folder / f"extra{n}.yaml").write_text(f"无关条目{n}: 一段与摆渡无关的设定{n}\n", encoding="utf-8")
        store.refresh()
    assert len(store.book.snapshot.segments) > 1
    assert [h.meta["uid"] for h in ask(store, embedder, "那个撑船四十年的老爷爷叫什么")] == before == ["人物.yaml#2"]
    (folder / "人物.yaml").write_text((folder / "人物.yaml").read_text(encoding="utf-8").replace("摆渡四十年", "卖糖画"),
                                     encoding="utf-8")
    store.refresh()
    assert "人物.yaml#2" not in [h.meta["uid"] for h in ask(store, embedder, "那个撑船四十年的老爷爷叫什么")]


def test_appending_to_a_file_indexes_only_the_new_entry(tmp_path):
    folder = tmp_path / "agent/data_base"
    store = make_store(tmp_path, {})
    lines: list[str] = []
    for n in range(100):
        lines.append(f"钥匙{n:03d}号: 设定{n}\n")
        (folder / "grow.yaml").write_text("".join(lines), encoding="utf-8")
        store.refresh()
    snap = store.book.snapshot
    # Re-adding the whole file on every append would have put 5,050 entries in the table.
    assert snap.count == 100 and len(snap.table.entries) == 100
    # Changing one entry replaces that entry only; the rest keep their indices.
    before = {uid: i for i, uid in ((i, e.uid) for i, e in snap.entries())}
    lines[40] = "钥匙040号: 改过的设定\n"
    (folder / "grow.yaml").write_text("".join(lines), encoding="utf-8")
    store.refresh()
    after = {uid: i for i, uid in ((i, e.uid) for i, e in store.book.snapshot.entries())}
    assert [uid for uid in before if before[uid] != after[uid]] == ["grow.yaml#41"]
    assert [h.text for h in _hits(store, "钥匙040号 钥匙041号")] == ["钥匙040号: 改过的设定", "钥匙041号: 设定41"]


@pytest.mark.parametrize("seed", EDITS[:2])
def test_partial_edits_answer_like_a_fresh_load(tmp_path, embedder, seed):
    """Edits that change, insert, delete or disable single entries of a file (so most entries are
    kept in place) give the same keyword and meaning answers as loading the folder fresh."""
    rng = random.Random(seed)
    folder = tmp_path / "agent/data_base"
    store = demo_store(tmp_path, embedder, check_interval_s=0)
    files: dict[str, list[str]] = {f"p{k}.yaml": [f"地名{k}{j}号: 第{k}{j}处地方的设定\n" for j in range(6)]
                                   for k in range(4)}
    for step in range(18):
        name = rng.choice(sorted(files))
        body = files[name]
        j = rng.randrange(len(body))
        action = rng.random()
        if action < 0.3:
            body.insert(j, f"新地名{step}号: 第{step}步加的设定\n")  # shifts the uids after it
        elif action < 0.5 and len(body) > 1:
            del body[j]
        elif action < 0.7:
            body.append(f"末尾{step}号: 第{step}步加在最后\n")
        else:
            body[j] = body[j].split(":")[0] + f": 第{step}步改过的设定\n"
        (folder / name).write_text("".join(body), encoding="utf-8")
        store.refresh()
        if step % 6 == 5:
            fresh = demo_store(tmp_path / f"fresh{step}", embedder, check_interval_s=0)
            for p in folder.glob("*.yaml"):
                (tmp_path / f"fresh{step}/agent/data_base" / p.name).write_bytes(p.read_bytes())
            fresh.refresh()
            message = " ".join(line.split(":")[0] for body in files.values() for line in body[::2])
            assert fired(store, message) == fired(fresh, message), step
            for question in ("第二处地方是什么样的", "最后加的设定", "那个撑船四十年的老爷爷叫什么"):
                got = [(h.meta["uid"], h.text) for h in ask(store, embedder, question)]
                assert got == [(h.meta["uid"], h.text) for h in ask(fresh, embedder, question)], (step, question)
