"""Festival dates (Gregorian, lunar and rule-based) shared by both grammars.

Lunar dates come from jionlp's lunar table.  Its module is loaded straight from
its file: importing it through the ``jionlp`` package would run jionlp's
``__init__`` (a stdout banner and ~0.5 s of dictionary loading) just to read a
table of integers.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from .calendar import NEAR_DAYS, nth_weekday

FestivalFn = Callable[[int], date]


@lru_cache(maxsize=1)
def _lunar() -> Any:
    spec = importlib.util.find_spec("jionlp")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("jionlp is required for lunar festivals")
    path = Path(list(spec.submodule_search_locations)[0]) / "gadget" / "lunar_solar_date.py"
    mod_spec = importlib.util.spec_from_file_location("_engine_timeparse_lunar", path)
    assert mod_spec is not None and mod_spec.loader is not None
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module.LunarSolarDate()


def lunar_to_solar(lunar_year: int, month: int, day: int) -> date:
    return _lunar().to_solar_date(lunar_year, month, day, False).date()


def _fixed(month: int, day: int) -> FestivalFn:
    return lambda year: date(year, month, day)


@dataclass(frozen=True)
class LunarDay:
    """A lunar month's day (中秋 = 8/15, 正月初五, 腊月二十三) as a festival. Called with a year, its
    date that year (late lunar months fall in January of the next Gregorian year: the lunar year
    whose occurrence lands in the asked year); `festival_date` finds "the most recent" among its
    occurrences instead, since a Gregorian year may hold two of a late month's days (腊八 2022:
    January 10th and December 30th) or none (冬月十五 2025)."""

    month: int
    day: int

    def __call__(self, year: int) -> date:
        d = lunar_to_solar(year, self.month, self.day)
        return d if d.year == year else lunar_to_solar(year - 1, self.month, self.day)

    def around(self, today: date) -> list[date]:
        """Its occurrences from two lunar years before today's to one after, in order."""
        return sorted(lunar_to_solar(y, self.month, self.day) for y in range(today.year - 2, today.year + 2))


def _chuxi(year: int) -> date:
    # The eve is the day before the new year, which always falls in the same
    # Gregorian year (Spring Festival is never before Jan 21).
    return lunar_to_solar(year, 1, 1) - timedelta(days=1)


def _qingming(year: int) -> date:
    # Solar term, not lunar; the classic 21st-century formula (Apr 4-6).
    y = year % 100
    return date(year, 4, int(y * 0.2422 + 4.81) - y // 4)


def _easter(year: int) -> date:
    # Anonymous Gregorian computus.
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l) // 451
    month = (h + l - 7 * m + 114) // 31
    day = (h + l - 7 * m + 114) % 31 + 1
    return date(year, month, day)


# Canonical keys; both grammars map their own words onto these.
FESTIVALS: dict[str, FestivalFn] = {
    "new_year": _fixed(1, 1),
    "new_years_eve": _fixed(12, 31),
    "valentine": _fixed(2, 14),
    "womens_day": _fixed(3, 8),
    "april_fools": _fixed(4, 1),
    "labour_day": _fixed(5, 1),
    "childrens_day": _fixed(6, 1),
    "independence_day": _fixed(7, 4),
    "teachers_day": _fixed(9, 10),
    "national_day": _fixed(10, 1),
    "halloween": _fixed(10, 31),
    "singles_day": _fixed(11, 11),  # 双十一, the shopping day
    "double_twelve": _fixed(12, 12),
    "christmas_eve": _fixed(12, 24),
    "christmas": _fixed(12, 25),
    "spring_festival": LunarDay(1, 1),
    "chuxi": _chuxi,
    "lantern": LunarDay(1, 15),
    "dragon_boat": LunarDay(5, 5),
    "qixi": LunarDay(7, 7),
    "mid_autumn": LunarDay(8, 15),
    "double_ninth": LunarDay(9, 9),
    "laba": LunarDay(12, 8),
    "qingming": _qingming,
    "easter": _easter,
    "mothers_day": lambda y: nth_weekday(y, 5, 6, 2),
    "fathers_day": lambda y: nth_weekday(y, 6, 6, 3),
    "thanksgiving": lambda y: nth_weekday(y, 11, 3, 4),
    "black_friday": lambda y: nth_weekday(y, 11, 3, 4) + timedelta(days=1),
    "cyber_monday": lambda y: nth_weekday(y, 11, 3, 4) + timedelta(days=4),
    # North America's: the first Monday of September (劳动节 / May Day is labour_day, May 1st), and
    # the last Monday of May.
    "labor_day_us": lambda y: nth_weekday(y, 9, 0, 1),
    "memorial_day": lambda y: nth_weekday(y, 5, 0, 5) if nth_weekday(y, 5, 0, 5).month == 5 else nth_weekday(y, 5, 0, 4),
}


def festival_date(key: str | FestivalFn, today: date, *, year: int | None = None, mode: str = "recent") -> date:
    """Resolve a festival.

    mode: ``recent`` = the coming occurrence when it is at most NEAR_DAYS ahead, else the most
    recent one not after today; ``last`` = most recent strictly before today; ``next`` = first
    strictly after today. An explicit ``year`` wins over the mode.
    """
    fn = FESTIVALS[key] if isinstance(key, str) else key
    if year is not None:
        return fn(year)
    if isinstance(fn, LunarDay):
        every = fn.around(today)
        ahead = next(d for d in every if d > today)
        if mode == "next" or (mode == "recent" and (ahead - today).days <= NEAR_DAYS):
            return ahead
        return max(d for d in every if d < today or (d == today and mode != "last"))
    coming = fn(today.year)
    if coming <= today:
        coming = fn(today.year + 1)
    if mode == "next" or (mode == "recent" and (coming - today).days <= NEAR_DAYS):
        return coming
    d = fn(today.year)
    if d > today or (mode == "last" and d == today):
        d = fn(today.year - 1)
    return d
