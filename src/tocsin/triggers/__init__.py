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
:func:`goes_on_from_now`, :func:`past_grace` (:func:`grace_note`), :func:`replay_rate`
and :func:`supersede` (misfire, grace, and the one tick waiting behind a cluster claim in
flight), :meth:`Overlap.waiting_room`, :func:`run_waiting_room` and :func:`queue_admits`
(runs that never overlap). The fast path's questions, asked once when a schedule is
made: :func:`needs_policy` and :func:`counts_in_flight`. Instants for callers that keep
their own cron or calendar state: :func:`cron_after`, :func:`calendar_excludes`,
:func:`jitter_delay`, :func:`delivered_after`.
"""

from __future__ import annotations

from ..cron import Calendar, DSTPolicy
from ._checks import MAX_NOTE_BYTES, check_dst, check_exclude, check_note, positive_int
from ._dst import DST_SCAN, dst_dropped
from ._jitter import check_jitter, jitter_delay, jitter_offset
from ._misfire import (
    Misfire,
    MisfirePlan,
    goes_on_from_now,
    grace_note,
    past_grace,
    plan_misfire,
    replay_rate,
    supersede,
)
from ._overlap import (
    Admission,
    Flight,
    Overlap,
    admit,
    counts_in_flight,
    leave,
    queue_admits,
    release,
    run_waiting_room,
    settle,
)
from ._plain import needs_policy
from ._ticks import Delivery, Outcome, Tick, TickOutcome, check_delivery
from ._trigger import (
    CRON_WALK_LIMIT,
    SCAN_LIMIT,
    CronTrigger,
    IntervalTrigger,
    OnceTrigger,
    Trigger,
    calendar_excludes,
    cron_after,
)
from ._window import (
    HORIZON,
    MAX_BACKFILL,
    backfill_instants,
    check_horizon,
    delivered_after,
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
    "calendar_excludes",
    "check_delivery",
    "check_dst",
    "check_exclude",
    "check_horizon",
    "check_jitter",
    "check_note",
    "counts_in_flight",
    "cron_after",
    "delivered_after",
    "dst_dropped",
    "goes_on_from_now",
    "grace_note",
    "jitter_delay",
    "jitter_offset",
    "last_at",
    "leave",
    "needs_policy",
    "next_delivered",
    "overdue",
    "past_grace",
    "plan_misfire",
    "positive_int",
    "queue_admits",
    "release",
    "replay_rate",
    "run_waiting_room",
    "settle",
    "supersede",
]
