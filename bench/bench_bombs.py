"""YAML alias bombs and oversized files against every loader, through the surface a user uses.

Each case runs in its own process, watched from outside: the peak resident memory is sampled
every 20 ms and the process is killed past `--rss-cap-mb` or `--timeout-s`. Prints one line per
case: the file size, the outcome (ok / DataFileError / ConfigError / killed), the wall time and
the peak RSS, plus the first line of the error the user sees.

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_bombs.py [--timeout-s 60 --rss-cap-mb 3000]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def laughs(depth: int, width: int, *, indent: str = "", leaf: str = '"lol"') -> str:
    """A billion-laughs chain as a block list of anchored flow lists: width ** depth leaves from
    a few hundred bytes (each level lists the previous one `width` times)."""
    lines = [f"{indent}- &l0 [{', '.join([leaf] * width)}]"]
    for n in range(1, depth):
        lines.append(f"{indent}- &l{n} [{', '.join([f'*l{n - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def bomb_diary() -> str:
    # The user text is the chain: the diary turns it into text (str) when it reads the entry.
    return (
        '- id: "i-1"\n  time: "2026-11-21T20:00:00+08:00"\n  tag: "t"\n'
        f"  user:\n{laughs(9, 9, indent='    ')}  assistant: \"ok\"\n"
    )


def bomb_worldbook() -> str:
    # Extended format: the content is the chain, and the entry's validation error quotes it.
    return f"- keys: [雾川镇]\n  content:\n{laughs(8, 9, indent='    ')}"


def bomb_core() -> str:
    return f"- text:\n{laughs(8, 9, indent='    ')}"


def bomb_config() -> str:
    return f"timezone:\n{laughs(8, 9, indent='  ')}"


def deep_nesting() -> str:
    return "[" * 200_000 + "]" * 200_000 + "\n"


CASES = {
    "diary day file": ("diary", bomb_diary),
    "world-book file": ("worldbook", bomb_worldbook),
    "core_mem.yml": ("core", bomb_core),
    "config.yaml": ("config", bomb_config),
    "deep nesting in a world-book file": ("worldbook", deep_nesting),
    "deep nesting in config.yaml": ("config", deep_nesting),
}

RUNNER = r"""
import sys, time
from datetime import datetime
from zoneinfo import ZoneInfo
kind, data_dir, config_path = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
try:
    if kind == "config":
        from engine.config import load_config
        load_config(config_path, env={})
    else:
        from engine.orchestrator import MemoryOrchestrator
        now = datetime(2026, 11, 22, 20, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
        with MemoryOrchestrator.from_config("xiaoyue", data_dir=data_dir, config_path=config_path) as orch:
            result = orch.build_prompt("昨天我们聊了什么？雾川镇", user_id="u1", now=now)
            for line in result.diagnostics:
                print("diagnostic:", line.splitlines()[0][:160])
    print(f"outcome: ok in {time.perf_counter() - t0:.2f}s")
except Exception as exc:
    print(f"outcome: {type(exc).__name__} in {time.perf_counter() - t0:.2f}s: {str(exc).splitlines()[0][:200]}")
"""


def prepare(kind: str, text: str, root: Path) -> tuple[Path, Path]:
    data = root / "data"
    char = data / "agents" / "xiaoyue"
    shutil.copytree(ROOT / "data/agents/xiaoyue", char, ignore=shutil.ignore_patterns("users", ".cache"))
    user = char / "users" / "u1"
    config = root / "config.yaml"
    config.write_text(f"data_dir: {data}\n", encoding="utf-8")
    if kind == "diary":
        (user / "memorys").mkdir(parents=True)
        (user / "memorys" / "2026-11-21.yaml").write_text(text, encoding="utf-8")
        (user / "memorys" / "2026-11-20.yaml").write_text(
            '- id: "i-0"\n  time: "2026-11-20T20:00:00+08:00"\n  tag: "t"\n  user: "前天的茶"\n  assistant: "好"\n',
            encoding="utf-8",
        )
    elif kind == "worldbook":
        (char / "data_base" / "bomb.yaml").write_text(text, encoding="utf-8")
    elif kind == "core":
        user.mkdir(parents=True)
        (user / "core_mem.yml").write_text(text, encoding="utf-8")
    elif kind == "config":
        config.write_text(text, encoding="utf-8")
    return data, config


def run(kind: str, text: str, *, timeout_s: float, cap_mb: int) -> str:
    with tempfile.TemporaryDirectory(prefix="kioku-bomb-") as tmp:
        data, config = prepare(kind, text, Path(tmp))
        proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER, kind, str(data), str(config)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
        )
        peak, t0, killed = 0, time.perf_counter(), ""
        status = Path(f"/proc/{proc.pid}/status")
        while proc.poll() is None:
            try:
                rss = next(int(ln.split()[1]) for ln in status.read_text().splitlines() if ln.startswith("VmRSS"))
                peak = max(peak, rss // 1024)
            except (OSError, StopIteration, ValueError):
                pass
            elapsed = time.perf_counter() - t0
            if peak > cap_mb or elapsed > timeout_s:
                killed = f"killed over {'memory' if peak > cap_mb else 'time'}"
                proc.kill()
                break
            time.sleep(0.02)
        out, err = proc.communicate()
        wall = time.perf_counter() - t0
        lines = [ln for ln in out.splitlines() if ln.startswith(("outcome", "diagnostic"))]
        if killed:
            lines.insert(0, f"outcome: {killed}")
        elif proc.returncode != 0:
            lines.insert(0, f"outcome: exit {proc.returncode}: {(err.strip().splitlines() or [''])[-1][:160]}")
        return f"wall {wall:6.2f}s  peak RSS {peak:5d} MB\n      " + "\n      ".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--rss-cap-mb", type=int, default=3000)
    parser.add_argument("--only", default=None, help="run only cases whose name contains this")
    args = parser.parse_args()
    for name, (kind, make) in CASES.items():
        if args.only and args.only not in name:
            continue
        text = make()
        print(f"{name} ({len(text.encode())} bytes): " + run(kind, text, timeout_s=args.timeout_s, cap_mb=args.rss_cap_mb))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
