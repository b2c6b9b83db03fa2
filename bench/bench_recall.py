"""Recall bench: the protocol of shared/eval/README.md on LoCoMo, through the real engine.

    .venv/bin/python bench/bench_recall.py [--data DIR] [--convs conv-26,conv-30] [--zh] [--storage postgres]

Each conversation is recorded as one user with `record_turn` (speaker_a's line then speaker_b's
answer as one turn; a line with no answer gets an empty reply; a speaker_b line with no question
before it gets an empty user text; `at` = session start + i minutes, America/New_York, language
en), then every question of categories 1-4 is asked with `build_prompt(question, now=last session
+ 1 day)`. Evidence recall per category = the share of evidence turns whose text appears in the
built messages. Memory tokens = world book + core + diary + summary of each prompt.

Tuning split: the first three conversations; held-out: the last two (reported separately; the
method was tuned on the first and only checked on the second). `--zh` also runs every JSON file
in bench/zh_eval/ (same format) if there is one. `--data DIR` keeps the recorded users between
runs (recording ~2,800 turns embeds ~8,000 texts; a user is recorded once per folder).
`--storage postgres` runs the same protocol on the Postgres backend, in a throwaway server started
as the tests do (tests/pg_server.py; pgserver with pgvector, `--pg-install debian` without).
`--cold` asks the questions from a worker that has not warmed up: after recording, the engine is
opened afresh with its derived search copies deleted and nothing built ahead (on Postgres, the
worker's copy of the user's index; on files, the user's search index, rebuilt from the day files).
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
EVAL = next(
    (p / "shared" / "eval" / "locomo_dev.json" for p in ROOT.parents if (p / "shared" / "eval" / "locomo_dev.json").is_file()),
    ROOT / "shared" / "eval" / "locomo_dev.json",
)
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}
MEMORY_TIERS = ("world_book", "core", "diary", "summary")
TUNE = ("conv-26", "conv-30", "conv-41")


def session_keys(conv: dict) -> list[str]:
    keys = [k for k in conv if k.startswith("session_") and not k.endswith("date_time") and conv[k]]
    return sorted(keys, key=lambda k: int(k.split("_")[1]))


def parse_when(text: str, tz: ZoneInfo) -> datetime:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=tz)
        except ValueError:
            continue
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"unreadable session time {text!r}") from None
    return at if at.tzinfo else at.replace(tzinfo=tz)


def turns_of(conv: dict, tz: ZoneInfo) -> list[tuple[datetime, str, str]]:
    """(at, user, assistant) per turn, the protocol's pairing."""
    a = conv["speaker_a"]
    out = []
    for key in session_keys(conv):
        start = parse_when(conv[f"{key}_date_time"], tz)
        pending: str | None = None
        session: list[tuple[str, str]] = []
        for utt in conv[key]:
            if utt["speaker"] == a:
                if pending is not None:
                    session.append((pending, ""))
                pending = utt["text"]
            else:
                session.append((pending or "", utt["text"]))
                pending = None
        if pending is not None:
            session.append((pending, ""))
        out += [(start + timedelta(minutes=i), u, r) for i, (u, r) in enumerate(session)]
    return out


def language_of(sample: dict) -> tuple[str, str]:
    """(language, time zone): Chinese sets run in zh / Asia/Shanghai, LoCoMo in en / New York."""
    conv = sample["conversation"]
    first = next((u["text"] for k in session_keys(conv) for u in conv[k]), "")
    return ("zh", "Asia/Shanghai") if re.search(r"[\u4e00-\u9fff]", first) else ("en", "America/New_York")


def make_character(data: Path, name: str, user_name: str, language: str, zone: str) -> str:
    cid = "locomo"
    folder = data / "agents" / cid
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "character.yaml").write_text(
        f"name: {json.dumps(name, ensure_ascii=False)}\nuser_name: {json.dumps(user_name, ensure_ascii=False)}\n"
        f'settings: "A friend in a long-running chat."\nconfig:\n  language: {language}\n  timezone: {zone}\n',
        encoding="utf-8",
    )
    return cid


STORAGE: dict = {}
"""`storage` config overrides (set by `--storage postgres`)."""
COLD = False
"""Set by `--cold`: ask from a worker that has not warmed up."""
QUESTIONS = None
"""With --questions: the open file each evidence turn's result is written to."""


