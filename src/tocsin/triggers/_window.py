# SPDX-License-Identifier: Apache-2.0
"""Ranges of a trigger's instants: what a backfill delivers (one limit for every tier,
:data:`MAX_BACKFILL`), and the check that a calendar or policy leaves a schedule some
instant within :data:`HORIZON` (DESIGN.md "Schedule policies": a ``ValueError`` at the
call otherwise).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from ._trigger import Trigger

__all__ = ["HORIZON", "MAX_BACKFILL", "backfill_instants", "check_horizon"]

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


def check_horizon(trigger: Trigger, now: float, what: str = "the schedule") -> float | None:
    """Check that ``trigger``'s calendar leaves it an instant within :data:`HORIZON`
    after ``now``, and return one: the first it delivers when it lies within the first
    10,000 raw instants, else one found by probing the horizon hourly (proof enough that
    the schedule fires; :meth:`Trigger.next_after` gives the next one).

    Returns ``None`` only when the raw sequence itself has no instant after ``now`` (the
    caller's own error: a one-shot in the past, a cron with no fire time left).

    Raises:
        ValueError: the calendar or DST policy leaves no instant in the next ten years,
            though the trigger alone would fire (naming ``what`` and the first raw one).
    """
    first_raw = trigger.after(now)
    if first_raw is None:
        return None
    end = now + HORIZON
    if first_raw > end or trigger.exclude is None:
        return first_raw  # no calendar, or a far first instant: not a calendar's doing
    instant: float | None = first_raw
    for _ in range(_WALK):
        if instant is None or instant > end:
            break
        if not trigger.excluded(instant):
            return instant
        instant = trigger.after(instant)
    else:
        # Still excluded after _WALK instants: probe the rest of the horizon hourly (an
        # instant a calendar keeps lies in a kept day, weekday or window of the day).
        assert instant is not None
        probe = instant
        while probe <= end:
            candidate = trigger.after(probe)
            if candidate is None or candidate > end:
                break
            if not trigger.excluded(candidate):
                return candidate
            probe = max(candidate, probe + _PROBE)
    raise ValueError(
        f"{what} would never fire: its calendar (`exclude`) or policy leaves no instant "
        f"in the ten years after {_iso(now)} (its first instant without them would be "
        f"{_iso(first_raw)})"
    )
