# SPDX-License-Identifier: Apache-2.0
"""The instants a schedule would have fired in a range of wall time: what
``backfill_schedule`` delivers, and what came due while a schedule was paused.

Pure functions of the schedule's trigger (an interval grid, or a cron expression with its
zone and DST policy) and its calendar; nothing here reads the clock.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..cron import Calendar
    from ._cron import CronState

__all__ = ["CRON_WALK_LIMIT", "MAX_BACKFILL", "cron_instants", "interval_instants", "kept"]

#: Fire times walked at most before a cron walk that keeps only the most recent ones
#: jumps nearer the end of its range (:func:`cron_instants`), so listing what a long pause
#: of an every-second schedule missed stays cheap.
CRON_WALK_LIMIT: Final = 10_000

#: Instants one ``backfill_schedule`` call delivers at most (a wider range raises
#: ``ValueError``: split it). A year of a one-minute schedule is 525,600.
MAX_BACKFILL: Final = 100_000


def interval_instants(
    anchor: float, interval: float, start: float, end: float, limit: int | None = None
) -> list[float]:
    """The points ``anchor + k * interval`` (any integer ``k``) in ``[start, end)``, oldest
    first (wall seconds). With ``limit``, at most that many: the most recent ones."""
    if end <= start:
        return []
    first = math.ceil((start - anchor) / interval)
    last = math.ceil((end - anchor) / interval) - 1
    if limit is not None:
        first = max(first, last - limit + 1)
    out = [anchor + k * interval for k in range(first, last + 1)]
    # Float rounding at the two ends: keep the range half-open exactly.
    return [t for t in out if start <= t < end]


def cron_instants(
    state: CronState, start: float, end: float, keep: int | None = None, cap: int | None = None
) -> list[float]:
    """Fire times of ``state``'s expression (its zone and DST policy) in ``[start, end)``,
    oldest first (wall seconds).

    ``keep``: only the most recent ``keep`` are wanted (a long range is then not walked
    whole). ``cap``: stop after ``cap + 1`` instants (the caller refuses the range).
    """
    expr, tz, dst = state.expr, state.tz, state.dst
    out: list[float] = []
    if end <= start:
        return out
    cursor = datetime.fromtimestamp(start, tz) - timedelta(microseconds=1)
    walked = 0
    jumped = False
    while True:
        nxt = expr.next_after(cursor, dst=dst)
        if nxt is None:
            break
        t = nxt.timestamp()
        if t >= end:
            break
        if t >= start:  # a DST policy may step back inside the walk's first second
            out.append(t)
        walked += 1
        if cap is not None and len(out) > cap:
            break
        if keep is not None and not jumped and walked >= CRON_WALK_LIMIT and len(out) >= 2:
            # Far too many to walk: jump to the window that holds the last `keep` (the
            # gaps seen so far predict it for a regular expression), then walk on.
            jumped = True
            gap = (out[-1] - out[0]) / (len(out) - 1)
            restart = end - 2 * keep * gap
            if restart > t:
                out.clear()
                cursor = datetime.fromtimestamp(restart, tz)
                continue
        cursor = nxt
        if keep is not None and len(out) > 4 * keep:
            del out[: len(out) - keep]
    return out if keep is None else out[-keep:]


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def kept(instants: list[float], exclude: Calendar | None, zone: tzinfo) -> list[float]:
    """``instants`` without those ``exclude`` holds (read in ``zone``)."""
    if exclude is None:
        return instants
    return [t for t in instants if not exclude.excludes(_utc(t), zone)]