def open_orch(data: Path, sample: dict):
    from engine.config import load_config
    from engine.orchestrator import MemoryOrchestrator

    conv = sample["conversation"]
    language, zone = language_of(sample)
    zone = sample.get("timezone", zone)
    cid = make_character(data / sample["sample_id"], conv["speaker_b"], conv["speaker_a"], language, zone)
    config = load_config(
        overrides={
            "data_dir": str(data / sample["sample_id"]),
            "llm": {"backend": "none"},
            "language": language,
            "timezone": zone,
            # 1,500 memory tokens: the diary plans within its cap; the rolling summary (offline: the
            # extract, see MemoryOrchestrator._summary_hit) takes at most 200 of what the diary leaves.
            "retrieval": {"budget_tokens": 1500, "caps": {"diary": 1500, "summary": 200}},
            **({"storage": STORAGE} if STORAGE else {}),
        },
        env={},
    )
    return MemoryOrchestrator.from_config(cid, config=config)


def record_once(orch, data: Path, user: str, turns: list[tuple[datetime, str, str]]) -> None:
    """Record a conversation's turns as one user, once per --data folder: recording the same turns
    again is not a pure no-op for the short-term window (old turns re-enter it), and the window
    decides which lines the diary skips."""
    done = data / user / "recorded.ok"
    if done.is_file():
        return
    for i, (at, u, r) in enumerate(turns):
        orch.record_turn(u, r, user_id=user, at=at, turn_id=f"{user}-{i:05d}")
    orch.flush()
    done.write_text(f"{len(turns)}\n", encoding="utf-8")


def finish_index(orch, user: str) -> None:
    """A user recorded before term vectors existed gets them in the background at open: finish them
    first (what `kioku reindex` does), so every question is asked of the same index."""
    for store in orch.stores:
        if store.name == "diary" and hasattr(store, "build_search_index"):
            store.build_search_index(user, progress=False)


def run_sample(sample: dict, data: Path, stats: dict) -> None:
    tz = ZoneInfo(sample.get("timezone", language_of(sample)[1]))
    conv = sample["conversation"]
    turns = turns_of(conv, tz)
    user = sample["sample_id"]
    orch = open_orch(data, sample)
    t = time.perf_counter()
    record_once(orch, data, user, turns)
    stats["record_s"] += time.perf_counter() - t
    if COLD:
        orch.close()
        for copy in (data / user).rglob("pg-search*"):
            shutil.rmtree(copy, ignore_errors=True)
        for copy in (data / user).rglob("diary/search"):
            shutil.rmtree(copy, ignore_errors=True)
        orch = open_orch(data, sample)
    else:
        finish_index(orch, user)
    now = turns[-1][0].replace(hour=12, minute=0) + timedelta(days=1)
    text_of = {u["dia_id"]: u["text"] for k in session_keys(conv) for u in conv[k]}
    for q in sample["qa"]:
        cat = q.get("category")
        if cat not in CATEGORIES:
            continue
        t = time.perf_counter()
        result = orch.build_prompt(str(q["question"]), user_id=user, now=now)
        stats["ms"].append((time.perf_counter() - t) * 1000)
        built = "\n".join(m["content"] for m in result.messages)
        stats["memory"].append(sum(result.tokens.get(tier, 0) for tier in MEMORY_TIERS))
        for ev in q.get("evidence", []):
            for one in str(ev).replace(" ", "").split(";"):
                text = text_of.get(one)
                if text is None:
                    stats["missing_ids"] += 1
                    continue
                stats["found"][cat] += text in built
                stats["total"][cat] += 1
                if QUESTIONS is not None:
                    QUESTIONS.write(json.dumps({"sample": user, "question": q["question"], "category": cat,
                                                "evidence": one, "found": text in built}, ensure_ascii=False) + "\n")
    orch.close()


def report(label: str, stats: dict) -> str:
    parts = [
        f"{CATEGORIES[c]} {stats['found'][c] / stats['total'][c]:.3f}" if stats["total"][c] else f"{CATEGORIES[c]} n/a"
        for c in CATEGORIES
    ]
    mem = stats["memory"]
    line = (
        f"{label}: " + "  ".join(parts)
        + f"  | memory tokens mean {statistics.mean(mem):.0f} max {max(mem)}"
        + f"  | build_prompt p50 {statistics.median(stats['ms']):.1f} ms  | questions {len(mem)}"
    )
    print(line)
    return line


