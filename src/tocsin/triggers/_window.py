# SPDX-License-Identifier: Apache-2.0
"""Ranges of a trigger's instants: what a backfill delivers (one limit for every tier,
:data:`MAX_BACKFILL`), the next instant delivered across a long excluded stretch
(:func:`next_delivered`), the last one at or before a moment (:func:`last_at`), the
instants that came due while nothing ran (:func:`overdue`), and the check that a
calendar or policy leaves a schedule some instant within :data:`HORIZON` (DESIGN.md
"Schedule policies": a ``ValueError`` at the call otherwise).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Final

from ._trigger import CRON_WALK_LIMIT, IntervalTrigger, Trigger

__all__ = [
    "HORIZON",
    "MAX_BACKFILL",
    "backfill_instants",
    "check_horizon",
    "last_at",
    "next_delivered",
    "overdue",
]

#: Instants one backfill delivers at most, in memory, for durable tasks and stored
#: schedules alike (a wider range is a ``ValueError``: split it). A year of a one-minute
#: schedule is 525,600; ten weeks of it fit.
MAX_BACKFILL: Final = 100_000

#: How far ahead a schedule must have an instant its calendar and policies leave
#: (ten years of 365.25 days, in seconds).
HORIZON: Final = 10 * 365.25 * 86_400.0

#: Instants the horizon check walks one by one before it samples the rest of the
#: horizon hourly (a per-second schedule whose calendar excludes a whole week).
_WALK: Final = 10_000
_PROBE: Final = 3_600.0


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def backfill_instants(
    trigger: Trigger, start: float, end: float, what: str = "a schedule"
) -> list[float]:
    """The instants ``trigger`` delivers in ``[start, end)`` (epoch seconds), oldest
    first, without those its calendar excludes (``what`` names the schedule in the
    error).

    Raises:
        ValueError: the range holds more than :data:`MAX_BACKFILL` instants (naming the
            range and the limit: split it).
    """
    raw = trigger.between(start, end, cap=MAX_BACKFILL)
    if len(raw) > MAX_BACKFILL:
        raise ValueError(
            f"a backfill of {what} from {_iso(start)} to {_iso(end)} would deliver more than "
            f"{MAX_BACKFILL:,} instants: split the range"
        )
    exclude = trigger.exclude
    if exclude is None:
        return raw
    return [t for t in raw if not trigger.excluded(t)]


def next_delivered(trigger: Trigger, moment: float, horizon: float = HORIZON) -> float | None:
    """The first instant after ``moment`` that ``trigger`` delivers (its calendar
    applied), searched within ``horizon`` seconds; ``None`` when there is none there (or
    no raw instant at all). Without a calendar: the first raw instant, however far.

    The first 10,000 raw instants are walked one by one; past them the horizon is probed
    hourly (an instant a calendar keeps lies in a kept day, weekday or window of the
    day), and the first kept probe is walked back to the first kept instant after the
    last excluded probe (at most 10,000 steps: a per-second schedule whose calendar
    excludes a whole weekend is answered in about 60,000 calendar reads).
    """
    instant = trigger.after(moment)
    if instant is None or trigger.exclude is None:
        return instant
    end = moment + horizon
    for _ in range(_WALK):
        if instant is None or instant > end:
            return None
        if not trigger.excluded(instant):
            return instant
        instant = trigger.after(instant)
    excluded = moment
    while instant is not None and instant <= end:
        if not trigger.excluded(instant):
            return _first_kept(trigger, excluded, instant)
        excluded = instant
        instant = trigger.after(instant + _PROBE)
    return None


def _first_kept(trigger: Trigger, excluded: float, kept: float) -> float:
    """The first instant the calendar keeps after ``excluded``: ``kept`` or one before it
    (``kept`` itself after a walk of :data:`_WALK` excluded instants)."""
    instant = trigger.after(excluded)
    for _ in range(_WALK):
        if instant is None or instant >= kept:
            break
        if not trigger.excluded(instant):
            return instant
        instant = trigger.after(instant)
    return kept


def last_at(trigger: Trigger, moment: float) -> float | None:
    """The last raw instant at or before ``moment`` (calendar not applied), looked for
    in the :data:`HORIZON` before it; ``None`` when there is none there."""
    end = math.nextafter(moment, math.inf)
    span = 60.0
    while True:
        found = trigger.between(moment - span, end, keep=1)
        if found:
            return found[-1]
        if span >= HORIZON:
            return None
        span = min(span * 8, HORIZON)


def overdue(trigger: Trigger, since: float, until: float, keep: int) -> tuple[int, list[float]]:
    """The raw instants in ``(since, until]`` (calendar not applied: each is decided on
    its own): how many there are and the most recent ``keep`` of them, oldest first.
    An interval's are counted; any other trigger's are walked, at most
    :data:`~tocsin.triggers.CRON_WALK_LIMIT` of them (a longer stretch counts that many
    and one).
    """
    start = math.nextafter(since, math.inf)
    end = math.nextafter(until, math.inf)
    recent = trigger.between(start, end, keep=keep)
    if not recent:
        return 0, recent
    if isinstance(trigger, IntervalTrigger):
        step, anchor = trigger.interval, trigger.anchor
        count = math.floor((until - anchor) / step) - math.floor((since - anchor) / step)
    else:
        count = len(trigger.between(start, end, cap=CRON_WALK_LIMIT))
    return max(count, len(recent)), recent


def check_horizon(trigger: Trigger, now: float, what: str = "the schedule") -> float | None:
    """Check that ``trigger``'s calendar leaves it an instant within :data:`HORIZON`
    after ``now``, and return the first it delivers (:func:`next_delivered`).

    Returns ``None`` only when the raw sequence itself has no instant after ``now`` (the
    caller's own error: a one-shot in the past, a cron with no fire time left).

    Raises:
        ValueError: the calendar or DST policy leaves no instant in the next ten years,
            though the trigger alone would fire (naming ``what`` and the first raw one).
    """
    first_raw = trigger.after(now)
    if first_raw is None:
        return None
    if first_raw > now + HORIZON or trigger.exclude is None:
        return first_raw  # no calendar, or a far first instant: not a calendar's doing
    found = next_delivered(trigger, now)
    if found is not None:
        return found
    raise ValueError(
        f"{what} would never fire: its calendar (`exclude`) or policy leaves no instant "
        f"in the next 10 years (after {_iso(now)}; its first instant without them would "
        f"be {_iso(first_raw)})"
    )
