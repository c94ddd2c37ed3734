# SPDX-License-Identifier: Apache-2.0
"""Read-only snapshots: :class:`ScheduleInfo`, :class:`ScheduleKind`, :class:`SchedulerMetrics`."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..triggers import Misfire, Overlap

if TYPE_CHECKING:
    from ..cron import Calendar, DSTPolicy

__all__ = ["ScheduleInfo", "ScheduleKind", "SchedulerMetrics"]


class ScheduleKind(enum.StrEnum):
    """What triggers a schedule."""

    ONCE = "once"
    INTERVAL = "interval"
    CRON = "cron"


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """A snapshot of one live schedule (``list_schedules()``); changing it changes nothing.

    Attributes:
        reference: the schedule's reference (given or generated).
        target: path of the target actor.
        kind: once, interval or cron.
        interval: the delay (once) or interval (interval) in seconds; ``None`` for cron.
        cron: the cron expression text, for cron schedules.
        timezone: the IANA zone a cron expression is evaluated in.
        next_fire_at: next fire time (aware UTC); ``None`` while paused, or for a
            one-shot that has fired and whose tick awaits its turn in the mailbox.
        paused: whether the schedule is paused.
        owner: path of the owning actor, ``None`` for a schedule made through the system.
        sender: path of the recorded sender, ``None`` for ``NoSender``.
        ticks: ticks handed to the target so far.
        created_at: when the schedule was made (aware UTC).
        cluster_claimed: a cron schedule of a system in cluster mode: each tick is claimed
            cluster-wide and delivered by one node only (``ticks`` counts this node's).
        overlap: the schedule's :class:`~tocsin.Overlap` policy.
        misfire: its :class:`~tocsin.Misfire` policy.
        jitter: its jitter in seconds, or ``None``.
        dst: its :class:`~tocsin.DSTPolicy` (cron), or ``None`` for the default.
        exclude: its :class:`~tocsin.Calendar` of excluded instants, or ``None``.
        note: the note given when it was paused, or ``None``.
        paused_at: when it was paused (aware UTC), or ``None``.
        paused_by: the node or system that paused it, or ``None``.
    """

    reference: str
    target: str
    kind: ScheduleKind
    interval: float | None
    cron: str | None
    timezone: str | None
    next_fire_at: datetime | None
    paused: bool
    owner: str | None
    sender: str | None
    ticks: int
    created_at: datetime
    cluster_claimed: bool = False
    overlap: Overlap = Overlap.ALLOW
    misfire: Misfire = Misfire.ONCE
    jitter: float | None = None
    dst: DSTPolicy | None = None
    exclude: Calendar | None = None
    note: str | None = None
    paused_at: datetime | None = None
    paused_by: str | None = None


@dataclass(frozen=True, slots=True)
class SchedulerMetrics:
    """Scheduler counters (``system.scheduler_metrics()``).

    Lateness is how long after its deadline a tick was handed to its target, in
    seconds, over the most recent :data:`~tocsin.scheduling._scheduler.LATENESS_WINDOW`
    ticks (0.0 when none fired yet).
    """

    ticks_delivered: int
    ticks_dead_lettered: int
    ticks_discarded: int
    live_schedules: int
    lateness_p50: float
    lateness_p99: float
    lateness_max: float
