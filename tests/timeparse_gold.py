"""Gold values for the time-expression tables: datetimes for stated calendar days, weeks and
months, written by hand from calendar arithmetic. Nothing here calls the parser or its helpers.

Calendar facts used: 2026-03-18 is a Wednesday; 2026-01-01 a Thursday; 2028-02-29 a Tuesday;
2026-06-01 a Monday; 2026-10-05 a Monday; 2026-12-20 a Sunday; 2026-03-31 a Tuesday;
2025-05-10 a Saturday; US DST 2026 starts 03-08, ends 11-01.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

SH = ZoneInfo("Asia/Shanghai")
NY = ZoneInfo("America/New_York")


def _dt(d: date, tz: ZoneInfo, h: int = 0) -> datetime:
    d = d + timedelta(days=h // 24)
    return datetime(d.year, d.month, d.day, h % 24, tzinfo=tz)


def day(y: int, m: int, d: int, tz: ZoneInfo = SH) -> tuple[datetime, datetime]:
    return _dt(date(y, m, d), tz), _dt(date(y, m, d) + timedelta(days=1), tz)


def days(y: int, m: int, d: int, y2: int, m2: int, d2: int, tz: ZoneInfo = SH) -> tuple[datetime, datetime]:
    return _dt(date(y, m, d), tz), _dt(date(y2, m2, d2) + timedelta(days=1), tz)


def hours(y: int, m: int, d: int, h0: int, h1: int, tz: ZoneInfo = SH) -> tuple[datetime, datetime]:
    return _dt(date(y, m, d), tz, h0), _dt(date(y, m, d), tz, h1)


def week(y: int, m: int, d: int, tz: ZoneInfo = SH) -> tuple[datetime, datetime]:
    assert date(y, m, d).weekday() == 0, "weeks are given by their Monday"
    return _dt(date(y, m, d), tz), _dt(date(y, m, d) + timedelta(days=7), tz)


def month(y: int, m: int, tz: ZoneInfo = SH) -> tuple[datetime, datetime]:
    ny, nm = (y + 1, 1) if m == 12 else (y, m + 1)
    return datetime(y, m, 1, tzinfo=tz), datetime(ny, nm, 1, tzinfo=tz)


def year(y: int, tz: ZoneInfo = SH) -> tuple[datetime, datetime]:
    return datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz)


def since(y: int, m: int, d: int, now: datetime) -> tuple[datetime, datetime]:
    """From the start of a stated local day up to now."""
    return datetime(y, m, d, tzinfo=now.tzinfo), now


def back(now: datetime, **kw: float) -> tuple[datetime, datetime]:
    """[now - delta, now) in absolute (UTC) time."""
    return (now.astimezone(timezone.utc) - timedelta(**kw)).astimezone(now.tzinfo), now


WED = datetime(2026, 3, 18, 14, 30, tzinfo=SH)      # Wednesday afternoon
MON = datetime(2026, 3, 16, 9, 0, tzinfo=SH)        # Monday
SUN = datetime(2026, 3, 22, 21, 0, tzinfo=SH)       # Sunday night
NEWYEAR = datetime(2026, 1, 1, 0, 5, tzinfo=SH)     # just after midnight, year boundary
LEAP = datetime(2028, 2, 29, 10, 0, tzinfo=SH)      # leap day (Tuesday)
AFTER_LEAP = datetime(2028, 3, 1, 0, 10, tzinfo=SH)
JUNE1 = datetime(2026, 6, 1, 0, 1, tzinfo=SH)       # Monday, month start, after midnight
DST_ON = datetime(2026, 3, 9, 10, 0, tzinfo=NY)     # day after spring-forward
DST_OFF = datetime(2026, 11, 2, 10, 0, tzinfo=NY)   # day after fall-back
NOV22 = datetime(2026, 11, 22, 20, 30, tzinfo=SH)  # Sunday evening; October has 31 days, November 30

# For the conventions the README's table settles (issue 10): moments just before a date or festival.
TUE = datetime(2026, 3, 17, 10, 0, tzinfo=SH)       # Tuesday
MAR31 = datetime(2026, 3, 31, 10, 0, tzinfo=SH)     # Tuesday, a 31st after a 28-day February
OCT5 = datetime(2026, 10, 5, 12, 0, tzinfo=SH)      # Monday, five days before October 10th
DEC20 = datetime(2026, 12, 20, 12, 0, tzinfo=SH)    # Sunday, five days before Christmas
DEC28 = datetime(2026, 12, 28, 12, 0, tzinfo=SH)    # four days before New Year's Day
MAR1 = datetime(2026, 3, 1, 12, 0, tzinfo=SH)       # Sunday, after a 28-day February
MAY10 = datetime(2025, 5, 10, 12, 0, tzinfo=SH)     # Saturday; the real user questions
