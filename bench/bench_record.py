"""record_turn's synchronous part: what a chat request waits for after the LLM answered.

    PYTHONPATH=. .venv/bin/python bench/bench_record.py [--turns 200] [--history 2000]

The turn is durable when record_turn returns (journal fsync + window append); the stores' work
runs in the background and is timed separately (drain). Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from datetime import timedelta

from harness import NOW, character_folder, offline_config, report, write_history

from engine.orchestrator import MemoryOrchestrator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--history", type=int, default=2000, help="messages already in the user's history")
    args = parser.parse_args()
    now = NOW
    with character_folder() as data:
        write_history(data, "bench", args.history, end=now - timedelta(hours=1))
        config = offline_config(data)
        with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
            orch.build_prompt("你好", user_id="bench", now=now)  # load the history once, warm up
            orch.flush()
            samples = []
            for i in range(args.turns):
                t = time.perf_counter()
                orch.record_turn(f"测试消息{i}：今天去江边散步了。", "好的，听起来不错。", user_id="bench", at=now)
                samples.append((time.perf_counter() - t) * 1000)
                if i % 10 == 9:
                    orch.flush()  # keep the background from piling up behind the measurement
            report(f"record_turn, {args.turns} turns (diary, core, world book on; no LLM)", samples)
            t = time.perf_counter()
            orch.flush()
            print(f"background drain after the last turn: {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
