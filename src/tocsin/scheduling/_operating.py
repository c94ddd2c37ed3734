# SPDX-License-Identifier: Apache-2.0
"""Operating schedules: ticks by hand (``trigger_schedule``), the instants of a past
range (``backfill_schedule``), and what the history says (``schedule_history``, the
``paused`` instants a resume records), DESIGN.md "Operating schedules" (internal).

The instants come from the schedule's trigger (:mod:`tocsin.triggers`: one backfill
limit, :data:`~tocsin.triggers.MAX_BACKFILL`, for every tier); a tick by hand meets the
overlap policy through :func:`~tocsin.triggers.admit`.
"""

from __future__ import annotations

import builtins
import math
from datetime import datetime
from typing import TYPE_CHECKING, final

from ..actor._spi import Outcome, TickOutcome
from ..triggers import (
    Admission,
    CronTrigger,
    IntervalTrigger,
    Trigger,
    admit,
    backfill_instants,
    replay_rate,
)
from ._ticks import aware
from ._times import utc

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..actor._spi import Runtime
    from ._claims import Claims
    from ._cron import CronState
    from ._record import ScheduleRecord
    from ._ticks import TickPath

__all__ = ["Operating", "cron_trigger"]

_PAUSED = Outcome.PAUSED


def cron_trigger(state: CronState, record: ScheduleRecord) -> CronTrigger:
    """The trigger of a cron schedule (its expression, zone, DST policy and calendar)."""
    policy = record.policy
    return CronTrigger(
        state.expr, state.tz, dst=state.dst, exclude=None if policy is None else policy.exclude
    )