def new_stats() -> dict:
    return {"found": defaultdict(int), "total": defaultdict(int), "memory": [], "ms": [], "record_s": 0.0,
            "missing_ids": 0}


def run_set(name: str, samples: list[dict], data: Path, tune: tuple[str, ...]) -> None:
    splits = {"tuning": new_stats(), "held-out": new_stats(), "all": new_stats()}
    for sample in samples:
        one = new_stats()
        run_sample(sample, data, one)
        report(f"  {sample['sample_id']}", one)
        for key in ("tuning" if sample["sample_id"] in tune else "held-out", "all"):
            merge(splits[key], one)
    for key, stats in splits.items():
        if stats["memory"]:
            report(f"{name} {key}", stats)
    print(f"(recording took {splits['all']['record_s']:.0f} s; evidence ids not in the data: {splits['all']['missing_ids']})")


def merge(into: dict, one: dict) -> None:
    for c in CATEGORIES:
        into["found"][c] += one["found"][c]
        into["total"][c] += one["total"][c]
    into["memory"] += one["memory"]
    into["ms"] += one["ms"]
    into["record_s"] += one["record_s"]
    into["missing_ids"] += one["missing_ids"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="keep recorded users here (reused when present)")
    parser.add_argument("--eval", type=Path, default=EVAL)
    parser.add_argument("--convs", help="comma-separated sample ids (default: all)")
    parser.add_argument("--zh", action="store_true", help="also run bench/zh_eval/*.json if present")
    parser.add_argument("--zh-dir", type=Path, default=ROOT / "bench" / "zh_eval", help="where the Chinese set is")
    parser.add_argument("--storage", choices=["files", "postgres"], default="files")
    parser.add_argument("--cold", action="store_true", help="ask from a worker that has not warmed up (see above)")
    parser.add_argument("--questions", type=Path,
                        help="write each evidence turn's result as a JSON line here (to compare two trees)")
    parser.add_argument("--pg-install", choices=["pgserver", "debian"], default="pgserver")
    args = parser.parse_args()
    from engine.runtime import configure_threads

    configure_threads()  # as `kioku serve` runs: one faiss thread, one BLAS thread (engine/runtime.py)
    data = args.data or Path(tempfile.mkdtemp(prefix="kioku-recall-"))
    global COLD, QUESTIONS
    COLD = args.cold
    QUESTIONS = args.questions.open("w", encoding="utf-8") if args.questions else None
    server = _start_postgres(args.pg_install) if args.storage == "postgres" else None
    try:
        samples = json.loads(args.eval.read_text(encoding="utf-8"))
        if args.convs:
            wanted = set(args.convs.split(","))
            samples = [s for s in samples if s["sample_id"] in wanted]
        run_set("locomo dev", samples, data / "locomo", TUNE)
        zh_dir = args.zh_dir
        if args.zh:
            files = sorted(zh_dir.glob("*.json")) if zh_dir.is_dir() else []
            if not files:
                print("zh: no bench/zh_eval/*.json; skipped")
            for path in files:
                zh = json.loads(path.read_text(encoding="utf-8"))
                run_set(f"zh {path.stem}", zh, data / f"zh-{path.stem}", tuple(s["sample_id"] for s in zh))
    finally:
        if QUESTIONS is not None:
            QUESTIONS.close()
        if server is not None:
            from engine.backends.postgres.backend import close_backends

            close_backends()
            server.stop()
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)


def _start_postgres(install: str):
    """A throwaway server with the schema applied; STORAGE points the orchestrators at it."""
    import sys

    import psycopg

    sys.path.insert(0, str(ROOT / "tests"))
    from pg_server import PgServer, find_install

    from engine.config import load_config
    from engine.factory import make_embedder
    from engine.backends.postgres import upgrade

    server = PgServer(find_install(install)).start()
    conninfo = server.create_database("kioku", vector=install == "pgserver")
    with psycopg.connect(conninfo) as conn:
        state = upgrade(conn, dim=make_embedder(load_config(env={}).embedder).dim)
    print(f"storage: {state.describe()}")
    STORAGE.update(backend="postgres", url=conninfo)
    return server


if __name__ == "__main__":
    main()
