# SPDX-License-Identifier: Apache-2.0
"""The parsed form of a cron expression: one value per field, frozen and hashable.

Numeric fields are bitsets (bit ``n`` set means value ``n`` is allowed; years use bit
``year - MIN_YEAR``). A bitset makes "next allowed value ≥ x" a shift and a lowest-set-bit
lookup, with no sorted-list search and no allocation on the hot path of ``next_after``.

The two day fields collapse into one :class:`DayRule`. Quartz lets only one of them be
restricted at a time (the other is ``?``); Unix cron may restrict both, and then a day
matches if either matches (Vixie cron's rule), or, when one of them starts with ``*``,
if both match: the two ``DAYS_OF_MONTH_*_WEEK`` kinds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, final

__all__ = [
    "FIELD_NAMES",
    "MAX_YEAR",
    "MIN_YEAR",
    "CronFields",
    "DayKind",
    "DayRule",
    "first_bit",
    "next_bit",
]

#: Field names as they appear in error messages, in expression order.
FIELD_NAMES: Final = (
    "seconds",
    "minutes",
    "hours",
    "day-of-month",
    "month",
    "day-of-week",
    "year",
)

#: Year bounds. Quartz accepts years from 1970 to "this year + 100", a bound that moves
#: with the clock; a pure module cannot read the clock, so the bound is fixed, well past
#: the 2124 the Quartz 2.3.2 vectors reach.
MIN_YEAR: Final = 1970
MAX_YEAR: Final = 2199


def next_bit(mask: int, start: int) -> int:
    """Return the lowest set bit of ``mask`` at or above ``start``, or -1 if none."""
    rest = mask >> start
    if not rest:
        return -1
    return start + (rest & -rest).bit_length() - 1


def first_bit(mask: int) -> int:
    """Return the lowest set bit of ``mask`` (``mask`` must not be 0)."""
    return (mask & -mask).bit_length() - 1


class DayKind(enum.StrEnum):
    """Which rule picks the days of a month.

    A ``StrEnum`` so that hashing a member is ``str.__hash__`` (C) rather than
    ``Enum.__hash__`` (Python): ``next_after`` hashes the day rule for its month-mask
    cache on every call, and this took ~0.5 µs of a ~6 µs call.
    """

    EVERY_DAY = "every-day"
    """Both day fields unrestricted (one ``*`` and one ``?``)."""
    DAYS_OF_MONTH = "days-of-month"
    """A set of days of the month (``1,15``, ``1-10/3``, ``*/2``): ``mask``."""
    LAST_DAY = "last-day"
    """``L`` / ``L-n``: the last day minus ``value`` (months where that is < 1 skip)."""
    LAST_WEEKDAY = "last-weekday"
    """``LW`` / ``L-nW``: the weekday nearest the last day minus ``value``."""
    NEAREST_WEEKDAY = "nearest-weekday"
    """``nW``: the weekday nearest day ``value``, never leaving the month."""
    DAYS_OF_WEEK = "days-of-week"
    """A set of weekdays, bit 1 = Sunday … bit 7 = Saturday: ``mask``."""
    LAST_OF_WEEKDAY = "last-of-weekday"
    """``nL``: the last weekday ``value`` of the month."""
    NTH_OF_WEEKDAY = "nth-of-weekday"
    """``n#k``: the ``nth`` weekday ``value`` of the month (months without one skip)."""
    DAYS_OF_MONTH_OR_WEEK = "days-of-month-or-week"
    """Unix cron, both day fields restricted: a day of ``mask`` or a weekday of ``weekdays``."""
    DAYS_OF_MONTH_AND_WEEK = "days-of-month-and-week"
    """Unix cron, a day field starting with ``*`` (``*/2``): in ``mask`` and in ``weekdays``."""


@final
@dataclass(frozen=True, slots=True)
class DayRule:
    """How days are chosen; which attributes matter depends on ``kind``."""

    kind: DayKind
    mask: int = 0
    value: int = 0
    nth: int = 0
    weekdays: int = 0
    """The weekday bitset (bit 1 = Sunday … bit 7 = Saturday) of the two Unix kinds."""


@final
@dataclass(frozen=True, slots=True)
class CronFields:
    """The normalized fields of an expression; equal fields fire at equal times.

    Nothing of the spelling is kept: two expressions that differ only in spelling
    (``MON`` vs ``2``, ``0/15`` vs ``0,15,30,45``) have equal fields.
    """

    seconds: int
    minutes: int
    hours: int
    days: DayRule
    months: int
    years: int
