# SPDX-License-Identifier: Apache-2.0
"""The scheduling calls of :class:`~tocsin.ActorSystem` (a mixin: the one hook by which the
actor runtime reaches the scheduler).

The same calls on :class:`~tocsin.ReceiveContext` make the schedule owned by the actor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._info import ScheduleInfo, SchedulerMetrics

if TYPE_CHECKING:
    from ..actor._cell import Cell
    from ..actor._pid import PID
    from ._scheduler import Scheduler

__all__ = ["SchedulingCalls"]

from .._deadlines import Seconds


class SchedulingCalls:
    """The scheduling calls, shared by ``ActorSystem`` and ``ReceiveContext``.

    Through a system a schedule belongs to the system only; through a context it is also
    owned by the actor (cancelled when that actor fully stops) and its default sender is
    that actor. Each host says which with two hooks.
    """

    __slots__ = ()

    _live_scheduler: Callable[[], Scheduler]
    """The scheduler, or ActorSystemNotStartedError if the system is not running."""
    _schedule_owner: Callable[[], Cell | None]
    """The actor that owns schedules made here (None through the system)."""

    async def schedule(
        self,
        message: Any,
        pid: PID,
        interval: Seconds,
        *,
        reference: str | None = None,
        sender: Any = None,
        replace: bool = False,
    ) -> str:
        """Deliver ``message`` to ``pid`` every ``interval``, first one interval from now.

        Fixed rate without drift: tick *n* is due at ``start + n * interval``; after a
        stall the overdue ticks are coalesced into one delivery. Returns the reference.

        Raises:
            InvalidIntervalError, ScheduleAlreadyExistsError, DeadActorError,
            ActorSystemNotStartedError.
        """
        return self._live_scheduler().schedule(
            message,
            pid,
            interval,
            reference=reference,
            sender=sender,
            replace=replace,
            owner=self._schedule_owner(),
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
    ) -> str:
        """Deliver ``message`` to ``pid`` once, ``delay`` from now. Returns the reference."""
        return self._live_scheduler().schedule_once(
            message,
            pid,
            delay,
            reference=reference,
            sender=sender,
            replace=replace,
            owner=self._schedule_owner(),
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
    ) -> str:
        """Deliver ``message`` at each fire time of a Quartz cron ``expression``.

        Evaluated in ``timezone`` (IANA name), default the system's zone. A cron schedule
        whose last fire time has passed is removed after delivering it.

        Raises:
            InvalidCronExpressionError: malformed, or no fire time after now.
            InvalidTimezoneError: unknown zone.
        """
        return self._live_scheduler().schedule_cron(
            message,
            pid,
            expression,
            reference=reference,
            sender=sender,
            timezone=timezone,
            replace=replace,
            owner=self._schedule_owner(),
        )

    async def cancel_schedule(self, reference: str) -> None:
        """Cancel a schedule; once this returns, none of its ticks reaches ``receive``.

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference``.
        """
        self._live_scheduler().cancel(reference)

    async def pause_schedule(self, reference: str) -> None:
        """Stop firing until resumed (pausing a paused schedule is a no-op)."""
        self._live_scheduler().pause(reference)

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
