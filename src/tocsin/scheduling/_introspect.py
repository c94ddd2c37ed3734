# SPDX-License-Identifier: Apache-2.0
"""Snapshots of the scheduler's state: :class:`ScheduleInfo`, :class:`SchedulerMetrics`
and :class:`SchedulerStatistics`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..actor._spi import ScheduleInfo, SchedulerMetrics
from ..triggers import CronTrigger, IntervalTrigger, Trigger, delivered_after
from ._times import utc

if TYPE_CHECKING:
    from ._policy import SchedulePolicy
    from ._record import ScheduleRecord
    from ._ticks import TickPath

__all__ = [
    "SchedulerStatistics",
    "last_lateness",
    "schedule_info",
    "scheduler_metrics",
    "scheduler_statistics",
    "utc",
]


def schedule_info(
    record: ScheduleRecord,
    now: float,
    wall: float,
    here: str,
    clustered: bool = False,
    paused_elsewhere: Any = None,
) -> ScheduleInfo:
    """A frozen snapshot of one record, with times converted from monotonic to UTC.

    ``here`` is this node's address: a target or sender of another node (remoting) shows
    as its full PID string, one of this node as its path. ``clustered``: the system is
    in cluster mode (its cron ticks are claimed cluster-wide). ``paused_elsewhere``: the
    cluster-wide pause of this cron reference (note, paused_at, paused_by), shown where
    the schedule has no pause of its own here."""
    cron = record.cron
    policy = record.policy
    if record.paused or not record.armed:
        next_fire = None
    elif policy is not None and policy.exclude is not None:
        # The next instant that will be delivered: the armed one may be one the calendar
        # excludes (decided when it fires), so the trigger says which.
        next_fire = _next_kept(record, policy, now, wall)
    elif cron is not None:
        next_fire = utc(cron.next_wall + cron.offset)  # jitter included
    else:
        next_fire = utc(wall + (record.due - now))
    owner = record.owner
    sender = record.sender
    # A pause here wins; else a cluster-wide pause of this cron reference, if any.
    pause = None if record.paused else paused_elsewhere
    pause_at = record.paused_at if pause is None else pause.paused_at
    # One construction for both kinds of record: the policy fields keep their defaults
    # (today's behaviour) when the schedule has no policy.
    policies: dict[str, Any] = (
        {}
        if policy is None
        else {
            "overlap": policy.overlap,
            "misfire": policy.misfire,
            "jitter": policy.jitter,
            "dst": policy.dst,
            "exclude": policy.exclude,
        }
    )
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
        note=record.note if pause is None else pause.note,
        paused_at=None if pause_at is None else utc(pause_at),
        paused_by=record.paused_by if pause is None else pause.paused_by,
        **policies,
    )


def _where(pid: Any, here: str) -> str:
    """A PID of this node as its path; one of another node (remoting) as its full
    string, so a remote target reads as where it lives."""
    return str(pid.path) if pid.address == here else str(pid)


def scheduler_metrics(path: TickPath, live: int, samples: list[float]) -> SchedulerMetrics:
    """Counters of the tick ``path``, ``live`` schedules, and quantiles of the sorted
    lateness ``samples``."""
    return SchedulerMetrics(
        ticks_delivered=path.ticks_delivered,
        ticks_dead_lettered=path.ticks_dead_lettered,
        ticks_discarded=path.ticks_discarded,
        live_schedules=live,
        lateness_p50=_quantile(samples, 0.50),
        lateness_p99=_quantile(samples, 0.99),
        lateness_max=samples[-1] if samples else 0.0,
    )


@dataclass(frozen=True, slots=True)
class SchedulerStatistics:
    """A snapshot of a scheduler's state for operator tools (metrics, the console),
    taken by :meth:`Scheduler.statistics` in one pass over the live schedules.

    Attributes:
        fired: ticks fired so far (delivered or not).
        lateness: the lateness ring (seconds each tick fired after its deadline), a copy:
            tick ``i``'s sample is at ``lateness[i % len(lateness)]`` while fewer than
            ``len(lateness)`` ticks fired after it.
        by_kind: live schedules by ``(kind, paused)``.
        last_lateness: seconds each schedule's last tick fired after its deadline, by
            reference, for the live schedules that have fired.
    """

    fired: int
    lateness: tuple[float, ...]
    by_kind: Mapping[tuple[str, bool], int]
    last_lateness: Mapping[str, float]


def scheduler_statistics(
    fired: int, ring: list[float], records: Iterable[ScheduleRecord]
) -> SchedulerStatistics:
    """The snapshot of :meth:`Scheduler.statistics` (see :class:`SchedulerStatistics`)."""
    counts: dict[tuple[str, bool], int] = {}
    late: dict[str, float] = {}
    for record in records:
        key = (str(record.kind), bool(record.paused))
        counts[key] = counts.get(key, 0) + 1
        if record.late is not None:
            late[record.reference] = record.late
    return SchedulerStatistics(fired, tuple(ring), counts, late)


class _Statistics(Protocol):
    """What :func:`last_lateness` reads of a scheduler."""

    def statistics(self) -> SchedulerStatistics: ...


def last_lateness(scheduler: _Statistics) -> dict[str, float]:
    """Seconds each schedule's last tick fired after its deadline, by reference, for
    the schedules that have fired (the console's per-schedule lateness, issue 14)."""
    return dict(scheduler.statistics().last_lateness)


def _next_kept(
    record: ScheduleRecord, policy: SchedulePolicy, now: float, wall: float
) -> datetime | None:
    """The next instant of ``record`` its calendar keeps, plus its jitter (aware UTC), or
    ``None`` when the engine finds none."""
    cron = record.cron
    trigger: Trigger
    if cron is not None:
        first = cron.next_wall
        trigger = CronTrigger(
            cron.expr, cron.tz, dst=cron.dst, exclude=policy.exclude, jitter=policy.jitter
        )
    elif record.interval is not None:
        nominal = policy.nominal if policy.jitter is not None else record.due
        first = wall + (nominal - now)
        trigger = IntervalTrigger(
            record.interval, first, exclude=policy.exclude, jitter=policy.jitter, zone=policy.zone
        )
    else:
        return utc(wall + (record.due - now))  # a one-shot has no calendar
    delivered = delivered_after(trigger, record.reference, math.nextafter(first, -math.inf))
    return None if delivered is None else utc(delivered)


def _quantile(samples: list[float], q: float) -> float:
    if not samples:
        return 0.0
    return samples[min(len(samples) - 1, int(q * len(samples)))]
