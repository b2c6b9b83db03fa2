"""One atom to the range of time it means: a day, a part of day, an hour, widened by "around".

Kept apart from ``compose.py``: composition decides which atoms form one expression, this only
says what a finished one covers.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo

from .atoms import Atom
from .calendar import at, day_range

# Parts of day: (start hour, end hour) on the day they attach to; past 24 is the next morning.
PARTS: dict[str, tuple[int, int]] = {
    "early": (0, 5),       # 凌晨
    "dawn": (5, 9),        # 清晨
    "morning": (5, 12),    # 早上 上午, morning
    "noon": (11, 13),      # 中午, noon
    "afternoon": (12, 18),
    "dusk": (16, 20),      # 傍晚 黄昏: sunset moves from ~17:00 to ~19:30 over a year
    "evening": (18, 24),   # "evening" (English)
    "night": (18, 29),     # 晚上 夜里 昨晚, night, last night: until 05:00, where 凌晨 ends
}

# 左右 / 前后 / "around" widen a day by this many days each side, an hour by one hour.
APPROX_DAYS = 3
APPROX_HOURS = 1


def _day_or_hour(tz: tzinfo, d: date, hour: int | None, approx: bool) -> tuple[datetime, datetime]:
    if hour is None:
        if approx:
            return at(tz, d - timedelta(days=APPROX_DAYS)), at(tz, d + timedelta(days=APPROX_DAYS + 1))
        return day_range(tz, d)
    if approx:
        # Wall-clock hours; "around midnight" borrows the previous day's last hour.
        lo = at(tz, d - timedelta(days=1), 24 + hour - APPROX_HOURS)
        return lo, at(tz, d, hour + 1 + APPROX_HOURS)
    return at(tz, d, hour), at(tz, d, hour + 1)


def resolve(a: Atom, tz: tzinfo, today: date) -> tuple[datetime, datetime] | None:
    if a.kind == "range":
        assert a.start is not None and a.end is not None
        return a.start, a.end
    if a.kind in ("approx", "edge"):
        return None
    if a.kind == "daynum":
        return None if a.day is None or not a.alone_ok else _day_or_hour(tz, a.day, None, a.approx)
    if a.kind == "clock":
        if not a.alone_ok or a.hour is None:
            return None
        return _day_or_hour(tz, today, a.hour, a.approx)
    if a.kind == "part" and not a.alone_ok:
        return None
    d = a.day if a.kind == "day" else today
    if d is None:
        return None
    if a.hour is not None:
        return _day_or_hour(tz, d, a.hour, a.approx)
    if a.part is not None:
        h0, h1 = PARTS[a.part]
        return at(tz, d, h0), at(tz, d, h1)
    return _day_or_hour(tz, d, None, a.approx)
