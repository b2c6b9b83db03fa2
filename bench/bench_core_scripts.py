"""Core memory's offline fact rules on Chinese as users in Taiwan and Hong Kong write it.

    .venv/bin/python bench/bench_core_scripts.py

Simplified statements of the kinds the rules know (engine/stores/core/rules.py), converted to
Traditional characters by OpenCC (s2tw): how many give the slots their Simplified form gives. And
statements in written Cantonese: how many give a fact. Prints each statement's facts and the two
counts; asserts nothing.
"""

from __future__ import annotations

import opencc

from engine.stores.core import statements

SIMPLIFIED = [
    "我讨厌吃香菜", "我住在重庆，养了一只猫叫小白。", "我上个月搬到成都了", "我搬到成都了", "其实我不讨厌香菜了", "我叫小明。",
    "我是程序员", "我最喜欢的动物是猫", "我很喜欢喝乌龙茶", "我今年二十八岁", "我在台积电上班", "我家有一只狗", "我不喜欢下雨天",
]
CANTONESE = ["我鍾意飲奶茶", "我住喺沙田", "我養咗一隻貓", "我唔鍾意食芫荽", "我叫阿明", "我而家住喺荃灣", "我喺銀行返工"]


def main() -> None:
    to_traditional = opencc.OpenCC("s2tw")
    same = 0
    for text in SIMPLIFIED:
        traditional = to_traditional.convert(text)
        want = [s.slot for s in statements(text)]
        got = statements(traditional)
        same += bool(want) and [s.slot for s in got] == want
        print(f"{traditional}  ->  {[(s.text, s.slot) for s in got]}")
    facts = 0
    for text in CANTONESE:
        got = statements(text)
        facts += bool(got)
        print(f"{text}  ->  {[(s.text, s.slot) for s in got]}")
    print(f"Traditional characters: {same} of {len(SIMPLIFIED)} give the slots of their Simplified form; "
          f"written Cantonese: {facts} of {len(CANTONESE)} give a fact")


if __name__ == "__main__":
    main()
