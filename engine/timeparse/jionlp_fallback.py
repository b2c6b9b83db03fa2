"""jionlp as a long-tail fallback for Chinese (去年冬天, 上半年, 年底, …).

jionlp is imported lazily and quietly (``engine.adapters.jio``) because it prints
a banner at import and loads ~0.5 s of dictionaries.  It is always given ``time_base``
as a dict of the user's *local* wall clock: a timestamp would be read through
``datetime.fromtimestamp``, i.e. the process TZ, not the user's zone.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from .calendar import Hit

# Only the long tail the rules do not own (seasons, parts of a year/month, other
# festivals and solar terms).  Everything else jionlp finds is either covered by
# the rules with the product's conventions or was rejected by them on purpose
# (一下周围 is not 下周).
# Parts of a month (月初, 月底, 中旬 …) are not here: the rules own them with the
# early/mid/late thirds of the conventions (jionlp's 月初 is days 1–5, 月底 25–end).
_CALENDARISH = re.compile(
    r"春天|夏天|秋天|冬天|春季|夏季|秋季|冬季|半年|年初|年底|年末|年中|季度|节|冬至|夏至|立春|立夏|立秋|立冬"
)
_DENY = re.compile(r"^(?:现在|此刻|目前|当前|刚才|刚刚|当天|那天|每.*|.*[点点]钟?)$")


def _load() -> Any:
    from engine.adapters.jio import jionlp

    return jionlp()


def _time_base(now: datetime) -> dict[str, int]:
    return {"year": now.year, "month": now.month, "day": now.day,
            "hour": now.hour, "minute": now.minute, "second": now.second}


def _aware(s: str, now: datetime) -> datetime:
    naive = datetime.strptime(s, "%Y-%m-%d %H:%M:%S")
    return naive.replace(tzinfo=now.tzinfo)


def parse(text: str, now: datetime) -> list[Hit]:
    # A hit is kept only when its text holds one of these words, so a message without any has
    # none to keep: jionlp is not run (it was half of parsing a Chinese message).
    if not _CALENDARISH.search(text):
        return []
    jio = _load()
    try:
        # No stdout redirect here: jionlp prints only at import (checked), and swapping
        # sys.stdout per call would swallow other threads' output.
        found = jio.ner.extract_time(text, time_base=_time_base(now), with_parsing=True)
    except Exception:  # noqa: BLE001 - a fallback must never break the rule-based result
        return []
    hits: list[Hit] = []
    for item in found:
        if item.get("type") not in ("time_point", "time_span"):
            continue
        span_text = item["text"]
        if not _CALENDARISH.search(span_text) or _DENY.match(span_text):
            continue
        times = item.get("detail", {}).get("time")
        if not isinstance(times, list) or len(times) != 2 or "inf" in "".join(map(str, times)):
            continue
        try:
            start = _aware(times[0], now)
            last = datetime.strptime(times[1], "%Y-%m-%d %H:%M:%S")
        except ValueError:
            continue
        # jionlp ends are inclusive to the second (23:59:59); make them half-open.
        end_naive = last + timedelta(seconds=1) if last.second == 59 else last
        end = end_naive.replace(tzinfo=now.tzinfo)
        if end <= start:
            continue
        s, e = item["offset"]
        hits.append(Hit((s, e), start, end, "jionlp", "zh"))
    return hits


def warm_up() -> None:
    parse("昨天", datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc))
