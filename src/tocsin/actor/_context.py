# SPDX-License-Identifier: Apache-2.0
"""ReceiveContext: what an actor sees while it handles a message."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, final

from .._deadlines import Seconds, to_seconds
from ._pid import PID, NoSender, target_of
from ._runtime import check_mailbox_bound
from ._scheduling import ScheduleService, SchedulingCalls

if TYPE_CHECKING:
    from ..clock import Clock
    from ..triggers import Tick
    from ._actor import Actor
    from ._cell import Cell
    from ._events import EventStream
    from ._schedule_info import ScheduleInfo
    from ._supervision import Directive, Supervisor

__all__ = ["ReceiveContext", "SystemView"]


# What an actor reaches through ``ctx.system``: SystemView, a Protocol the facade
# (tocsin.ActorSystem) meets. The facade is a layer above the kernel, which never imports
# upward: the kernel declares the shape it hands out, and ``system.py`` checks statically
# that ActorSystem has it. It lives here, beside the context that hands it out, so it adds
# no module to the kernel's import graph.
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


@final
class ReceiveContext(SchedulingCalls):
    """The actor's view of the current message and of its system.

    One context object lives as long as the actor; ``message`` and ``sender`` change with
    each message. Do not keep it past the handler for the message fields. Do not
    construct it: the runtime makes one per actor.

    Inside a durable task run (``on_task``, or a task method reading ``ctx``),
    ``message`` is the task (a :class:`~tocsin.TaskRecord`), ``sender`` is ``NoSender``
    and ``respond`` has no ask to answer.
    """

    # ``message`` and ``sender`` are written by the cell's turn loop, two stores per
    # message (a method call there cost ~400 instructions, 2% of a tick); the ask and
    # the runtime item of the current turn are the cell's (``turn_reply``,
    # ``turn_item``), read here by ``respond`` and ``tick``.
    __slots__ = ("_cell", "message", "sender")

    def __init__(self, cell: Cell) -> None:
        self._cell = cell
        self.message: Any = None
        self.sender: Any = NoSender

    def clear(self) -> None:
        """No message, no sender: between turns, and before runtime work in a turn."""
        self.message = None
        self.sender = NoSender

    @property
    def tick(self) -> Tick | None:
        """The scheduled delivery being handled (:class:`~tocsin.Tick`: reference, nominal
        instant, attempt, manual, backfill, fence), or ``None`` for any other message.

        Made when read, not per tick: a handler that never looks pays nothing.
        """
        item = self._cell.turn_item
        return None if item is None else item.tick()

    @property
    def self(self) -> PID:
        """This actor's PID."""
        return self._cell.pid

    @property
    def system(self) -> SystemView:
        """The :class:`~tocsin.ActorSystem` this actor runs in, typed by the
        :class:`~tocsin.actor.SystemView` Protocol it meets (the facade is a layer above
        the kernel that defines this class, and the kernel never imports upward).
        """
        facade: SystemView = self._cell.runtime.facade
        return facade

    @property
    def parent(self) -> PID | None:
        """The parent's PID, or ``None`` for a top-level actor."""
        parent = self._cell.parent
        return parent.pid if parent is not None else None

    @property
    def children(self) -> list[PID]:
        """PIDs of the live children, in spawn order."""
        return [child.pid for child in self._cell.children.values()]

    def respond(self, value: Any) -> None:
        """Answer the current message: completes an ``ask``, or tells the sender.

        With no one to answer (``NoSender``: a ``tell`` from outside an actor, a task
        run), the reply is dropped silently (DESIGN "Precisions"): nobody asked for it,
        so it is not a lost message (issue 20: every ``tell(Call(...))`` to a durable
        actor used to add a ``not_found`` dead letter).
        """
        reply = self._cell.turn_reply
        if reply is not None:
            if not reply.done():
                reply.set_result(value)
            return
        sender = self.sender
        if isinstance(sender, PID):
            sender.tell(value, self._cell.pid)

    def respond_error(self, error: BaseException) -> bool:
        """Fail the current ``ask`` with ``error`` without failing this actor.

        For a caller's mistake (a ``Call`` naming no method): the asker gets the error,
        and the actor is left alone, where raising from ``receive`` would count as the
        actor's own failure and reach its supervisor (a restart, by default).

        Returns:
            ``True`` if an ask was failed; ``False`` when nobody asks (a ``tell``): the
            caller decides what to do with its mistake then (log it).
        """
        reply = self._cell.turn_reply
        if reply is None or reply.done():
            return False
        reply.set_exception(error)
        return True

    def tell(self, pid: PID, message: Any) -> None:
        """Send ``message`` to ``pid`` with this actor as the sender."""
        pid.tell(message, self._cell.pid)

    async def spawn(
        self,
        factory: Callable[[], Actor],
        name: str | None = None,
        *,
        supervisor: Supervisor | Directive | None = None,
        passivate_after: Seconds | None = None,
        mailbox_bound: int | None = None,
    ) -> PID:
        """Spawn a child of this actor (stopped before this actor stops). The options
        are those of ``ActorSystem.spawn``.

        Raises:
            ActorStartError: its first ``pre_start`` failed and its supervisor did not
                bring it up.
        """
        idle = None if passivate_after is None else to_seconds(passivate_after, "passivate_after")
        return await self._cell.runtime.spawn(
            factory,
            name,
            parent=self._cell,
            supervisor=supervisor,
            passivate_after=idle,
            mailbox_bound=check_mailbox_bound(mailbox_bound),
        )

    def stop(self, pid: PID) -> None:
        """Ask ``pid`` to stop (this actor included) without waiting for it.

        The stop happens after the current message; remaining mailbox messages become
        dead letters.
        """
        target_of(pid).request_stop()

    # -- scheduling: the calls of SchedulingCalls, owned by this actor -----------------

    def _live_scheduler(self) -> ScheduleService:
        runtime = self._cell.runtime
        # The measured loop check (see Runtime.loop_thread): ~40 ns against ~180 ns.
        if not runtime.running or not runtime.on_loop_thread():
            runtime.check("schedule")  # raises the right error
        schedules = runtime.schedules
        assert schedules is not None  # installed by start() before any actor exists
        return schedules

    def _schedule_owner(self) -> Cell:
        return self._cell
