"""The one clock: wall time in epoch milliseconds (OpenClaw's unit for every stored time).

Operations read the time once per run through their `Context.clock`; tests pass a fixed clock.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)


# 10000-01-01T00:00:00Z: `datetime`'s range ends just before it
_YEAR_10000 = 253_402_300_800


def utc_strftime(fmt: str, seconds: int) -> str:
    """`datetime.fromtimestamp(seconds, tz=UTC).strftime(fmt)` for a format without `%z`, `%Z` or
    `%f`: the same C `strftime` over the same fields, without importing `datetime` (~5 M
    instructions of a command's start) for the times since 1970; others (and errors) as datetime's."""
    if 0 <= seconds < _YEAR_10000:
        return time.strftime(fmt, time.gmtime(seconds))
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, tz=UTC).strftime(fmt)


def utc_ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int | None:
    """Epoch ms of a UTC date and time, None when `datetime(...)` would refuse it (years 1-9999,
    the month's days, hours 0-23, minutes and seconds 0-59): its `timestamp()`, without datetime."""
    if not (
        1 <= year <= 9999 and 1 <= month <= 12 and 0 <= hour < 24 and 0 <= minute < 60 and 0 <= second < 60
    ):
        return None
    if month == 2:
        month_days = 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    else:
        month_days = _MONTH_DAYS[month]
    if not 1 <= day <= month_days:
        return None
    # days since 1970-01-01 of the proleptic Gregorian date (a year counted from March)
    y = year - 1 if month <= 2 else year
    era, yoe = divmod(y, 400)
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    days = era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468
    return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000


_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def iso_ms(ms: int) -> str:
    """JavaScript's `new Date(ms).toISOString()` (milliseconds and a `Z`): the one ISO formatter."""
    if 0 <= ms < _YEAR_10000 * 1000:
        return utc_strftime("%Y-%m-%dT%H:%M:%S.", ms // 1000) + f"{ms % 1000:03d}Z"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def iso_now(ms: float | None = None) -> str:
    """`iso_ms` of `ms`, or of now: `new Date().toISOString()`."""
    return iso_ms(now_ms() if ms is None else int(ms))
