# SPDX-License-Identifier: Apache-2.0
"""The scheduling calls of :class:`~tocsin.ActorSystem` and :class:`~tocsin.ReceiveContext`,
and :class:`ScheduleService`, the protocol the scheduling layer implements.

Why these live in the kernel: ``ReceiveContext`` is the kernel's type (``Actor.receive``
takes it), and DESIGN.md gives it the scheduling calls. So the kernel declares the calls
and the snapshot values they return, and forwards each call to a :class:`ScheduleService`
installed by the layer above (``scheduling/``); it knows nothing of how schedules work.
A context passes its cell as the schedule's owner (the schedule-owner hook),
whose schedules are cancelled once it fully stops (the runtime's stop listeners).
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from .._deadlines import Seconds
from ..errors import ScheduleNotFoundError
from ..triggers import Delivery, Misfire, Overlap, TickOutcome, check_delivery
from ._schedule_info import ScheduleInfo, SchedulerMetrics

if TYPE_CHECKING:
    from ..cron import Calendar, DSTPolicy
    from ._cell import Cell
    from ._pid import PID

__all__ = ["ScheduleService", "SchedulingCalls"]


class ScheduleService(Protocol):
    """The scheduler as the kernel sees it (implemented by ``scheduling._scheduler``).

    Every call takes ``owner``: the cell whose context made the call, or ``None`` through
    the system, and the schedule policies (DESIGN.md "Schedule policies"; the defaults
    ``Overlap.ALLOW``, ``Misfire.ONCE`` and ``None`` mean today's behaviour). Its arguments
    are validated by the implementation.
    """

    def schedule(
        self,
        message: Any,
        pid: PID,
        interval: Any,
        *,
        reference: str | None,
        sender: Any,
        replace: bool,
        owner: Cell | None,
        overlap: Overlap,
        misfire: Misfire,
        jitter: Seconds | None,
        exclude: Calendar | None,
    ) -> str: ...

    def schedule_once(
        self,
        message: Any,
        pid: PID,
        delay: Any,
        *,
        reference: str | None,
        sender: Any,
        replace: bool,
        owner: Cell | None,
        overlap: Overlap,
        misfire: Misfire,
    ) -> str: ...

    def schedule_cron(
        self,
        message: Any,
        pid: PID,
        expression: str,
        *,
        reference: str | None,
        sender: Any,
        timezone: str | None,
        replace: bool,
        owner: Cell | None,
        overlap: Overlap,
        misfire: Misfire,
        jitter: Seconds | None,
        exclude: Calendar | None,
        dst: DSTPolicy | None,
        delivery: Delivery | str = Delivery.AT_MOST_ONCE,
    ) -> str: ...

    def cancel(self, reference: str) -> None: ...

    def pause(self, reference: str, note: str | None = None) -> None: ...

    def resume(self, reference: str) -> None: ...

    def list(self) -> list[ScheduleInfo]: ...

    def metrics(self) -> SchedulerMetrics: ...

    def history_of(self, reference: str) -> builtins.list[TickOutcome]: ...

    async def trigger(self, reference: str) -> None: ...

    async def backfill(
        self, reference: str, start: datetime, end: datetime, dry_run: bool
    ) -> builtins.list[datetime]: ...


class SchedulingCalls:
    """The scheduling calls, shared by ``ActorSystem`` and ``ReceiveContext``.

    Through a system a schedule belongs to the system only; through a context it is also
    owned by the actor (cancelled when that actor fully stops) and its default sender is
    that actor. Each host says which with two hooks.
    """

    __slots__ = ()

    def _live_scheduler(self) -> ScheduleService:
        """The scheduler; ActorSystemNotStartedError if the system is not running."""
        raise NotImplementedError

    def _schedule_owner(self) -> Cell | None:
        """The actor that owns schedules made here (None through the system)."""
        raise NotImplementedError

    async def schedule(
        self,
        message: Any,
        pid: PID,
        interval: Seconds,
        *,
        reference: str | None = None,
        sender: Any = None,
        replace: bool = False,
        overlap: Overlap = Overlap.ALLOW,
        misfire: Misfire = Misfire.ONCE,
        jitter: Seconds | None = None,
        exclude: Calendar | None = None,
    ) -> str:
        """Deliver ``message`` to ``pid`` every ``interval``, first one interval from now.

        Fixed rate without drift: tick *n* is due at ``start + n * interval``; after a
        stall the overdue ticks are coalesced into one delivery (``misfire`` chooses
        otherwise). Returns the reference.

        Policies (DESIGN.md "Schedule policies", ``docs/scheduling.md`` "Policies"):
        ``overlap`` (what to do with a tick while earlier ones of this schedule are still
        in flight), ``misfire`` (ticks overdue after a stall; ``grace``), ``jitter``
        (seconds or ``timedelta``, shorter than ``interval``: each tick is delivered up
        to that much after its instant, the same offset on every node), ``exclude`` (a
        :class:`~tocsin.Calendar` read in the system's zone: an excluded instant is not
        delivered).

        Raises:
            InvalidIntervalError: ``interval`` or ``jitter`` is not valid seconds.
            ValueError: a bad policy value (the message names the option), a calendar
                (``exclude``) that leaves no instant in the next ten years, or
                ``jitter >= interval``.
            ScheduleAlreadyExistsError, DeadActorError, ActorSystemNotStartedError.
        """
        return self._live_scheduler().schedule(
            message,
            pid,
            interval,
            reference=reference,
            sender=sender,
            replace=replace,
            owner=self._schedule_owner(),
            overlap=overlap,
            misfire=misfire,
            jitter=jitter,
            exclude=exclude,
        )

    async def schedule_once(
        self,
        message: Any,
        pid: PID,
        delay: Seconds,
        *,
        reference: str | None = None,
        sender: Any = None,
        replace: bool = False,
        overlap: Overlap = Overlap.ALLOW,
        misfire: Misfire = Misfire.ONCE,
    ) -> str:
        """Deliver ``message`` to ``pid`` once, ``delay`` from now. Returns the reference.

        ``overlap`` counts in a manual trigger of the same reference; ``misfire`` matters
        by its ``grace`` only (one instant cannot be coalesced or replayed): delivered
        later than ``grace`` after its instant, the tick is missed. A one-shot takes no
        ``jitter`` (choose the delay) and no ``exclude``.

        Raises:
            InvalidIntervalError, ValueError (a bad policy value), ScheduleAlreadyExistsError,
            DeadActorError, ActorSystemNotStartedError.
        """
        return self._live_scheduler().schedule_once(
            message,
            pid,
            delay,
            reference=reference,
            sender=sender,
            replace=replace,
            owner=self._schedule_owner(),
            overlap=overlap,
            misfire=misfire,
        )

    async def schedule_cron(
        self,
        message: Any,
        pid: PID,
        expression: str,
        *,
        reference: str | None = None,
        sender: Any = None,
        timezone: str | None = None,
        replace: bool = False,
        overlap: Overlap = Overlap.ALLOW,
        misfire: Misfire = Misfire.ONCE,
        jitter: Seconds | None = None,
        exclude: Calendar | None = None,
        dst: DSTPolicy | None = None,
        delivery: Delivery | str = Delivery.AT_MOST_ONCE,
    ) -> str:
        """Deliver ``message`` at each fire time of a Quartz cron ``expression``.

        Evaluated in ``timezone`` (IANA name), default the system's zone. A cron schedule
        whose last fire time has passed is removed after delivering it.

        Policies as for :meth:`schedule`, plus ``dst`` (a :class:`~tocsin.DSTPolicy`:
        what a wall time skipped or repeated by daylight saving gives). ``jitter`` is
        capped per tick at the gap to the next fire time (never an error); ``exclude``
        reads instants in the cron's zone.

        ``delivery`` matters in cluster mode only (docs/cluster.md): a
        :class:`~tocsin.Delivery` or its string. ``Delivery.AT_MOST_ONCE`` (default: a
        winner that dies before delivering loses that tick) or ``Delivery.AT_LEAST_ONCE``
        (the claim is held with a delivery lease until ``receive`` returns; a dead or
        frozen winner is replaced, and a duplicate carries the smaller
        ``ctx.tick.fence``). Without a cluster every tick is delivered once by this
        system: either value is accepted and changes nothing.

        Raises:
            InvalidCronExpressionError: malformed, or no fire time after now.
            InvalidTimezoneError: unknown zone.
            InvalidIntervalError: ``jitter`` is not valid seconds.
            ValueError: a bad policy value (the message names the option), a calendar
                that leaves no instant in the next ten years, or a
                ``delivery`` that is not one of the two modes.
        """
        delivery = check_delivery(delivery)
        return self._live_scheduler().schedule_cron(
            message,
            pid,
            expression,
            reference=reference,
            sender=sender,
            timezone=timezone,
            replace=replace,
            owner=self._schedule_owner(),
            overlap=overlap,
            misfire=misfire,
            jitter=jitter,
            exclude=exclude,
            dst=dst,
            delivery=delivery,
        )

    async def cancel_schedule(self, reference: str, *, missing_ok: bool = False) -> None:
        """Cancel a schedule; once this returns, none of its ticks reaches ``receive``.

        Args:
            reference: the schedule's reference.
            missing_ok: make an unknown reference a no-op (as Akka's ``cancel`` is)
                instead of an error: for "cancel it if it is still there".

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference`` (and not ``missing_ok``).
            TypeError: ``reference`` is not a str.
        """
        scheduler = self._live_scheduler()
        try:
            scheduler.cancel(reference)
        except ScheduleNotFoundError:
            if not missing_ok:
                raise

    async def pause_schedule(self, reference: str, *, note: str | None = None) -> None:
        """Stop firing until resumed (pausing a paused schedule is a no-op: its note
        stays the first one).

        ``note`` says why, for whoever looks later: ``ScheduleInfo.note`` shows it,
        with ``paused_at`` and ``paused_by`` (this system's name), until resumed. The
        instants that come due meanwhile are recorded as ``paused`` in
        :meth:`schedule_history` when it is resumed.

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference``.
            TypeError: ``note`` is not a str or None.
            ValueError: ``note`` is longer than 4,096 bytes (UTF-8).
        """
        self._live_scheduler().pause(reference, note)

    async def resume_schedule(self, reference: str) -> None:
        """Fire again: a one-shot keeps the delay it had left, a repeating schedule fires
        one full interval from now, a cron schedule at its next time after now."""
        self._live_scheduler().resume(reference)

    def list_schedules(self) -> list[ScheduleInfo]:
        """A snapshot of every live schedule."""
        return self._live_scheduler().list()

    def scheduler_metrics(self) -> SchedulerMetrics:
        """Scheduler counters and fire lateness."""
        return self._live_scheduler().metrics()

    # -- operating schedules (issue 23) --------------------------------------------------

    def schedule_history(self, reference: str) -> list[TickOutcome]:
        """What became of the recent instants of ``reference``, oldest first: one
        :class:`~tocsin.TickOutcome` each (``delivered``, ``skipped_overlap``,
        ``coalesced``, ``missed``, ``excluded``, ``paused``, ``dead_letter``, ...), at
        most the system's ``history`` (default 64) of them. Synchronous: a snapshot.

        Raises:
            ScheduleNotFoundError: no live schedule holds ``reference``.
        """
        return self._live_scheduler().history_of(reference)

    async def trigger_schedule(self, reference: str) -> None:
        """Deliver one tick of ``reference`` now, through its ``overlap`` policy: the
        handler sees ``ctx.tick.manual == True`` and ``ctx.tick.instant`` = now. The
        schedule's own next fire time is unchanged. In cluster mode a cron schedule's
        manual tick is claimed cluster-wide under a key of its own: delivered once, by
        this node. A paused schedule (``pause_schedule`` or ``pause_cron``) is
        triggered all the same: "run it now" is explicit.

        Recorded in :meth:`schedule_history` as ``delivered`` with detail ``"manual"``
        (or ``skipped_overlap``).

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference``.
        """
        await self._live_scheduler().trigger(reference)

    async def backfill_schedule(
        self, reference: str, start: datetime, end: datetime, *, dry_run: bool = False
    ) -> list[datetime]:
        """Deliver the instants ``reference`` would have fired in ``[start, end)``.

        Interval and cron schedules (a live one-shot has no past instant: ``[]``). Only
        instants up to now are taken (the schedule delivers its future ones itself), and
        not those its ``exclude`` calendar holds. They are delivered oldest first, each
        through the ``overlap`` policy, at most ``misfire.rate`` per second when its
        policy is ``Misfire.all(rate=...)``; the handler sees ``ctx.tick.backfill ==
        True`` and the instant's own ``ctx.tick.instant``. The call returns the instants
        (aware UTC) once every one has been handed over; ``dry_run=True`` only lists
        them. Cancelling the schedule meanwhile stops the rest.

        In cluster mode each cron instant is claimed with the regular tick's key, so one
        that any node delivered, and whose claim is still kept (``claim_retention``), is
        not delivered again (it is recorded as ``claimed_elsewhere``); the call then
        returns once every claim has been started.

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference``.
            TypeError: ``start`` or ``end`` is not a datetime.
            ValueError: a naive datetime, ``start`` after ``end``, or more than 100,000
                instants in the range (split it).
        """
        return await self._live_scheduler().backfill(reference, start, end, dry_run)