@final
class Operating:
    """The operating verbs of one scheduler (internal; see the module).

    Args:
        runtime: the system's shared services (clock, sleep).
        path: the tick path a tick by hand goes through.
        claims: the cluster claims (a cron tick by hand is claimed cluster-wide).
        find: the registry's lookup (``ScheduleNotFoundError`` for an unknown reference).
        zone: the system's zone (an interval schedule's calendar reads instants in it).
    """

    def __init__(
        self,
        runtime: Runtime,
        path: TickPath,
        claims: Claims,
        find: Callable[[str], ScheduleRecord],
        zone: object,
    ) -> None:
        self._runtime = runtime
        self._clock = runtime.clock
        self._path = path
        self._claims = claims
        self._find = find
        self._zone = zone

    def history_of(self, reference: str) -> builtins.list[TickOutcome]:
        """What became of the recent instants of ``reference``, oldest first.

        Raises:
            ScheduleNotFoundError: no live schedule holds ``reference``.
        """
        return self._path.history.read(self._find(reference))

    def record_paused(self, record: ScheduleRecord) -> None:
        """On resume: every instant that came due while ``record`` was paused is
        recorded as ``paused`` (the most recent ``history`` of them: the ring keeps no
        more, and an operator asking "why didn't it run" needs the latest)."""
        clock = self._clock
        path = self._path
        size = path.history.size
        if record.final:
            return
        state = record.cron
        if state is not None:
            # Up to now included: resume arms the first fire time after now.
            end = math.nextafter(clock.wall(), math.inf)
            trigger = CronTrigger(state.expr, state.tz, dst=state.dst)
            instants = trigger.between(state.next_wall, end, keep=size)
        elif record.interval is not None:
            now = clock.monotonic()
            due, interval = record.due, record.interval
            if due > now:
                return
            count = math.floor((now - due) / interval) + 1
            offset = clock.wall() - now
            first = max(0, count - size)
            instants = [due + k * interval + offset for k in range(first, count)]
        else:
            return  # a one-shot keeps the delay it had left: it missed nothing
        for instant in instants:
            path.outcome(record, instant, _PAUSED)

    async def trigger(self, reference: str) -> None:
        """One tick of ``reference`` now, through its overlap policy (``manual=True``);
        its next fire time is unchanged, paused or not. Cluster mode, cron: claimed
        cluster-wide under a manual key of its own, so it is delivered once."""
        record = self._find(reference)
        clock = self._clock
        wall = clock.wall()
        if self._claims.clustered and record.cron is not None:
            await self._claims.claim_then(
                record, wall, lambda: self.by_hand(record, wall, backfill=False)
            )
            return
        at = wall if record.cron is not None else clock.monotonic()
        self.by_hand(record, at, backfill=False)

    async def backfill(
        self, reference: str, start: datetime, end: datetime, dry_run: bool
    ) -> builtins.list[datetime]:
        """The instants ``reference`` would have fired in ``[start, end)`` (not after
        now, not excluded by its calendar), delivered oldest first through its overlap
        policy at most ``misfire.rate`` per second (``backfill=True``) unless
        ``dry_run``; returns them once every one was handed over (cluster mode, cron:
        each claimed with the regular tick's key, so an instant some node delivered is
        not delivered again while its claim is kept).

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference``.
            TypeError: ``start`` or ``end`` is not a datetime.
            ValueError: naive datetimes, ``start`` after ``end``, or more than
                ``MAX_BACKFILL`` instants in the range.
        """
        record = self._find(reference)
        lo, hi = aware(start, "start"), aware(end, "end")
        if lo > hi:
            raise ValueError(f"`start` ({start.isoformat()}) is after `end` ({end.isoformat()})")
        clock = self._clock
        wall, mono = clock.wall(), clock.monotonic()
        hi = min(hi, math.nextafter(wall, math.inf))  # the past only: now included
        state, policy = record.cron, record.policy
        exclude = None if policy is None else policy.exclude
        trigger: Trigger | None
        if state is not None:
            trigger = cron_trigger(state, record)
        elif record.interval is not None:
            anchor = record.due if policy is None or policy.jitter is None else policy.nominal
            trigger = IntervalTrigger(
                record.interval,
                wall + (anchor - mono),
                exclude=exclude,
                zone=self._zone,  # type: ignore[arg-type]
            )
        else:
            trigger = None  # a live one-shot's instant is still ahead of it
        instants = [] if trigger is None else backfill_instants(trigger, lo, hi, f"{reference!r}")
        listed = [utc(t) for t in instants]
        if dry_run or not instants:
            return listed
        rate = None if policy is None else replay_rate(policy.misfire)
        clustered = state is not None and self._claims.clustered
        step = 0.0 if rate is None else 1.0 / rate
        began = clock.monotonic()
        for k, instant in enumerate(instants):
            if record.dead:
                break  # cancelled or replaced meanwhile: the rest is not delivered
            if k and step:
                await self._runtime.sleep(max(0.0, began + k * step - clock.monotonic()))
            if clustered and state is not None:
                # The gate's backfill claim: the regular tick's key, no lateness check,
                # never coalesced; one call per instant, oldest first.
                self._claims.deliver_if_claimed(record, state, instant, backfill=True)
            else:
                at = instant if state is not None else instant - wall + mono
                self.by_hand(record, at, backfill=True)
        return listed

    def by_hand(self, record: ScheduleRecord, at: float, *, backfill: bool) -> bool | None:
        """Deliver one manual or backfilled tick of ``record`` (instant ``at`` in its
        own units) through its overlap policy, as a ``TickItem`` carrying its flag.
        True: delivered; False: refused by the target (a dead letter, recorded by
        ``tick_rejected``); None: skipped, or held by ``BUFFER_ONE`` (then delivered as
        the schedule's waiting tick once the one in flight is done)."""
        how = "backfill" if backfill else "manual"
        path = self._path
        wall = path.wall_of(record, at)
        policy = record.policy
        if policy is not None and policy.tracked:
            admission = admit(policy.overlap, policy, at)
            if admission is Admission.HOLD:
                return None
            if admission is Admission.SKIP:
                path.outcome(record, wall, Outcome.SKIPPED_OVERLAP, how)
                return None
        return path.send_by_hand(record, at, wall, backfill)
