# SPDX-License-Identifier: Apache-2.0
"""What a daylight-saving change kept a cron schedule from firing, under its DST policy.

One rule for every tier (in-memory cron and stored schedules): the matching wall times
between two fire times are walked as if nothing were dropped (``gap="next",
fold="both"``); each one the schedule's policy does not fire is reported, a gap's at the
first instant after it. Pure: values in, instants out.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Final

from ..cron import CronExpression, DSTPolicy
from ._ticks import Outcome

__all__ = ["DST_SCAN", "dst_dropped"]

#: Matching wall times one call walks at most (a per-second cron across a change).
DST_SCAN: Final = 4_096


def dst_dropped(
    expr: CronExpression, tz: tzinfo, dst: DSTPolicy | None, since: float, fire_at: float
) -> list[tuple[float, Outcome]]:
    """The instants in ``(since, fire_at)`` that ``dst`` (default :class:`DSTPolicy`)
    kept from firing: ``DST_GAP`` (a matching wall time that did not exist) or
    ``DST_FOLD`` (the occurrence of a repeated wall time the policy does not fire).

    The caller checks first that the zone's offset differs between the two times (the
    walk is for a change only). A gap the policy moves (``next``, ``shift``) or a fold it
    fires twice (``both``) drops nothing. At most :data:`DST_SCAN` wall times are walked.
    """
    policy = dst if dst is not None else DSTPolicy()
    gap_drops = policy.gap in ("quartz", "skip")
    fold_drops = policy.fold != "both"
    if not (gap_drops or fold_drops):
        return []
    every = DSTPolicy(gap="next" if gap_drops else policy.gap, fold="both")
    dropped: list[tuple[float, Outcome]] = []
    current = since
    for _ in range(DST_SCAN):
        nxt = expr.next_after(datetime.fromtimestamp(current, tz), dst=every)
        if nxt is None:
            break
        at = nxt.timestamp()
        if at >= fire_at:
            break
        current = at
        # A real instant whose wall time reads with two offsets is in a fold.
        wall = datetime.fromtimestamp(at, tz).replace(tzinfo=None)
        folded = (
            wall.replace(tzinfo=tz, fold=0).utcoffset()
            != wall.replace(tzinfo=tz, fold=1).utcoffset()
        )
        if folded and fold_drops:
            dropped.append((at, Outcome.DST_FOLD))
        elif not folded and gap_drops:
            dropped.append((at, Outcome.DST_GAP))
    return dropped
