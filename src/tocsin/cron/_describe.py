# SPDX-License-Identifier: Apache-2.0
"""Plain-English descriptions of parsed cron fields.

Prior art: cron-descriptor / cronstrue ("At 12:00, on the last Friday of the month").
Describes the normalized fields, so equal expressions get equal descriptions; the
wording is for people and may change between releases (do not parse it).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Final

from tocsin.cron._fields import MAX_YEAR, MIN_YEAR, CronFields, DayKind, DayRule

__all__ = ["describe", "describe_fields"]

_MONTHS: Final = (
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS: Final = (
    "",
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
)
_ORDINALS: Final = ("", "first", "second", "third", "fourth", "fifth")


def _values(mask: int, offset: int = 0) -> list[int]:
    return [bit + offset for bit in range(mask.bit_length()) if mask >> bit & 1]


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _runs(values: list[int], name: list[str] | None = None) -> str:
    """``1 through 5, 10 and 12``: consecutive runs of three or more become ranges."""
    label = (lambda v: name[v]) if name else str
    parts: list[str] = []
    index = 0
    while index < len(values):
        end = index
        while end + 1 < len(values) and values[end + 1] == values[end] + 1:
            end += 1
        if end - index >= 2:
            parts.append(f"{label(values[index])} through {label(values[end])}")
        else:
            parts.extend(label(v) for v in values[index : end + 1])
        index = end + 1
    return _join(parts)


def _step(values: list[int], low: int, high: int) -> tuple[int, bool] | None:
    """(step, covers the whole field) if ``values`` is an arithmetic series, step > 1."""
    if len(values) < 3:
        return None
    step = values[1] - values[0]
    if step < 2 or any(b - a != step for a, b in pairwise(values)):
        return None
    return step, values[0] - low < step and values[-1] + step > high


def _unit_phrase(mask: int, low: int, high: int, unit: str) -> str:
    """``every minute``, ``every 15 minutes``, ``at minute 5``, ``at minutes 0 and 30``."""
    values = _values(mask)
    if len(values) == high - low + 1:
        return f"every {unit}"
    series = _step(values, low, high)
    if series is not None:
        step, whole = series
        if whole and values[0] == low:
            return f"every {step} {unit}s"
        return f"every {step} {unit}s from {unit} {values[0]} through {values[-1]}"
    if len(values) == 1:
        return f"at {unit} {values[0]}"
    return f"at {unit}s {_runs(values)}"


def _time_phrase(fields: CronFields) -> str:
    seconds, minutes, hours = (
        _values(fields.seconds),
        _values(fields.minutes),
        _values(fields.hours),
    )
    if len(minutes) == 1 and len(hours) == 1 and len(seconds) == 1:
        clock = f"{hours[0]:02d}:{minutes[0]:02d}"
        return f"At {clock}" if seconds[0] == 0 else f"At {clock}:{seconds[0]:02d}"
    parts: list[str] = []
    if seconds != [0]:
        parts.append(_unit_phrase(fields.seconds, 0, 59, "second"))
    if len(minutes) < 60 or len(seconds) < 60:
        minute = _unit_phrase(fields.minutes, 0, 59, "minute")
        if len(minutes) == 1 and len(hours) == 24:
            minute += " of every hour"
        parts.append(minute)
    if len(hours) < 24:
        hour_series = _step(hours, 0, 23)
        if hour_series is not None and hour_series[1] and hours[0] == 0:
            parts.append(f"every {hour_series[0]} hours")
        else:
            parts.append(f"during hour{'s' if len(hours) > 1 else ''} {_runs(hours)}")
    text = ", ".join(parts)
    return text[:1].upper() + text[1:]


def _day_phrase(rule: DayRule) -> str:
    kind = rule.kind
    if kind is DayKind.EVERY_DAY:
        return ""
    if kind is DayKind.DAYS_OF_MONTH:
        days = _values(rule.mask)
        series = _step(days, 1, 31)
        if series is not None and series[1] and days[0] == 1:
            return f"every {series[0]} days of the month, starting on day 1"
        plural = "s" if len(days) > 1 else ""
        return f"on day{plural} {_runs(days)} of the month"
    if kind is DayKind.LAST_DAY:
        if rule.value == 0:
            return "on the last day of the month"
        return f"{rule.value} day{'s' if rule.value > 1 else ''} before the last day of the month"
    if kind is DayKind.LAST_WEEKDAY:
        if rule.value == 0:
            return "on the last weekday of the month"
        return (
            f"on the weekday nearest {rule.value} day{'s' if rule.value > 1 else ''} "
            f"before the last day of the month"
        )
    if kind is DayKind.NEAREST_WEEKDAY:
        return f"on the weekday nearest day {rule.value} of the month"
    if kind is DayKind.DAYS_OF_WEEK:
        return f"on {_runs(_values(rule.mask), list(_WEEKDAYS))}"
    if kind is DayKind.DAYS_OF_MONTH_OR_WEEK or kind is DayKind.DAYS_OF_MONTH_AND_WEEK:
        monthdays = _day_phrase(DayRule(DayKind.DAYS_OF_MONTH, mask=rule.mask))
        weekdays = _runs(_values(rule.weekdays), list(_WEEKDAYS))
        if kind is DayKind.DAYS_OF_MONTH_OR_WEEK:
            return f"{monthdays}, and on every {weekdays}"
        return f"{monthdays}, if it is a {weekdays.replace(' and ', ' or ')}"
    if kind is DayKind.LAST_OF_WEEKDAY:
        return f"on the last {_WEEKDAYS[rule.value]} of the month"
    if rule.value > 7:
        return f"never (there is no weekday {rule.value})"
    return f"on the {_ORDINALS[rule.nth]} {_WEEKDAYS[rule.value]} of the month"


def _month_phrase(months: int) -> str:
    if months == 0b1111111111110:
        return ""
    return f"in {_runs(_values(months), list(_MONTHS))}"


def _year_phrase(years: int) -> str:
    if years == (1 << (MAX_YEAR - MIN_YEAR + 1)) - 1:
        return ""
    values = _values(years, MIN_YEAR)
    if len(values) > 12:
        return f"in {len(values)} years from {values[0]} through {values[-1]}"
    return f"in {_runs(values)}"


def describe(fields: CronFields, reading: str | None = None) -> str:
    """One sentence, e.g. ``At 12:00, on the last Friday of the month (Quartz cron)``.

    Args:
        fields: the parsed fields.
        reading: how the text was read (``"Quartz cron"``, ``"Unix cron"``, ``"@daily"``),
            put in parentheses at the end so a reader sees the dialect; ``None``: nothing.
    """
    parts = [
        _time_phrase(fields),
        _day_phrase(fields.days),
        _month_phrase(fields.months),
        _year_phrase(fields.years),
    ]
    text = ", ".join(part for part in parts if part)
    return text if reading is None else f"{text} ({reading})"


def describe_fields(fields: CronFields) -> list[tuple[str, str]]:
    """(field, meaning) pairs, one per field, for a field-by-field breakdown."""
    day = _day_phrase(fields.days) or "every day"
    return [
        ("seconds", _unit_phrase(fields.seconds, 0, 59, "second")),
        ("minutes", _unit_phrase(fields.minutes, 0, 59, "minute")),
        ("hours", _unit_phrase(fields.hours, 0, 23, "hour")),
        ("days", day),
        ("month", _month_phrase(fields.months) or "every month"),
        ("year", _year_phrase(fields.years) or f"every year ({MIN_YEAR}-{MAX_YEAR})"),
    ]
