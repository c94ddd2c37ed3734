# SPDX-License-Identifier: Apache-2.0
"""What an actor reaches through ``ctx.system``: :class:`SystemView`, a Protocol the
facade (:class:`tocsin.ActorSystem`) meets.

The facade is a layer above the kernel, which never imports upward (DESIGN.md "Layers"):
so the kernel declares the shape it hands out, and ``system.py`` checks statically that
``ActorSystem`` has it. The verbs take what the facade's take (their parameters are the
facade's, documented there); the Protocol names them so a type checker and an editor
see ``ctx.system.spawn(...)``, ``ctx.system.schedule(...)``, ``ctx.system.durable(...)``
instead of ``Any``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..clock import Clock
    from ._events import EventStream
    from ._pid import PID
    from ._schedule_info import ScheduleInfo

__all__ = ["SystemView"]


class SystemView(Protocol):
    """The actor system as an actor sees it (``ctx.system``): a :class:`tocsin.ActorSystem`.

    Attributes:
        name: the system's name.
        address: its address (``tocsin://name@host:port`` with remoting).
        clock: the system's clock (``ManualClock`` in tests).
        events: the event stream (``events.subscribe(handler, *types)``).
    """

    name: str
    address: str
    clock: Clock
    events: EventStream

    @property
    def running(self) -> bool:
        """Whether the system is started and not stopped."""
        ...

    async def spawn(self, *args: Any, **kwargs: Any) -> PID:
        """Spawn a top-level actor (``ActorSystem.spawn``)."""
        ...

    async def stop_actor(self, pid: PID) -> None:
        """Stop an actor and return once it is fully stopped."""
        ...

    async def actor_of(self, name_or_path: str) -> PID:
        """Find an actor by name, path or full PID string."""
        ...

    async def reinstate(self, pid: PID) -> None:
        """Reopen a suspended actor's mailbox."""
        ...

    async def durable(self, *args: Any, **kwargs: Any) -> PID:
        """The PID of a durable identity (``ActorSystem.durable``)."""
        ...

    async def schedule(self, *args: Any, **kwargs: Any) -> str:
        """Deliver every interval (``ActorSystem.schedule``)."""
        ...

    async def schedule_once(self, *args: Any, **kwargs: Any) -> str:
        """Deliver once after a delay (``ActorSystem.schedule_once``)."""
        ...

    async def schedule_cron(self, *args: Any, **kwargs: Any) -> str:
        """Deliver at each cron fire time (``ActorSystem.schedule_cron``)."""
        ...

    async def cancel_schedule(self, reference: str, *, missing_ok: bool = False) -> None:
        """Cancel a schedule by reference."""
        ...

    async def pause_schedule(self, reference: str, *, note: str | None = None) -> None:
        """Pause a schedule, with an optional note."""
        ...

    async def resume_schedule(self, reference: str) -> None:
        """Resume a paused schedule."""
        ...

    async def trigger_schedule(self, reference: str) -> None:
        """One tick now, through the schedule's overlap policy."""
        ...

    async def backfill_schedule(self, *args: Any, **kwargs: Any) -> Any:
        """The instants of a past range, delivered (``ActorSystem.backfill_schedule``)."""
        ...

    def schedule_history(self, reference: str) -> Any:
        """What became of a schedule's recent instants."""
        ...

    def list_schedules(self) -> list[ScheduleInfo]:
        """Every live schedule, as snapshots."""
        ...

    def scheduler_metrics(self) -> Any:
        """Scheduler counters and fire lateness."""
        ...

    def remote_metrics(self) -> Any:
        """Remoting counters (``ActorSystem.remote_metrics``)."""
        ...

    @property
    def cluster(self) -> Any:
        """The cluster view (``ActorSystem.cluster``)."""
        ...

    @property
    def dead_letters(self) -> int:
        """Dead letters so far."""
        ...

    async def stop(self, timeout: Any = None) -> None:
        """Stop the system (from inside an actor: begins the stop and returns)."""
        ...
