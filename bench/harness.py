"""Shared bench helpers: percentile timing and a synthetic character generator. Prints, never asserts."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 20, 30, tzinfo=TZ)
"""The benches' "now": their generated history ends just before it."""

TOPICS = [
    ("去夜市街吃了豌杂面", "辣不辣呀？"), ("和同事坐缆车去上城", "雾大的话缆车会停哦。"),
    ("在家画了一天海报", "辛苦啦，画完了吗？"), ("我家猫小白又把花盆打翻了", "小白太调皮了！"),
    ("去老码头看陈伯摆渡", "陈伯最近身体还好吗？"), ("下雨了没带伞", "茶馆里有备用的伞。"),
    ("I went running by the river", "How far did you go?"), ("watched a movie with friends", "Which one?"),
]


def options(doc: str | None, **defaults: float) -> argparse.Namespace:
    """Parse the command line: one `--name VALUE` option per keyword (`in_flight` is `--in-flight`),
    typed like its default; `doc` (the bench's docstring) is the --help text."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in defaults.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return parser.parse_args()


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return p50, p95


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def report(label: str, samples_ms: list[float], *, baseline_ms: float | None = None) -> None:
    p50, p95 = percentiles(samples_ms)
    ratio = f"  ({p50 / baseline_ms:.2f}x of {baseline_ms:.1f} ms)" if baseline_ms else ""
    print(f"{label:<58} p50 {p50:8.2f} ms   p95 {p95:8.2f} ms   n={len(samples_ms)}{ratio}")


def offline_config(data_dir: Path):
    """The engine's defaults on `data_dir`, with no memory LLM (the offline fallbacks; no network)."""
    from engine.config import load_config

    return load_config(overrides={"data_dir": str(data_dir), "llm": {"backend": "none"}}, env={})


@contextmanager
def character_folder() -> Iterator[Path]:
    """A throwaway data folder holding the demo character (no users), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="kioku-bench-") as tmp:
        data = Path(tmp)
        make_character(data)
        yield data


def make_character(data_dir: Path, *, character: str = "xiaoyue") -> Path:
    target = data_dir / "agents" / character
    if not target.exists():
        shutil.copytree(ROOT / "data/agents/xiaoyue", target, ignore=shutil.ignore_patterns("users", ".cache"))
    return target


def write_history(data_dir: Path, user_id: str, messages: int, *, end: datetime, seed: int = 7) -> None:
    """A short-term history.yaml of `messages` lines in kioku's format (as after a big import)."""
    from engine.tokens import count_tokens

    rng = random.Random(seed)
    path = data_dir / "agents/xiaoyue/users" / user_id / "history.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    start = end - timedelta(minutes=messages)
    token_cache: dict[str, int] = {}
    with open(path, "w", encoding="utf-8") as f:
        for i in range(0, messages, 2):
            user, reply = rng.choice(TOPICS)
            at = (start + timedelta(minutes=i)).isoformat()
            for role, text, suffix in (("user", f"{user}（{i}）", "u"), ("assistant", reply, "a")):
                n = token_cache.setdefault(text, count_tokens(text))
                f.write("- " + json.dumps({"id": f"h{i:07d}:{suffix}", "role": role, "content": text, "at": at, "tokens": n}, ensure_ascii=False) + "\n")


async def post_chat(http: Any, body: dict, *, stream: bool) -> tuple[bool, int]:
    """POST one chat completion on an `httpx.AsyncClient`: (answered in full, HTTP status). A
    stream counts as answered when it ends with `data: [DONE]`."""
    if stream:
        async with http.stream("POST", "/v1/chat/completions", json=body) as r:
            lines = [line async for line in r.aiter_lines() if line]
        return r.status_code == 200 and bool(lines) and lines[-1] == "data: [DONE]", r.status_code
    r = await http.post("/v1/chat/completions", json=body)
    return r.status_code == 200, r.status_code


async def chat_client(http: Any, *, model: str, client: int, user: str, turns: int, latencies_ms: list[float],
                      errors: list[str]) -> list[str]:
    """One load client: `turns` chat turns one after another (odd clients stream), each timed into
    `latencies_ms`; failures go to `errors`. Returns the texts the service acknowledged, in order."""
    import httpx

    stream = client % 2 == 1
    sent: list[str] = []
    for i in range(turns):
        text = f"{user} c{client:02d} t{i:02d}"
        body = {"model": model, "user": user, "stream": stream, "messages": [{"role": "user", "content": text}]}
        t0 = time.perf_counter()
        try:
            ok, status = await post_chat(http, body, stream=stream)
        except httpx.HTTPError as exc:
            errors.append(f"client {client} turn {i}: {type(exc).__name__}: {exc}")
            continue
        latencies_ms.append((time.perf_counter() - t0) * 1000)
        if ok:
            sent.append(text)
        else:
            errors.append(f"client {client} turn {i}: HTTP {status}")
    return sent
