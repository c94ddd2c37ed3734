# SPDX-License-Identifier: Apache-2.0
"""Next fire time: a carry search over wall-clock fields, then Quartz's DST resolution.

Prior art: Quartz ``CronExpression.getTimeAfter`` (field-by-field carry, day rules) and
go-quartz ``csm`` (one state machine per field). Rejected: stepping through seconds or
minutes (a sparse expression such as ``0 0 12 29 2 ?`` would take millions of steps) and
per-call sorted-list searches; each field is a bitset, and the days of a month come from
one cached bitset per (rule, month length, weekday of the 1st).

Time zones, as Quartz 2.3.2 computes them through ``java.util.GregorianCalendar``:

* the search runs on wall-clock fields (year … second) in the evaluation zone, starting
  one second after the given instant;
* a matching wall time that occurs twice (DST ends) resolves to its *later* instant, the
  one in standard time, so it fires once; the earlier occurrence never fires, and a start
  inside the earlier occurrence behaves as if it were in the later one;
* a matching wall time that does not exist (DST starts) is not fired: Java moves it
  forward by the size of the gap, and Quartz carries on searching from there. Matches
  between the end of the gap and that moved time are skipped too (this only shows with
  30-minute DST, e.g. Australia/Lord_Howe).
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

from tocsin.cron._fields import (
    MAX_YEAR,
    MIN_YEAR,
    CronFields,
    DayKind,
    DayRule,
    first_bit,
    next_bit,
)

__all__ = ["can_ever_fire", "day_mask", "epoch_seconds", "matches", "next_fire"]

_WallTime = tuple[int, int, int, int, int, int]

#: Epoch seconds of 2200-01-02: no fire time can be later, in any zone.
_END_EPOCH = calendar.timegm((MAX_YEAR + 1, 1, 2, 0, 0, 0))
_START_EPOCH = calendar.timegm((MIN_YEAR - 1, 12, 30, 0, 0, 0))


@lru_cache(maxsize=4096)
def _month_shape(year: int, month: int) -> tuple[int, int]:
    """Return (days in month, weekday of the 1st as Quartz numbers it: SUN=1 … SAT=7)."""
    weekday, length = calendar.monthrange(year, month)  # weekday: Monday=0
    return length, (weekday + 1) % 7 + 1


def _nearest_weekday(target: int, length: int, first: int) -> int:
    """Quartz's ``W``: the weekday nearest ``target``, without leaving the month."""
    weekday = (first - 1 + target - 1) % 7 + 1
    if weekday == 7:  # Saturday: Friday before, unless that is in the previous month
        return target + 2 if target == 1 else target - 1
    if weekday == 1:  # Sunday: Monday after, unless that is in the next month
        return target - 2 if target == length else target + 1
    return target


def _weekday_days(weekdays: int, length: int, first: int) -> int:
    """The days of a month (bit d = day d) falling on a weekday of ``weekdays`` (SUN=1)."""
    bits = 0
    for day in range(1, length + 1):
        if weekdays >> ((first - 1 + day - 1) % 7 + 1) & 1:
            bits |= 1 << day
    return bits


@lru_cache(maxsize=2048)
def day_mask(rule: DayRule, length: int, first: int) -> int:
    """Return the days (bit d = day d) on which ``rule`` fires in a month of this shape.

    Args:
        rule: the day rule of an expression.
        length: number of days in the month (28-31).
        first: weekday of day 1, SUN=1 … SAT=7.
    """
    kind = rule.kind
    full = (1 << (length + 1)) - 2
    if kind is DayKind.EVERY_DAY:
        return full
    if kind is DayKind.DAYS_OF_MONTH:
        return rule.mask & full
    if kind is DayKind.DAYS_OF_WEEK:
        return _weekday_days(rule.mask, length, first)
    if kind is DayKind.DAYS_OF_MONTH_OR_WEEK:
        return (rule.mask & full) | _weekday_days(rule.weekdays, length, first)
    if kind is DayKind.DAYS_OF_MONTH_AND_WEEK:
        return rule.mask & full & _weekday_days(rule.weekdays, length, first)
    if kind is DayKind.LAST_DAY or kind is DayKind.LAST_WEEKDAY:
        target = length - rule.value
        if target < 1:
            return 0  # L-n past the start of a short month: Quartz skips the month
        if kind is DayKind.LAST_WEEKDAY:
            target = _nearest_weekday(target, length, first)
        return 1 << target
    if kind is DayKind.NEAREST_WEEKDAY:
        if rule.value > length:
            return 0  # 31W in a 30-day month: Quartz skips the month
        return 1 << _nearest_weekday(rule.value, length, first)
    if kind is DayKind.LAST_OF_WEEKDAY:
        last_weekday = (first - 1 + length - 1) % 7 + 1
        return 1 << (length - (last_weekday - rule.value) % 7)
    # NTH_OF_WEEKDAY; a weekday above 7 (Quartz accepts "50#2") never occurs.
    if rule.value > 7:
        return 0
    day = 1 + (rule.value - first) % 7 + 7 * (rule.nth - 1)
    return 1 << day if day <= length else 0


@lru_cache(maxsize=256)
def can_ever_fire(fields: CronFields) -> bool:
    """Whether some month shape in some allowed month has a firing day (cheap, cached).

    Lets ``0 0 0 31 2 ?`` answer ``None`` at once instead of scanning 230 years.
    """
    if not fields.years or not fields.months:
        return False
    for month in range(1, 13):
        if not fields.months >> month & 1:
            continue
        lengths = (28, 29) if month == 2 else (30,) if month in (4, 6, 9, 11) else (31,)
        for length in lengths:
            for first in range(1, 8):
                if day_mask(fields.days, length, first):
                    return True
    return False


