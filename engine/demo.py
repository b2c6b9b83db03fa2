"""The demo: a scripted multi-day conversation with 小月, replayed through the real engine.

Everything runs offline: the default embedder ships in a package, the character's replies come
from a scripted LLM, and memory writing uses the documented offline fallbacks.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from engine.adapters.llm import ScriptedLLM
from engine.config import load_config
from engine.errors import ConfigError
from engine.orchestrator import MemoryOrchestrator, PromptResult

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 22, 20, 30, tzinfo=TZ)  # a Sunday evening

# (when, user, what the character answered)
SCRIPT: list[tuple[datetime, str, str]] = [
    (datetime(2026, 11, 11, 19, 5, tzinfo=TZ), "我叫林舟，刚搬来雾川镇，在设计工作室上班。", "林舟，欢迎你！以后下班累了就来茶馆坐坐吧。"),
    (datetime(2026, 11, 11, 19, 12, tzinfo=TZ), "今天中午在夜市街吃了一碗豌杂面，太辣了。", "夜市街的豌杂面是出了名的辣，下次记得说微辣哦。"),
    (datetime(2026, 11, 11, 19, 20, tzinfo=TZ), "我讨厌吃香菜，面里放了好多。", "记住啦，以后给你做点心绝不放香菜。"),
    (datetime(2026, 11, 15, 15, 30, tzinfo=TZ), "周末和同事去坐了缆车，雾太大半路停了二十分钟。", "哈哈，雾川的缆车就是这样，停在半空是不是有点吓人？"),
    (datetime(2026, 11, 15, 15, 40, tzinfo=TZ), "我养了一只猫叫小白，想带它来见见阿黄。", "好呀！不过阿黄有点怕生，要慢慢来。"),
    (datetime(2026, 11, 21, 9, 10, tzinfo=TZ), "早上去老码头看陈伯摆渡，他说江上起雾的时候最好看。", "陈伯最会挑时候了，他年轻时还在雾里救过落水的人呢。"),
    (datetime(2026, 11, 21, 20, 15, tzinfo=TZ), "晚上加班做完了灯会的海报，终于交稿了！", "恭喜交稿！灯会那天一起去江边看兔子灯吧。"),
    (datetime(2026, 11, 21, 20, 25, tzinfo=TZ), "好啊，说定了，正月十五见。", "嗯，说定了～我会提前给你留一盏灯。"),
]

FOLLOW_UPS = ["昨天我们聊了什么？", "上周三我吃了什么？", "我想去看看阿黄。"]


def demo_character_dir() -> Path:
    """The shipped demo character: `data/agents/xiaoyue` in a checkout, `engine/demo_character`
    (the same files, as package data) once installed from the wheel."""
    engine_dir = Path(__file__).resolve().parent
    for candidate in (engine_dir.parent / "data" / "agents" / "xiaoyue", engine_dir / "demo_character"):
        if (candidate / "character.yaml").is_file():
            return candidate
    raise ConfigError(
        f"the demo character is missing: neither {engine_dir.parent / 'data/agents/xiaoyue'} (a checkout) "
        f"nor {engine_dir / 'demo_character'} (an installed package) holds a character.yaml"
    )


def run_demo(data_dir: Path | None = None, *, out=print) -> list[PromptResult]:
    from engine.show import format_result

    keep = data_dir is not None
    root = Path(data_dir) if keep else Path(tempfile.mkdtemp(prefix="kioku-demo-"))
    target = root / "agents" / "xiaoyue"
    if not target.exists():
        shutil.copytree(demo_character_dir(), target, ignore=shutil.ignore_patterns("users", ".cache"))
    config = load_config(overrides={"data_dir": str(root), "llm": {"backend": "none"}})
    character_llm = ScriptedLLM(replies=[reply for _, _, reply in SCRIPT])
    results = []
    out(f"data folder: {root}")
    with MemoryOrchestrator.from_config("xiaoyue", config=config) as orch:
        out(f"replaying {len(SCRIPT)} turns over {len({at.date() for at, _, _ in SCRIPT})} days ...")
        for at, user_text, _ in SCRIPT:
            prompt = orch.build_prompt(user_text, user_id="linzhou", now=at)
            reply = character_llm.complete(prompt.messages)
            orch.record_turn(user_text, reply, user_id="linzhou", at=at + timedelta(seconds=30))
            orch.flush()
        for question in FOLLOW_UPS:
            result = orch.build_prompt(question, user_id="linzhou", now=NOW)
            results.append(result)
            out("")
            out("=" * 100)
            out(f"follow-up at {NOW:%Y-%m-%d %H:%M} (Sunday): {question}")
            out(format_result(result, show_messages=question == FOLLOW_UPS[0]))
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return results
