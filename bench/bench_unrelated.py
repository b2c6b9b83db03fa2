"""How often an unrelated message injects something, per store, through `build_prompt`.

    .venv/bin/python bench/bench_unrelated.py                 # all of bench/zh_eval/unrelated.txt
    .venv/bin/python bench/bench_unrelated.py --show 5        # and the first 5 injections per store

The demo character (`data/agents/xiaoyue`, with its world book) gets a recorded history: each
conversation of the Chinese eval set (`bench/zh_eval/zh_eval.json`) is recorded as one user,
turn by turn at its real times, with the offline fallbacks (no LLM), and the background jobs are
drained. Then every small-talk line of `bench/zh_eval/unrelated.txt` (zh and en) is asked of
every user the day after their last session, and each store's non-constant hits are counted:
an unrelated message should inject no lore, no facts and no diary lines.

It only drives `build_prompt`, so it measures whatever the stores do at the time it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import make_character  # noqa: E402

from engine.config import load_config  # noqa: E402
from engine.orchestrator import MemoryOrchestrator  # noqa: E402

EVAL = ROOT / "bench/zh_eval/zh_eval.json"
UNRELATED = ROOT / "bench/zh_eval/unrelated.txt"
STORES = ("world_book", "core", "diary")


def session_times(conversation: dict, tz: ZoneInfo) -> list[tuple[datetime, list[dict]]]:
    out = []
    n = 1
    while f"session_{n}" in conversation:
        stamp = conversation[f"session_{n}_date_time"]  # "9:10 pm on 26 April, 2025"
        at = datetime.strptime(stamp.replace(" on ", " "), "%I:%M %p %d %B, %Y").replace(tzinfo=tz)
        out.append((at, conversation[f"session_{n}"]))
        n += 1
    return out


def record(orch: MemoryOrchestrator, user: str, sessions: list[tuple[datetime, list[dict]]], speaker_a: str) -> int:
    turns = 0
    for start, lines in sessions:
        for i in range(0, len(lines), 2):
            a = lines[i]
            b = lines[i + 1] if i + 1 < len(lines) and lines[i + 1]["speaker"] != speaker_a else None
            orch.record_turn(a["text"], b["text"] if b else "", user_id=user, at=start + timedelta(minutes=i))
            turns += 1
    return turns


def _world_book_trigger(meta: dict) -> str:
    """Whether the unrelated message itself fired the entry, or an earlier message of the window did."""
    if meta.get("kind") == "keyword":
        return "keyword in the message" if str(meta.get("where", "")).startswith("message 0") else "keyword in the window"
    return str(meta.get("kind"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=3, help="print this many injections per store")
    parser.add_argument("--world-book-threshold", type=float, default=None,
                        help="one absolute cosine for the world book instead of its calibrated margin (the old rule: 0.88)")
    args = parser.parse_args()
    lines = [x.strip() for x in UNRELATED.read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]
    records = json.loads(EVAL.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        make_character(data)
        overrides: dict = {"data_dir": str(data)}
        if args.world_book_threshold is not None:
            overrides["world_book"] = {"threshold": args.world_book_threshold}
        config = load_config(overrides=overrides, env={})
        orch = MemoryOrchestrator.from_config("xiaoyue", config=config)
        users: list[tuple[str, datetime]] = []
        recorded = 0
        for rec in records:
            tz = ZoneInfo(rec.get("timezone", "Asia/Shanghai"))
            sessions = session_times(rec["conversation"], tz)
            user = rec["sample_id"]
            recorded += record(orch, user, sessions, rec["conversation"]["speaker_a"])
            users.append((user, sessions[-1][0] + timedelta(days=1)))
        orch.flush()
        print(f"history: {len(users)} users, {recorded} turns recorded (offline fallbacks); "
              f"{len(lines)} unrelated messages asked of each user")
        injected: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        hits_per_store: Counter[str] = Counter()
        by_what: Counter[str] = Counter()
        asked = 0
        for user, now in users:
            for message in lines:
                result = orch.build_prompt(message, user_id=user, now=now)
                asked += 1
                seen = set()
                for hit in result.hits:
                    if hit.store in STORES and not (hit.store == "world_book" and hit.meta.get("kind") == "constant"):
                        hits_per_store[hit.store] += 1
                        if hit.store not in seen:
                            injected[hit.store].append((message, hit.text[:60], hit.reason[:90]))
                        seen.add(hit.store)
                        if hit.store == "world_book":
                            by_what[_world_book_trigger(hit.meta)] += 1
        orch.close()
    print(f"{'store':<12} {'messages that inject something':>32} {'hits':>6}")
    for store in STORES:
        n = len(injected[store])
        print(f"{store:<12} {n:>10} of {asked:<5} ({n / asked:6.1%}) {hits_per_store[store]:>12}")
    print("world_book hits by trigger: " + ", ".join(f"{k} {v}" for k, v in sorted(by_what.items())) or "none")
    for store in STORES:
        for message, text, reason in injected[store][: args.show]:
            print(f"  {store}: {message!r} -> {text!r} ({reason})")


if __name__ == "__main__":
    main()
