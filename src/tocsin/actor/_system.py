# SPDX-License-Identifier: Apache-2.0
"""ActorSystem: start/stop, spawn, lookup, supervision entry points, and the scheduling API.

Prior art: Pekko's ``ActorSystem`` and Proto.Actor's ``actor_system`` (the system owns the
services every actor shares: here the clock, the deadline heap, the scheduler and the
event stream).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, final

from .._deadlines import DeadlineService, WallWatch, to_seconds
from ..clock import Clock, SystemClock
from ..errors import (
    ActorNameTakenError,
    ActorNotFoundError,
    ActorSystemNotStartedError,
    DeadActorError,
)
from ..scheduling._api import SchedulingCalls
from ..scheduling._cron import local_zone_name, zone
from ..scheduling._scheduler import Scheduler, ScheduleRecord
from ._actor import Actor
from ._cell import Cell, CellState, fail_reply
from ._events import ActorPassivated, DeadLetter, DeadLetterReason, EventStream
from ._pid import PID, NoSender
from ._supervision import DEFAULT_SUPERVISOR, Directive, Supervisor

if TYPE_CHECKING:
    from ..durable._actor import DurableActor
    from ..durable._runtime import DurableRuntime
    from ..stores import Store

__all__ = ["ActorSystem"]

from .._deadlines import Seconds


@final
class ActorSystem(SchedulingCalls):
    """A set of actors sharing one clock, one deadline heap, one scheduler and one event stream.

    Use ``async with ActorSystem() as system:`` or ``await system.start()`` /
    ``await system.stop()`` (both idempotent). Any call that needs a running system raises
    :class:`~tocsin.ActorSystemNotStartedError` before start and after stop.

    Args:
        name: the system's name; PIDs print as ``name/user/...``.
        clock: the time source (default :class:`~tocsin.SystemClock`; tests pass a
            :class:`~tocsin.ManualClock`).
        store: where durable actors keep tasks and state: a store URL
            (``"sqlite:///app.db"``, ``"postgresql://..."``, ``"memory://"``) or a store
            object. Default: an in-process memory store.
        timezone: IANA zone in which cron expressions are evaluated by default (default:
            this machine's zone).
    """

    def __init__(
        self,
        name: str = "tocsin",
        *,
        clock: Clock | None = None,
        store: str | Store | None = None,
        timezone: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"`name` must be a non-empty str without '/', got {name!r}")
        if clock is not None and not isinstance(clock, Clock):
            raise TypeError(f"`clock` must be a tocsin.Clock, got {clock!r}")
        self.name = name
        self.address = name
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.timezone = timezone if timezone is not None else local_zone_name()
        zone(self.timezone)  # fail here, not at the first cron schedule
        self.events = EventStream()
        self.events._track = self._track_task
        self._store_spec = store
        self._running = False
        self._top: dict[str, Cell] = {}
        self._registry: dict[str, Cell] = {}
        self._uids = itertools.count(1)
        self._names = itertools.count(1)
        self._busy = 0
        self._progress = 0
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._tracker = _Tracker(self)
        self._no_sender = NoSender
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._deadlines: DeadlineService = None  # type: ignore[assignment]
        self._scheduler: Scheduler = None  # type: ignore[assignment]
        self._durable: DurableRuntime | None = None

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the system is started and not stopped."""
        return self._running

    async def start(self) -> None:
        """Start the system (no-op when running)."""
        if self._running:
            return
        self._loop = asyncio.get_running_loop()
        self._deadlines = DeadlineService(self.clock)
        self._scheduler = Scheduler(self)
        if not self.clock.reports_wall_jumps:
            WallWatch(self.clock, self._deadlines).start()
        self.clock._attach(self._tracker)
        self._running = True
        if self._store_spec is not None:
            from ..durable._runtime import DurableRuntime

            self._durable = DurableRuntime(self, self._store_spec)
            await self._durable.start()

    async def stop(self) -> None:
        """Stop every actor (children first), cancel every schedule, answer every ask.

        No-op when not running. Returns once every actor is fully stopped.
        """
        if not self._running:
            return
        if self._durable is not None:
            await self._durable.before_stop()
        await asyncio.gather(*(cell.stop() for cell in list(self._top.values())))
        self._scheduler.close()
        self._deadlines.close()
        self._running = False
        if self._durable is not None:
            await self._durable.close()
            self._durable = None
        self.clock._detach(self._tracker)

    async def __aenter__(self) -> ActorSystem:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _live_scheduler(self) -> Scheduler:
        if not self._running:
            self._check_running()
        return self._scheduler

    def _schedule_owner(self) -> Cell | None:
        return None

    def _check_running(self) -> None:
        if not self._running:
            raise ActorSystemNotStartedError(
                f"actor system {self.name!r} is not running; call `await system.start()` "
                f"or use `async with ActorSystem(...)`"
            )

    # -- actors ------------------------------------------------------------------------

    async def spawn(
        self,
        factory: Callable[[], Actor],
        name: str | None = None,
        *,
        supervisor: Supervisor | Directive | None = None,
        passivate_after: Seconds | None = None,
    ) -> PID:
        """Spawn a top-level actor and return its PID once its first ``pre_start`` ran.

        Args:
            factory: an :class:`Actor` subclass or a zero-argument callable returning a
                fresh instance; a restart calls it again.
            name: unique among its siblings; generated (``$1``, ``$2``, ...) when omitted.
            supervisor: what to do when it fails (default: restart, at most 10 times a
                minute). A bare :class:`Directive` means ``Supervisor(directive)``.
            passivate_after: stop the actor once it has been idle this long (seconds or
                timedelta); every delivery counts as activity.

        Raises:
            ActorNameTakenError: a live actor already has this path.
            ActorSystemNotStartedError: the system is not running.
        """
        return await self._spawn(
            factory, name, parent=None, supervisor=supervisor, passivate_after=passivate_after
        )

    async def _spawn(
        self,
        factory: Callable[[], Actor],
        name: str | None,
        *,
        parent: Cell | None,
        supervisor: Supervisor | Directive | None,
        passivate_after: Seconds | None,
    ) -> PID:
        self._check_running()
        if not callable(factory):
            raise TypeError(f"`factory` must be an Actor subclass or a callable, got {factory!r}")
        if name is None:
            name = f"${next(self._names)}"
        elif not isinstance(name, str) or not name or "/" in name or name.startswith("$"):
            raise ValueError(
                f"`name` must be a non-empty str without '/' and not starting with '$', "
                f"got {name!r}"
            )
        if supervisor is None:
            supervisor = DEFAULT_SUPERVISOR
        elif isinstance(supervisor, Directive):
            supervisor = Supervisor(supervisor)
        elif not isinstance(supervisor, Supervisor):
            raise TypeError(f"`supervisor` must be a Supervisor or a Directive, got {supervisor!r}")
        idle = None if passivate_after is None else to_seconds(passivate_after, "passivate_after")
        if parent is not None:
            if parent.state >= CellState.STOPPING:
                raise DeadActorError(f"cannot spawn a child of {parent.pid}: it is stopping")
            siblings, path = parent.children, f"{parent.pid.path}/{name}"
        else:
            siblings, path = self._top, f"/user/{name}"
        if name in siblings:
            raise ActorNameTakenError(f"an actor named {name!r} already exists at {path}")
        cell = Cell(self, path, factory, parent, supervisor, idle)
        siblings[name] = cell
        self._registry[path] = cell
        await cell.first_start()
        return cell.pid

    async def stop_actor(self, pid: PID) -> None:
        """Stop ``pid`` (children first, then ``post_stop``); return once fully stopped.

        Stopping an already stopped actor is a no-op. Called by the actor on itself from
        ``receive``, it returns at once and the stop completes after the current message.
        """
        self._check_running()
        await pid._target.stop()

    def _request_stop(self, pid: PID) -> None:
        pid._target.request_stop()

    async def actor_of(self, name_or_path: str) -> PID:
        """The PID of a live actor by top-level name (``"ping"``) or path (``"/user/a/b"``).

        Raises:
            ActorNotFoundError: no live actor there.
        """
        self._check_running()
        path = name_or_path if name_or_path.startswith("/") else f"/user/{name_or_path}"
        cell = self._registry.get(path)
        if cell is None or cell.state >= CellState.STOPPING:
            raise ActorNotFoundError(f"no live actor at {path!r}")
        return cell.pid

    async def reinstate(self, pid: PID) -> None:
        """Let a suspended actor take messages again (no-op if it is not suspended)."""
        self._check_running()
        pid._target.reinstate()

    async def durable(
        self,
        kind: type[DurableActor],
        identity: str,
        *,
        passivate_after: Seconds | None = None,
    ) -> PID:
        """The PID of durable actor ``identity`` of class ``kind``, activating it if needed.

        The PID is stable across activations: messages to a passivated identity activate
        it again. Returns once the activation's ``pre_start`` has run.

        Args:
            kind: a :class:`~tocsin.DurableActor` subclass.
            identity: any non-empty str naming the instance (``"order-42"``).
            passivate_after: idle seconds before passivation (default: the class's
                ``passivate_after``, else never).
        """
        from ..durable._actor import DurableActor as _DurableActor

        self._check_running()
        if not (isinstance(kind, type) and issubclass(kind, _DurableActor)):
            raise TypeError(f"`kind` must be a DurableActor subclass, got {kind!r}")
        if not isinstance(identity, str) or not identity:
            raise ValueError(f"`identity` must be a non-empty str, got {identity!r}")
        if passivate_after is not None:
            idle: float | None = to_seconds(passivate_after, "passivate_after")
        else:
            idle = kind.passivate_after
        runtime = await self._durable_runtime()
        handle = runtime.handle(kind, identity, idle)
        if handle.cell is None:
            handle.activate()
        if handle.starting is not None:
            await asyncio.shield(handle.starting)
        return handle.pid

    async def _durable_runtime(self) -> DurableRuntime:
        if self._durable is None:
            from ..durable._runtime import DurableRuntime as _DurableRuntime

            self._durable = _DurableRuntime(self, None)
            await self._durable.start()
        runtime: DurableRuntime = self._durable
        return runtime

    @property
    def dead_letters(self) -> int:
        """How many dead letters were published."""
        return self.events.count(DeadLetter)

    # -- internals used by cells -------------------------------------------------------

    def _next_uid(self) -> int:
        return next(self._uids)

    def _busy_done(self) -> None:
        self._busy -= 1
        if self._busy == 0 and self._idle_waiters:
            waiters, self._idle_waiters = self._idle_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _track_task(self, task: asyncio.Task[Any]) -> None:
        self._busy += 1
        task.add_done_callback(lambda _: self._busy_done())

    def _undeliverable(
        self,
        message: Any,
        sender: Any,
        target: PID | None,
        reason: DeadLetterReason,
        reply: asyncio.Future[Any] | None,
    ) -> None:
        if type(message) is ScheduleRecord:
            if self._scheduler is None or not self._scheduler.tick_undeliverable(message):
                return  # a stale tick: cancelled, not lost
            message = message.message
        if reply is not None:
            fail_reply(reply, target, reason)
        self._dead_letter(DeadLetter(message, sender, target, reason))

    def _dead_letter(self, letter: DeadLetter) -> None:
        self.events.publish(letter)

    def _cell_stopped(self, cell: Cell) -> None:
        name = cell.pid.name
        siblings = cell.parent.children if cell.parent is not None else self._top
        if siblings.get(name) is cell:
            del siblings[name]
        if self._registry.get(cell.pid.path) is cell:
            del self._registry[cell.pid.path]
        if self._scheduler is not None:
            self._scheduler.owner_stopped(cell)
        if self._durable is not None:
            self._durable.cell_stopped(cell)

    def _passivate(self, cell: Cell) -> None:
        self.events.publish(ActorPassivated(cell.pid))
        cell.request_stop()


@final
class _Tracker:
    """Lets a ManualClock see whether this system is busy (see ``ManualClock.settle``)."""

    __slots__ = ("_system",)

    def __init__(self, system: ActorSystem) -> None:
        self._system = system

    def is_idle(self) -> bool:
        return self._system._busy == 0

    @property
    def progress(self) -> int:
        return self._system._progress

    async def wait_idle(self) -> None:
        system = self._system
        if system._busy == 0:
            return
        waiter = system._loop.create_future()
        system._idle_waiters.append(waiter)
        await waiter
