"""Postgres backend at scale: hybrid search and time-range queries per user, with and without pgvector.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_pg.py                      # 100k turns / 1 user, 1M / 1,000 users
    PYTHONPATH=$PWD .venv/bin/python bench/bench_pg.py --big 5000 --users 50 --per-user 100   # quick

Data is synthetic, and says so: texts are words drawn from a Zipf distribution over an English and
a (pre-segmented) Chinese vocabulary; vectors are random unit vectors with the shape of text
embeddings (16 topics per user in a 32-dim latent space projected to 384 dims, see
`Generator.vectors`) — not model embeddings, so recall numbers describe the index, not the model.
Rows are bulk-loaded with COPY (the bench measures queries, not the import path; imports go
through `transfer.import_character`). Queries go through the library (`PgTurnSearch.search`,
`PgDiaryTurns.range`): a query is 3 words of one of the user's turns plus that turn's vector with
noise; a range is one random day of the user's history.

Reported per path (pgvector = pgserver's PostgreSQL 16 + pgvector; worker = Debian PostgreSQL 15
without it, vectors scored in the worker): p50 of hybrid search (k=20) and of the range query,
for the 100k-turn user and for users of the 1,000-user table; for pgvector also the recall@10 of
the user's partial HNSW index against exact search, and the recall of one shared HNSW index
filtered by user (the approach this backend rejects) on 1,000 users x 100 turns.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pg_server import PgServer, find_install  # noqa: E402

from engine.backends.postgres import Database, PgSettings, upgrade  # noqa: E402
from engine.backends.postgres.diary import PgDiaryTurns  # noqa: E402
from engine.backends.postgres.search import PgTurnSearch  # noqa: E402

DIM = 384
LATENT = 32
T0 = datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=8)))
ZH = ("火锅 博物馆 香菜 猫 阿黄 爬山 加班 电影 咖啡 下雨 生日 医院 考试 旅行 重庆 成都 北京 上海 面试 搬家 "
      "跑步 游泳 音乐 钢琴 小说 画画 做饭 饺子 面条 米饭 朋友 妈妈 爸爸 老师 同事 公司 学校 周末 假期 春节").split()


def vocabulary(rng: np.random.Generator, n: int = 5000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = {"".join(rng.choice(letters, size=rng.integers(3, 9))) for _ in range(n * 2)}
    return sorted(words)[:n] + ZH


class Generator:
    kind = "lowrank"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        shared = np.random.default_rng(12345)
        self.projection = shared.standard_normal((LATENT, DIM)).astype(np.float32) / np.sqrt(LATENT)
        self.topics = shared.standard_normal((200, LATENT)).astype(np.float32)
        self.vocab = np.array(vocabulary(self.rng), dtype=object)
        ranks = np.arange(1, len(self.vocab) + 1)
        self.p = (1 / ranks) / (1 / ranks).sum()

    def texts(self, n: int, words: int = 12) -> list[str]:
        picks = self.rng.choice(len(self.vocab), size=(n, words), p=self.p)
        return [" ".join(self.vocab[row]) for row in picks]

    def vectors(self, n: int, topics: int = 16) -> np.ndarray:
        """Unit vectors with the shape of text embeddings: a mixture of topics in a 32-dim latent
        space, mapped into 384 dims by one fixed random projection, plus a little isotropic noise.
        (Isotropic noise in all 384 dims — `--vectors isotropic` — has no neighbourhood structure:
        every point is about equally far from every other, which no ANN index, and no real
        embedding model, looks like.)"""
        if self.kind == "isotropic":
            centers = self.rng.standard_normal((topics, DIM)).astype(np.float32)
            v = centers[self.rng.integers(0, topics, n)] + 0.6 * self.rng.standard_normal((n, DIM)).astype(np.float32)
        else:
            # Users share one pool of topics (everyone talks about food and work), each user
            # drawing 16 of them: a shared index then holds other users' rows right next to yours.
            centers = self.topics[self.rng.choice(len(self.topics), topics, replace=False)]
            z = centers[self.rng.integers(0, topics, n)] + 0.7 * self.rng.standard_normal((n, LATENT)).astype(np.float32)
            v = z @ self.projection + 0.05 * self.rng.standard_normal((n, DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def bulk_load(conninfo: str, owner: int, n: int, gen: Generator, *, vector: bool, spacing_s: int,
              config: str = "english") -> tuple[list[str], np.ndarray]:
    """COPY n turns of one owner into diary_turns and turn_search; returns (texts, vectors)."""
    texts, vecs = gen.texts(n), gen.vectors(n)
    with psycopg.connect(conninfo) as conn:
        if vector:
            from pgvector.psycopg import register_vector

            register_vector(conn)
        ats = [T0 + timedelta(seconds=spacing_s * i) for i in range(n)]
        with conn.cursor() as cur:
            with cur.copy("COPY diary_turns (owner_id, turn_id, at, at_off, local_day, user_text, assistant_text) "
                          "FROM STDIN") as copy:
                for i in range(n):
                    copy.write_row((owner, f"t{i}", ats[i], 28800, ats[i].date(), texts[i], "ok"))
            cur.execute("CREATE TEMP TABLE stage (owner_id bigint, turn_id text, at timestamptz, doc text, "
                        + ("embedding vector(384))" if vector else "vec bytea)"))
            col = "embedding" if vector else "vec"
            with cur.copy(f"COPY stage (owner_id, turn_id, at, doc, {col}) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["bigint", "text", "timestamptz", "text", "vector" if vector else "bytea"])
                for i in range(n):
                    copy.write_row((owner, f"t{i}", ats[i], texts[i] + "\nok",
                                    vecs[i] if vector else vecs[i].astype("<f4").tobytes()))
            cur.execute(f"INSERT INTO turn_search (owner_id, turn_id, at, lexemes, {col}) SELECT owner_id, turn_id, at, "
                        f"array_to_tsvector(ARRAY['owner ' || owner_id]) || to_tsvector(%s::regconfig, doc), {col} FROM stage", (config,))
            cur.execute("DROP TABLE stage")
    return texts, vecs


def owner_ids(conninfo: str, n: int, character: str = "bench") -> list[int]:
    with psycopg.connect(conninfo) as conn:
        for i in range(n):
            conn.execute("INSERT INTO owners (character_id, user_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (character, f"u{i}"))
        return [r[0] for r in conn.execute("SELECT id FROM owners WHERE character_id = %s ORDER BY id", (character,))]


def p50_ms(fn, args_list) -> float:
    times = []
    for args in args_list:
        t = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def queries(gen: Generator, texts: list[str], vecs: np.ndarray, n: int) -> list[tuple[str, np.ndarray, int]]:
    out = []
    for i in gen.rng.integers(0, len(texts), n):
        words = texts[i].split()
        # Noise of norm ~0.3 around a unit vector: a paraphrase-like query near turn i.
        q = vecs[i] + (0.3 / np.sqrt(DIM)) * gen.rng.standard_normal(DIM).astype(np.float32)
        out.append((" ".join(words[:3]), (q / np.linalg.norm(q)).astype(np.float32), int(i)))
    return out


def measure_user(db, state, user: str, qs, *, span_days: int, gen: Generator, hnsw: bool = False) -> dict:
    search = PgTurnSearch(db, "bench", state=state, hnsw_min_rows=0 if hnsw else 10**12)
    diary = PgDiaryTurns(db, "bench")
    result = {}
    if state.vector_mode == "worker":
        t = time.perf_counter()
        search.vector_search(user, qs[0][1], k=20)
        result["worker cold load ms"] = (time.perf_counter() - t) * 1000
    search.search(user, qs[0][0], qs[0][1], k=20)  # warm caches and connections
    result["hybrid p50 ms"] = p50_ms(lambda t, v: search.search(user, t, v, k=20), [(t, v) for t, v, _ in qs])
    result["vector p50 ms"] = p50_ms(lambda v: search.vector_search(user, v, k=20), [(v,) for _, v, _ in qs])
    result["lexical p50 ms"] = p50_ms(lambda t: search.lexical_search(user, t, k=20), [(t,) for t, _, _ in qs])
    days = [T0 + timedelta(days=int(d)) for d in gen.rng.integers(0, max(1, span_days), len(qs))]
    result["range(1 day) p50 ms"] = p50_ms(lambda s: diary.range(user, s, s + timedelta(days=1)), [(d,) for d in days])
    return result


def hnsw_recall(db, state, user: str, qs, efs=(40, 100, 200)) -> dict:
    search = PgTurnSearch(db, "bench", state=state, hnsw_min_rows=0)
    t = time.perf_counter()
    search.ensure_owner_index(user)
    out = {"partial HNSW build s": time.perf_counter() - t}
    exact = [{tid for tid, _ in search.vector_search(user, v, k=10, exact=True)} for _, v, _ in qs]
    for ef in efs:
        search.ef_search = ef
        got = [{tid for tid, _ in search.vector_search(user, v, k=10, exact=False)} for _, v, _ in qs]
        out[f"recall@10 ef={ef}"] = float(np.mean([len(a & b) / 10 for a, b in zip(got, exact)]))
        out[f"hnsw p50 ms ef={ef}"] = p50_ms(lambda v: search.vector_search(user, v, k=10, exact=False), [(v,) for _, v, _ in qs])
    return out


def filtered_global_hnsw(server: PgServer, users: int, per_user: int, nq: int) -> dict:
    """One HNSW over every user's rows, filtered by owner: what recall does a user get?"""
    conninfo = server.create_database("bench_filtered", vector=True)
    with psycopg.connect(conninfo) as conn:
        upgrade(conn)
    gen = Generator(7)
    ids = owner_ids(conninfo, users)
    data = {o: bulk_load(conninfo, o, per_user, gen, vector=True, spacing_s=3600) for o in ids}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        t = time.perf_counter()
        conn.execute("CREATE INDEX ON turn_search USING hnsw (embedding vector_cosine_ops)")
        build = time.perf_counter() - t
        conn.execute("ANALYZE turn_search")
        out = {"global HNSW build s": build, "rows": users * per_user}
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT turn_id FROM turn_search WHERE owner_id = 1 ORDER BY embedding <=> %s LIMIT 10",
            (data[ids[0]][1][0],)))
        out["planner uses the shared HNSW"] = "hnsw" in plan.lower() or "turn_search_embedding_idx" in plan
        conn.execute("SET enable_sort = off")  # make the planner walk the graph (else it sorts the user's rows)
        for ef in (40, 200, 1000):
            conn.execute(f"SET hnsw.ef_search = {ef}")
            recalls = []
            for o in gen.rng.choice(ids, nq):
                texts, vecs = data[o]
                q = vecs[gen.rng.integers(0, per_user)] + (0.3 / np.sqrt(DIM)) * gen.rng.standard_normal(DIM).astype(np.float32)
                q = q / np.linalg.norm(q)
                exact = {r[0] for r in conn.execute(
                    "SELECT turn_id FROM (SELECT turn_id, embedding <=> %s d FROM turn_search WHERE owner_id = %s "
                    "OFFSET 0) s ORDER BY d LIMIT 10", (q, int(o)))}
                got = {r[0] for r in conn.execute(
                    f"SELECT turn_id FROM turn_search WHERE owner_id = {int(o)} ORDER BY embedding <=> %s LIMIT 10", (q,))}
                recalls.append(len(got & exact) / 10)
            out[f"filtered recall@10 ef={ef}"] = float(np.mean(recalls))
        conn.execute("RESET enable_sort")
    return out


