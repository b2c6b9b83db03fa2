"""Which lexical index for the Postgres backend: tsvector over jieba-segmented text, or pg_trgm?

    PYTHONPATH=$PWD .venv/bin/python bench/bench_pg_lexical.py

English: the LoCoMo dev split (../shared/eval/locomo_dev.json), each conversation one user, turns
paired as in the eval protocol; every question of categories 1-4 is a lexical-only query; the
number is the share of evidence turns in the top 10 (recall@10) and the p50 query time.
Chinese: no labelled Chinese conversation is on this machine, so a small synthetic set: 40 diary
turns on distinct everyday topics among 400 filler turns, asked about in questions that embed
the topic word in a sentence ("上次我说的火锅店叫什么来着？"); hit@1 and recall@5.
tsvector runs on Debian's PostgreSQL 15 (pg_trgm is a contrib module that pgserver does not ship).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pg_server import PgServer, find_install  # noqa: E402

from engine.backends.postgres import Database, PgSettings, upgrade  # noqa: E402
from engine.backends.postgres.diary import PgDiaryTurns, StoredTurn  # noqa: E402
from engine.backends.postgres.lexical import document_text  # noqa: E402
from engine.backends.postgres.search import IndexedTurn, PgTurnSearch  # noqa: E402

_REPO = Path(__file__).resolve().parents[1]
# ../shared next to the repository (a worktree sits one level deeper).
EVAL = next((p for p in (_REPO.parent / "shared" / "eval" / "locomo_dev.json",
                         _REPO.parent.parent / "shared" / "eval" / "locomo_dev.json") if p.exists()),
            _REPO.parent / "shared" / "eval" / "locomo_dev.json")
T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)
TOPICS = ("火锅 博物馆 香菜 钢琴 面试 搬家 游泳 咖啡 生日 医院 考试 旅行 电影 小说 饺子 跑步 加班 下雨 同学会 "
          "演唱会 自行车 图书馆 感冒 牙医 签证 房租 宠物店 健身房 滑雪 露营 烧烤 奶茶 地铁 高铁 机场 快递 "
          "网球 瑜伽 围棋 书法").split()
FILLER = ["今天天气不错，心情很好", "晚上早点睡吧", "工作有点累，但是还行", "我们聊点别的吧", "你今天过得怎么样",
          "哈哈，真有意思", "嗯嗯，我知道了", "明天见", "周末打算在家休息", "最近有点忙"]


def locomo_users() -> list[tuple[str, list[tuple[str, str, list[str]]], list[tuple[str, list[str], int]]]]:
    data = json.loads(EVAL.read_text(encoding="utf-8"))
    out = []
    for rec in data:
        conv = rec["conversation"]
        a = conv["speaker_a"]
        turns: list[tuple[str, str, list[str]]] = []
        n = 1
        while f"session_{n}" in conv:
            pending = None
            for t in conv[f"session_{n}"]:
                if t["speaker"] == a:
                    if pending:
                        turns.append(pending)
                    pending = (t["text"], "", [t["dia_id"]])
                elif pending:
                    turns.append((pending[0], t["text"], pending[2] + [t["dia_id"]]))
                    pending = None
                else:
                    turns.append(("", t["text"], [t["dia_id"]]))
            if pending:
                turns.append(pending)
            n += 1
        qs = [(q["question"], q["evidence"], q["category"]) for q in rec["qa"] if q["category"] in (1, 2, 3, 4)]
        out.append((rec["sample_id"], turns, qs))
    return out


def zh_set() -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    turns = [(FILLER[i % len(FILLER)] + f"（{i}）", "好的") for i in range(400)]
    qs = []
    for k, topic in enumerate(TOPICS):
        pos = 10 * k + 5
        turns[pos] = (f"我周三去了一家{topic}相关的地方，印象很深", "听起来不错，下次再去吧")
        qs.append((f"上次我说的{topic}那件事是哪天来着？", pos))
    return turns, qs


def run_tsvector(conninfo: str, config: str, users, zh) -> dict:
    with psycopg.connect(conninfo) as conn:
        state = upgrade(conn, vector="off", lexical_config=config)
    db = Database(PgSettings(url=conninfo), environ={}).open()
    diary, search = PgDiaryTurns(db, "lex"), PgTurnSearch(db, "lex", state=state)
    recalls, times = [], []
    for uid, turns, qs in users:
        stored = [StoredTurn(id=f"t{i}", at=T0 + timedelta(minutes=i), user=u, assistant=a) for i, (u, a, _) in enumerate(turns)]
        diary.append_many(uid, stored)
        search.add(uid, [IndexedTurn(t.id, t.at, t.user, t.assistant) for t in stored])
        where = {d: f"t{i}" for i, (_, _, ids) in enumerate(turns) for d in ids}
        for q, evidence, _ in qs:
            t = time.perf_counter()
            top = {tid for tid, _ in search.lexical_search(uid, q, k=10)}
            times.append((time.perf_counter() - t) * 1000)
            ev = [where[e] for e in evidence if e in where]
            if ev:
                recalls.append(sum(e in top for e in ev) / len(ev))
    zt, zq = zh
    stored = [StoredTurn(id=f"z{i}", at=T0 + timedelta(minutes=i), user=u, assistant=a) for i, (u, a) in enumerate(zt)]
    diary.append_many("zh", stored)
    search.add("zh", [IndexedTurn(t.id, t.at, t.user, t.assistant) for t in stored])
    hit1, rec5 = [], []
    for q, pos in zq:
        got = [tid for tid, _ in search.lexical_search("zh", q, k=5)]
        hit1.append(bool(got) and got[0] == f"z{pos}")
        rec5.append(f"z{pos}" in got)
    db.close()
    return {"en recall@10": statistics.mean(recalls), "en p50 ms": statistics.median(times),
            "zh hit@1": statistics.mean(hit1), "zh recall@5": statistics.mean(rec5)}


def run_trgm(conninfo: str, users, zh, *, segmented: bool) -> dict:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        conn.execute("CREATE TABLE docs (owner text, turn_id text, doc text)")
        conn.execute("CREATE INDEX ON docs USING gin (doc gin_trgm_ops)")
        conn.execute("SET pg_trgm.word_similarity_threshold = 0.3")
        prep = (lambda u, a: document_text(u, a)) if segmented else (lambda u, a: f"{u}\n{a}")
        recalls, times = [], []
        sql = ("SELECT turn_id FROM docs WHERE owner = %s AND %s <%% doc ORDER BY word_similarity(%s, doc) DESC LIMIT %s")
        for uid, turns, qs in users:
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO docs VALUES (%s, %s, %s)", [(uid, f"t{i}", prep(u, a)) for i, (u, a, _) in enumerate(turns)])
            where = {d: f"t{i}" for i, (_, _, ids) in enumerate(turns) for d in ids}
            for q, evidence, _ in qs:
                t = time.perf_counter()
                top = {r[0] for r in conn.execute(sql, (uid, q, q, 10))}
                times.append((time.perf_counter() - t) * 1000)
                ev = [where[e] for e in evidence if e in where]
                if ev:
                    recalls.append(sum(e in top for e in ev) / len(ev))
        zt, zq = zh
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO docs VALUES ('zh', %s, %s)", [(f"z{i}", prep(u, a)) for i, (u, a) in enumerate(zt)])
        hit1, rec5 = [], []
        for q, pos in zq:
            got = [r[0] for r in conn.execute(sql, ("zh", q, q, 5))]
            hit1.append(bool(got) and got[0] == f"z{pos}")
            rec5.append(f"z{pos}" in got)
    return {"en recall@10": statistics.mean(recalls), "en p50 ms": statistics.median(times),
            "zh hit@1": statistics.mean(hit1), "zh recall@5": statistics.mean(rec5)}


def main() -> None:
    users, zh = locomo_users(), zh_set()
    install = find_install("debian")
    with PgServer(install) as server:
        rows = {
            "tsvector simple + jieba": run_tsvector(server.create_database("s", vector=False), "simple", users, zh),
            "tsvector english + jieba (chosen)": run_tsvector(server.create_database("e", vector=False), "english", users, zh),
            "pg_trgm word_similarity": run_trgm(server.create_database("t", vector=False), users, zh, segmented=False),
            "pg_trgm over jieba-segmented text": run_trgm(server.create_database("ts", vector=False), users, zh, segmented=True),
        }
    for name, r in rows.items():
        print(f"{name:36s} " + "  ".join(f"{k} {v:.3f}" for k, v in r.items()))


if __name__ == "__main__":
    main()