def _next_time(fields: CronFields, hour: int, minute: int, second: int) -> _WallTime | None:
    """The first (hour, minute, second) ≥ the given one that matches, as a 6-tuple tail."""
    hours, minutes, seconds = fields.hours, fields.minutes, fields.seconds
    while True:
        next_hour = next_bit(hours, hour)
        if next_hour < 0:
            return None
        if next_hour != hour:
            return (0, 0, 0, next_hour, first_bit(minutes), first_bit(seconds))
        next_minute = next_bit(minutes, minute)
        if next_minute < 0:
            hour, minute, second = hour + 1, 0, 0
            continue
        if next_minute != minute:
            return (0, 0, 0, hour, next_minute, first_bit(seconds))
        next_second = next_bit(seconds, second)
        if next_second < 0:
            minute, second = minute + 1, 0
            continue
        return (0, 0, 0, hour, minute, next_second)


def _next_wall(fields: CronFields, start: _WallTime) -> _WallTime | None:
    """The first wall time ≥ ``start`` whose fields all match, ignoring time zones."""
    year, month, day, hour, minute, second = start
    if year < MIN_YEAR:
        year, month, day, hour, minute, second = MIN_YEAR, 1, 1, 0, 0, 0
    while year <= MAX_YEAR:
        index = next_bit(fields.years, year - MIN_YEAR)
        if index < 0:
            return None
        if index + MIN_YEAR != year:
            year, month, day, hour, minute, second = index + MIN_YEAR, 1, 1, 0, 0, 0
        next_month = next_bit(fields.months, month)
        if next_month < 0:
            year, month, day, hour, minute, second = year + 1, 1, 1, 0, 0, 0
            continue
        if next_month != month:
            month, day, hour, minute, second = next_month, 1, 0, 0, 0
        length, first = _month_shape(year, month)
        next_day = next_bit(day_mask(fields.days, length, first), day)
        if next_day < 0:
            if month == 12:
                year, month = year + 1, 1
            else:
                month += 1
            day, hour, minute, second = 1, 0, 0, 0
            continue
        if next_day != day:
            day, hour, minute, second = next_day, 0, 0, 0
        time = _next_time(fields, hour, minute, second)
        if time is None:
            day, hour, minute, second = day + 1, 0, 0, 0
            continue
        return (year, month, day, time[3], time[4], time[5])
    return None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


def epoch_seconds(moment: datetime) -> int:
    """Whole epoch seconds of an aware datetime, rounded down (sub-seconds dropped).

    Timedelta floor division is exact (``moment.timestamp()`` is a float and can round
    23:59:59.999999 up to the next second) and runs in C (``calendar.timegm`` does not).
    """
    return (moment - _EPOCH) // _SECOND


def next_fire(fields: CronFields, after: datetime, zone: tzinfo) -> datetime | None:
    """The first fire time strictly after ``after`` (one-second granularity), in ``zone``.

    ``after`` must be aware; the result is an aware datetime whose ``tzinfo`` is ``zone``
    (with ``fold=1`` when it is the later of two equal wall times), or ``None``.
    """
    if not can_ever_fire(fields):
        return None
    start = epoch_seconds(after) + 1
    if start >= _END_EPOCH:
        return None
    start = max(start, _START_EPOCH)
    local = datetime.fromtimestamp(start, zone)
    # A fixed offset (UTC included) has no gaps or repeats: skip the DST resolution.
    fixed = isinstance(zone, timezone)
    wall: _WallTime = (local.year, local.month, local.day, local.hour, local.minute, local.second)
    while True:
        found = _next_wall(fields, wall)
        if found is None:
            return None
        early = datetime(*found, tzinfo=zone)
        if fixed:
            return early
        naive = early.replace(tzinfo=None)
        late = early.replace(fold=1)
        early_offset, late_offset = early.utcoffset(), late.utcoffset()
        if early_offset == late_offset:
            return early
        assert early_offset is not None
        assert late_offset is not None
        if early_offset > late_offset:
            return late  # the wall time repeats: Java resolves it to standard time
        # The wall time falls in a gap: Java reads it with the offset from before the
        # gap, i.e. moves it forward by the gap's size, and Quartz searches on from there.
        moved = naive + (late_offset - early_offset)
        if moved.year > MAX_YEAR:
            return None
        wall = (moved.year, moved.month, moved.day, moved.hour, moved.minute, moved.second)


def matches(fields: CronFields, moment: datetime, zone: tzinfo) -> bool:
    """Whether ``moment`` (rounded down to the second) is one of the fire times.

    Quartz's ``isSatisfiedBy``: the next fire time after the previous second is this
    one. A cheap field check rejects most instants before the search runs.
    """
    seconds = epoch_seconds(moment)
    if not _START_EPOCH <= seconds < _END_EPOCH:
        return False
    local = datetime.fromtimestamp(seconds, zone)
    if not (
        MIN_YEAR <= local.year <= MAX_YEAR
        and fields.years >> (local.year - MIN_YEAR) & 1
        and fields.months >> local.month & 1
        and fields.hours >> local.hour & 1
        and fields.minutes >> local.minute & 1
        and fields.seconds >> local.second & 1
    ):
        return False
    length, first = _month_shape(local.year, local.month)
    if not day_mask(fields.days, length, first) >> local.day & 1:
        return False
    found = next_fire(fields, datetime.fromtimestamp(seconds - 1, UTC), zone)
    return found is not None and epoch_seconds(found) == seconds
