# SPDX-License-Identifier: Apache-2.0
"""Snapshots of the scheduler's state: :class:`ScheduleInfo` and :class:`SchedulerMetrics`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..actor._spi import ScheduleInfo, SchedulerMetrics

if TYPE_CHECKING:
    from ._scheduler import Scheduler, ScheduleRecord

__all__ = [
    "last_lateness",
    "lateness_ring",
    "schedule_counts",
    "schedule_info",
    "scheduler_metrics",
    "utc",
]


def schedule_info(
    record: ScheduleRecord, now: float, wall: float, here: str, clustered: bool = False
) -> ScheduleInfo:
    """A frozen snapshot of one record, with times converted from monotonic to UTC.

    ``here`` is this node's address: a target or sender of another node (remoting) shows
    as its full PID string, one of this node as its path. ``clustered``: the system is
    in cluster mode (its cron ticks are claimed cluster-wide)."""
    cron = record.cron
    if record.paused or not record.armed:
        next_fire = None
    elif cron is not None:
        next_fire = utc(cron.next_wall)
    else:
        next_fire = utc(wall + (record.due - now))
    owner = record.owner
    sender = record.sender
    return ScheduleInfo(
        reference=record.reference,
        target=_where(record.target, here),
        kind=record.kind,
        interval=record.interval if record.interval is not None else record.delay,
        cron=cron.text if cron is not None else None,
        timezone=cron.zone_name if cron is not None else None,
        next_fire_at=next_fire,
        paused=record.paused,
        owner=owner.pid.path if owner is not None else None,
        sender=_where(sender, here) if getattr(sender, "path", None) else None,
        ticks=record.ticks,
        created_at=utc(record.created_at),
        cluster_claimed=clustered and cron is not None,
    )


def _where(pid: Any, here: str) -> str:
    """A PID of this node as its path; one of another node (remoting) as its full
    string, so a remote target reads as where it lives."""
    return str(pid.path) if pid.address == here else str(pid)


def scheduler_metrics(scheduler: Scheduler, samples: list[float]) -> SchedulerMetrics:
    """Counters of ``scheduler`` and quantiles of the sorted lateness ``samples``."""
    return SchedulerMetrics(
        ticks_delivered=scheduler.ticks_delivered,
        ticks_dead_lettered=scheduler.ticks_dead_lettered,
        ticks_discarded=scheduler.ticks_discarded,
        live_schedules=len(scheduler),
        lateness_p50=_quantile(samples, 0.50),
        lateness_p99=_quantile(samples, 0.99),
        lateness_max=samples[-1] if samples else 0.0,
    )


def lateness_ring(scheduler: Scheduler) -> tuple[int, list[float]]:
    """``(ticks fired so far, the lateness ring buffer)`` for operator tools (issue 14):
    tick ``i``'s lateness is at ``ring[i % len(ring)]`` while fewer than ``len(ring)``
    ticks fired after it. The ring is the scheduler's own list, not a copy: read it
    before yielding to the loop."""
    return scheduler._fired, scheduler._lateness


def last_lateness(scheduler: Scheduler) -> dict[str, float]:
    """Seconds each schedule's last tick fired after its deadline, by reference, for
    the schedules that have fired (the console's per-schedule lateness, issue 14)."""
    return {ref: r.late for ref, r in scheduler._refs.items() if r.late is not None}


def schedule_counts(scheduler: Scheduler) -> dict[tuple[str, bool], int]:
    """Live schedules by ``(kind, paused)``: one pass over the records, no snapshots."""
    counts: dict[tuple[str, bool], int] = {}
    for record in scheduler._refs.values():
        key = (str(record.kind), bool(record.paused))
        counts[key] = counts.get(key, 0) + 1
    return counts


_MAX_UTC = datetime.max.replace(tzinfo=UTC)
_MIN_UTC = datetime.min.replace(tzinfo=UTC)


def utc(epoch: float) -> datetime:
    """``epoch`` as an aware UTC datetime, clamped to the datetime range.

    Delays have no upper bound beyond being finite, so a fire time may lie past year 9999.
    """
    try:
        return datetime.fromtimestamp(epoch, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return _MAX_UTC if epoch > 0 else _MIN_UTC


def _quantile(samples: list[float], q: float) -> float:
    if not samples:
        return 0.0
    return samples[min(len(samples) - 1, int(q * len(samples)))]
