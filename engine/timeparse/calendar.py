"""Pure calendar arithmetic shared by the Chinese and English grammars.

Every range is half-open ``[start, end)`` and aware in the user's zone.  Local
wall times are built with ``datetime(..., tzinfo=tz)`` so zoneinfo picks the
right offset for each end separately: a local day around a DST change is 23 or
25 hours long, which is what the conventions want.
"""

from __future__ import annotations

import calendar as _stdcal
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo

Range = tuple[datetime, datetime]


@dataclass(frozen=True)
class Hit:
    """One resolved expression before it is turned into a public TimeExpression."""

    span: tuple[int, int]
    start: datetime
    end: datetime
    kind: str
    lang: str


def at(tz: tzinfo, d: date, hour: int = 0, minute: int = 0) -> datetime:
    # Hours past 23 roll into the next day so "24:00" can close an evening.
    extra, hour = divmod(hour, 24)
    d2 = d + timedelta(days=extra)
    return datetime(d2.year, d2.month, d2.day, hour, minute, tzinfo=tz)


def day_range(tz: tzinfo, d: date) -> Range:
    return at(tz, d), at(tz, d + timedelta(days=1))


def days_range(tz: tzinfo, first: date, last: date) -> Range:
    """Inclusive of both calendar days, as explicit ranges are."""
    return at(tz, first), at(tz, last + timedelta(days=1))


def monday_of(d: date) -> date:
    return d - timedelta(days=d.weekday())


def week_range(tz: tzinfo, today: date, weeks_offset: int) -> Range:
    mon = monday_of(today) + timedelta(weeks=weeks_offset)
    return at(tz, mon), at(tz, mon + timedelta(days=7))


def weekend_of_week(tz: tzinfo, today: date, weeks_offset: int) -> Range:
    sat = monday_of(today) + timedelta(weeks=weeks_offset, days=5)
    return at(tz, sat), at(tz, sat + timedelta(days=2))


def recent_weekend(tz: tzinfo, today: date) -> Range:
    """Most recent Saturday–Sunday that has started (the current one on a weekend)."""
    offset = 0 if today.weekday() >= 5 else -1
    return weekend_of_week(tz, today, offset)


def weekday_in_week(today: date, weeks_offset: int, weekday: int) -> date:
    return monday_of(today) + timedelta(weeks=weeks_offset, days=weekday)


def weekday_not_after(today: date, weekday: int) -> date:
    """Most recent given weekday that is not after today (today itself counts)."""
    return today - timedelta(days=(today.weekday() - weekday) % 7)


def weekday_before(today: date, weekday: int) -> date:
    """Most recent given weekday strictly before today."""
    back = (today.weekday() - weekday) % 7 or 7
    return today - timedelta(days=back)


def weekday_after(today: date, weekday: int) -> date:
    ahead = (weekday - today.weekday()) % 7 or 7
    return today + timedelta(days=ahead)


def shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    idx = year * 12 + (month - 1) + delta
    return idx // 12, idx % 12 + 1


def month_range(tz: tzinfo, year: int, month: int) -> Range:
    ny, nm = shift_month(year, month, 1)
    return at(tz, date(year, month, 1)), at(tz, date(ny, nm, 1))


def year_range(tz: tzinfo, year: int) -> Range:
    return at(tz, date(year, 1, 1)), at(tz, date(year + 1, 1, 1))


def recent_month(today: date, month: int) -> int:
    """Year of the most recent ``month`` that has started (this one if we are in it)."""
    return today.year if month <= today.month else today.year - 1


def valid_date(year: int, month: int, day: int) -> date | None:
    if not 1 <= month <= 12:
        return None
    if not 1 <= day <= _stdcal.monthrange(year, month)[1]:
        return None
    return date(year, month, day)


# A date or festival named without a year means the coming one when it is at most this many days
# ahead (十月十号 asked on October 5th, Christmas on December 20th); otherwise the most recent one.
# Its last occurrence is then a year back, which people mark (去年, last); a bare day-of-month
# (15号) is not covered: its last occurrence is only a month back and often left unmarked.
NEAR_DAYS = 7


def recent_date(today: date, month: int, day: int) -> date | None:
    """Month/day without a year: the coming one within NEAR_DAYS, else the most recent not after
    today; Feb 29 searches back to a leap year."""
    for year in (today.year, today.year + 1):
        coming = valid_date(year, month, day)
        if coming is not None and today < coming <= today + timedelta(days=NEAR_DAYS):
            return coming
    for year in range(today.year, today.year - 9, -1):
        d = valid_date(year, month, day)
        if d is not None and d <= today:
            return d
    return None