def run_path(install_name: str, args) -> dict:
    install = find_install(install_name)
    if install is None:
        print(f"skip {install_name}: not installed")
        return {}
    results: dict = {}
    with PgServer(install) as server:
        vector = install.has_vector
        print(f"[{install_name}] PostgreSQL started in {server.start_seconds:.2f} s", flush=True)
        conninfo = server.create_database("bench", vector=vector)
        with psycopg.connect(conninfo) as conn:
            state = upgrade(conn)
        print(f"[{install_name}] {state.describe()}", flush=True)
        gen = Generator(1)
        [big] = owner_ids(conninfo, 1, character="bench")
        t = time.perf_counter()
        texts, vecs = bulk_load(conninfo, big, args.big, gen, vector=vector, spacing_s=600)
        many = owner_ids(conninfo, args.users + 1)[1:]
        sample = set(gen.rng.choice(len(many), min(args.sample_users, len(many)), replace=False).tolist())
        kept = {}
        for n, o in enumerate(many):
            loaded = bulk_load(conninfo, o, args.per_user, gen, vector=vector, spacing_s=3600)
            if n in sample:
                kept[f"u{n + 1}"] = loaded
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
        results["load s"] = time.perf_counter() - t
        results["database size"] = size
        print(f"[{install_name}] loaded {args.big:,} + {args.users * args.per_user:,} turns in {results['load s']:.0f} s ({size})", flush=True)
        db = Database(PgSettings(url=conninfo, max_connections=4), environ={}).open()
        qs = queries(gen, texts, vecs, args.queries)
        results["big user (exact)"] = measure_user(db, state, "u0", qs, span_days=args.big * 600 // 86400, gen=gen)
        print(f"[{install_name}] big user: {results['big user (exact)']}", flush=True)
        if vector:
            results["big user HNSW"] = hnsw_recall(db, state, "u0", qs)
            results["big user (hnsw)"] = measure_user(db, state, "u0", qs, span_days=args.big * 600 // 86400, gen=gen, hnsw=True)
            print(f"[{install_name}] big user HNSW: {results['big user HNSW']} {results['big user (hnsw)']}", flush=True)
        per_user = []
        for user, (t_, v_) in kept.items():
            per_user.append(measure_user(db, state, user, queries(gen, t_, v_, max(5, args.queries // 5)),
                                         span_days=args.per_user // 24, gen=gen))
        results["1,000-user table, sampled users (median)"] = {
            k: statistics.median(r[k] for r in per_user) for k in per_user[0]} if per_user else {}
        print(f"[{install_name}] many users: {results['1,000-user table, sampled users (median)']}", flush=True)
        db.close()
        if vector and args.filtered_users:
            results["shared HNSW filtered by user"] = filtered_global_hnsw(server, args.filtered_users, 100, 50)
            print(f"[{install_name}] shared HNSW: {results['shared HNSW filtered by user']}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--big", type=int, default=100_000, help="turns of the one big user")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--per-user", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--sample-users", type=int, default=20)
    ap.add_argument("--filtered-users", type=int, default=1000, help="users for the shared-HNSW recall test (0: skip)")
    ap.add_argument("--paths", default="pgserver,debian")
    ap.add_argument("--vectors", choices=["lowrank", "isotropic"], default="lowrank",
                    help="synthetic vector shape (see Generator.vectors)")
    args = ap.parse_args()
    Generator.kind = args.vectors
    summary = {}
    for name in args.paths.split(","):
        summary[name] = run_path(name, args)
    print("\nsummary")
    for name, res in summary.items():
        for key, val in res.items():
            if isinstance(val, dict):
                print(f"  {name:9s} {key}: " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in val.items()))
            else:
                print(f"  {name:9s} {key}: {val:.3g}" if isinstance(val, float) else f"  {name:9s} {key}: {val}")


if __name__ == "__main__":
    main()
