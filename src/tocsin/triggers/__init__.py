# SPDX-License-Identifier: Apache-2.0
"""The policy engine: schedule-policy values, triggers, and the decisions every tier
makes with them. Pure: no asyncio, no store, no clock reads (values in, decisions out).

The in-memory scheduler (``scheduling/``), durable tasks (``durable/``), stored schedules
and the cluster's claims (``cluster/``) all call this package; nothing else decides a
policy (DESIGN.md "Schedule policies", APScheduler 4's ``_process_schedules``).

Values: :class:`Overlap`, :class:`Misfire`, :class:`~tocsin.cron.DSTPolicy`,
:class:`~tocsin.cron.Calendar` (both defined beside the cron engine they feed, re-exported
here), jitter (:func:`check_jitter`, :func:`jitter_offset`), and what a delivery carries
and became (:class:`Tick`, :class:`Outcome`, :class:`TickOutcome`), how a cluster
instant is delivered (:class:`Delivery`).

Triggers (:class:`Trigger`: :class:`IntervalTrigger`, :class:`CronTrigger`,
:class:`OnceTrigger`): a schedule's instants with its calendar, DST policy and jitter
applied inside. Ranges: :func:`backfill_instants` (one limit, :data:`MAX_BACKFILL`),
:func:`next_delivered`, :func:`last_at`, :func:`overdue` (what came due while nothing
ran) and :func:`check_horizon` (a calendar leaving no instant in ten years is a
``ValueError``).

Decisions over a small per-schedule state: :func:`admit` / :func:`settle` /
:func:`leave` / :func:`release` over a :class:`Flight` (overlap), :func:`plan_misfire`,
:func:`goes_on_from_now`, :func:`past_grace` and :func:`supersede` (misfire, grace, and
the one tick waiting behind a cluster claim in flight), :meth:`Overlap.waiting_room`
and :func:`queue_admits` (runs that never overlap).
"""

from __future__ import annotations

from ..cron import Calendar, DSTPolicy
from ._checks import MAX_NOTE_BYTES, check_dst, check_exclude, check_note, positive_int
from ._dst import DST_SCAN, dst_dropped
from ._jitter import check_jitter, jitter_offset
from ._misfire import (
    Misfire,
    MisfirePlan,
    goes_on_from_now,
    past_grace,
    plan_misfire,
    supersede,
)
from ._overlap import Admission, Flight, Overlap, admit, leave, queue_admits, release, settle
from ._ticks import Delivery, Outcome, Tick, TickOutcome, check_delivery
from ._trigger import (
    CRON_WALK_LIMIT,
    SCAN_LIMIT,
    CronTrigger,
    IntervalTrigger,
    OnceTrigger,
    Trigger,
)
from ._window import (
    HORIZON,
    MAX_BACKFILL,
    backfill_instants,
    check_horizon,
    last_at,
    next_delivered,
    overdue,
)

__all__ = [
    "CRON_WALK_LIMIT",
    "DST_SCAN",
    "HORIZON",
    "MAX_BACKFILL",
    "MAX_NOTE_BYTES",
    "SCAN_LIMIT",
    "Admission",
    "Calendar",
    "CronTrigger",
    "DSTPolicy",
    "Delivery",
    "Flight",
    "IntervalTrigger",
    "Misfire",
    "MisfirePlan",
    "OnceTrigger",
    "Outcome",
    "Overlap",
    "Tick",
    "TickOutcome",
    "Trigger",
    "admit",
    "backfill_instants",
    "check_delivery",
    "check_dst",
    "check_exclude",
    "check_horizon",
    "check_jitter",
    "check_note",
    "dst_dropped",
    "goes_on_from_now",
    "jitter_offset",
    "last_at",
    "leave",
    "next_delivered",
    "overdue",
    "past_grace",
    "plan_misfire",
    "positive_int",
    "queue_admits",
    "release",
    "settle",
    "supersede",
]