def recent_day_of_month(today: date, day: int) -> date | None:
    """'the 3rd' / 3号: the most recent such day of a month that is not after today."""
    y, m = today.year, today.month
    for _ in range(12):
        d = valid_date(y, m, day)
        if d is not None and d <= today:
            return d
        y, m = shift_month(y, m, -1)
    return None


def rolling(now: datetime, delta: timedelta) -> Range:
    """[now - delta, now) in absolute time: '24 hours ago' across DST is 24 real hours."""
    tz = now.tzinfo
    assert tz is not None
    start = (now.astimezone(timezone.utc) - delta).astimezone(tz)
    return start, now


def hours_ago(now: datetime, n: int) -> Range:
    """"N hours ago" / N小时前: a two-hour window around that moment, [now - (N+1)h, now - (N-1)h)
    (N = 0, "half an hour ago": the last hour)."""
    return rolling(now, timedelta(hours=n + 1))[0], rolling(now, timedelta(hours=max(n - 1, 0)))[0]


def rolling_months(now: datetime, months: int) -> Range:
    """Past N months: same wall clock N calendar months back (day clamped to month end)."""
    tz = now.tzinfo
    assert tz is not None
    y, m = shift_month(now.year, now.month, -months)
    d = min(now.day, _stdcal.monthrange(y, m)[1])
    start = datetime(y, m, d, now.hour, now.minute, now.second, tzinfo=tz)
    return start, now


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


# Thirds of a month, shared by 上旬/中旬/下旬, 月初/月中/月底 and early/mid/late:
# early = days 1–10, mid = 11–20, late = 21 to the month's last day.
MONTH_THIRDS: dict[str, tuple[int, int]] = {"early": (1, 10), "mid": (11, 20), "late": (21, 31)}


def month_part_range(tz: tzinfo, year: int, month: int, part: str) -> Range:
    lo, hi = MONTH_THIRDS[part]
    hi = min(hi, _stdcal.monthrange(year, month)[1])
    return days_range(tz, date(year, month, lo), date(year, month, hi))


def month_week_range(tz: tzinfo, year: int, month: int, n: int) -> Range | None:
    """Week n of a month = days 7n−6 … 7n (n = −1: the month's last 7 days).

    Day-based rather than ISO weeks so "the first week of October" never starts in
    September; week 5 is the month's remaining 1–3 days. A February of 28 days has no week 5:
    the whole month is returned, as for a day the month lacks (上个月31号).
    """
    last = _stdcal.monthrange(year, month)[1]
    if n == -1:
        return days_range(tz, date(year, month, last - 6), date(year, month, last))
    first = 7 * n - 6
    if first < 1:
        return None
    if first > last:
        return month_range(tz, year, month)
    return days_range(tz, date(year, month, first), date(year, month, min(7 * n, last)))


def same_day_shifted(today: date, *, years: int = 0, months: int = 0) -> date:
    """The same calendar day N years / months back or ahead (Feb 29 / the 31st clamp to month end)."""
    y, m = shift_month(today.year + years, today.month, months)
    return date(y, m, min(today.day, _stdcal.monthrange(y, m)[1]))


def calendar_days_back(now: datetime, days: int) -> Range:
    """Today and the `days` calendar days before it, up to now: 这两天 / "the past couple of days"
    (never cuts the first day in half the way a rolling 48 hours would)."""
    tz = now.tzinfo
    assert tz is not None
    return at(tz, now.date() - timedelta(days=days)), now


def units_back(tz: tzinfo, today: date, unit: str, nearest: int, farthest: int) -> Range:
    """The calendar days from `farthest` to `nearest` units (day, week, month, year) before today,
    both included; months and years keep the day of the month (clamped to the month's end)."""
    def back(n: int) -> date:
        if unit == "day":
            return today - timedelta(days=n)
        if unit == "week":
            return today - timedelta(weeks=n)
        return same_day_shifted(today, months=-n * (12 if unit == "year" else 1))

    return days_range(tz, back(farthest), back(nearest))


def few_ago(tz: tzinfo, today: date, unit: str) -> Range:
    """'a few <unit>s ago' / 几周前 / 前几个月 for weeks, months and years: between two and five units
    back (a few is vaguer than a couple, and rarely just one)."""
    return units_back(tz, today, unit, 2, 5)


def couple_ago(tz: tzinfo, today: date, unit: str) -> Range:
    """'a couple of <unit>s ago' / 前两天: between one and three units back (a couple is rarely
    exactly two)."""
    return units_back(tz, today, unit, 1, 3)
