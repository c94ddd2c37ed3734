# SPDX-License-Identifier: Apache-2.0
"""Runtime: the shared services of one started system, handed to whatever needs them.

``ActorSystem.start()`` makes one :class:`Runtime` (loop, deadlines, clock, events,
activity counter, actor registry) and passes it down: cells, contexts, PIDs, the
scheduler and the durable runtime all hold it. Nothing reaches into the facade's private
attributes. A stopped system's runtime is left behind (``running`` False), so a PID kept
from an earlier start fails cleanly instead of reaching the new one.

The layers above plug in through hooks, none of which names them. Each is an
``add_x(fn) -> remove`` pair (DESIGN.md "Layers"): ``add_x`` registers, the returned
function unregisters (calling it twice is a no-op), and what is registered is readable as
a tuple (a mapping for services), never written from outside:

* ``schedules``: the :class:`~tocsin.actor._scheduling.ScheduleService` behind the
  scheduling calls (set by the facade to the scheduler).
* :meth:`Runtime.add_stop_listener`: called with each cell once it has fully stopped
  (the scheduler cancels what the cell owned; the durable runtime forgets the activation).
* :meth:`Runtime.add_resolver`: :class:`~tocsin.actor._target.TargetResolver` callables
  that find the target of a PID whose address is another node (the remote layer).
* :meth:`Runtime.add_path_resolver`: ``path -> PID | None`` for local paths no cell holds
  (the durable runtime's identities).
* :meth:`Runtime.add_service`: upper services by name, for read-only operator tools
  (issue 14).

It also tells a :class:`~tocsin.ManualClock` whether the system is busy (``is_idle``,
``progress``, ``wait_idle``), since that is what ``clock.advance`` waits for.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from threading import get_ident as _ident
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, final

from .._codec import Extension
from .._deadlines import Deadline, DeadlineService
from ..clock import Clock
from ..errors import (
    ActorNameTakenError,
    ActorStartError,
    ActorSystemNotStartedError,
    DeadActorError,
    WrongEventLoopError,
)
from . import _lookup
from ._events import ActorPassivated, DeadLetter, DeadLetterReason, EventStream
from ._mailbox import ITEM_TYPES, STALE
from ._pid import PID
from ._reply import fail_reply
from ._supervision import DEFAULT_SUPERVISOR, Directive, Supervisor

if TYPE_CHECKING:
    from ._actor import Actor
    from ._cell import Cell
    from ._reply import Reply
    from ._scheduling import ScheduleService
    from ._target import TargetResolver

__all__ = ["Runtime", "check_mailbox_bound", "running_loop"]

_T = TypeVar("_T")


def check_mailbox_bound(value: object, what: str = "mailbox_bound") -> int | None:
    """A valid ``mailbox_bound``: None (the default: the system's, or unbounded for the
    system itself), 0 (unbounded, as ``asyncio.Queue(maxsize=0)``) or a number of
    messages >= 1. Returns it as given.

    Raises:
        TypeError: not an int or None (a bool is refused).
        ValueError: a negative int.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"`{what}` must be an int (messages; 0: unbounded) or None, got {value!r}")
    if value < 0:
        raise ValueError(f"`{what}` must be >= 0 (0: unbounded), got {value!r}")
    return value


def running_loop() -> asyncio.AbstractEventLoop | None:
    """This thread's running event loop, or None: :func:`asyncio.get_running_loop`
    without the raise (the exact loop check, for the paths where the fast
    ``loop_thread`` check missed)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@final
class Runtime:
    """The services one started system shares (internal; made by ``ActorSystem.start``)."""

    __slots__ = (
        "_services",
        "address",
        "busy",
        "clock",
        "deadlines",
        "events",
        "facade",
        "idle_waiters",
        "loop",
        "loop_thread",
        "mailbox_bound",
        "name",
        "names",
        "path_resolvers",
        "progress",
        "registry",
        "resolvers",
        "running",
        "schedules",
        "services",
        "stop_listeners",
        "stopping",
        "top",
    )

    def __init__(
        self,
        *,
        name: str,
        address: str,
        clock: Clock,
        events: EventStream,
        loop: asyncio.AbstractEventLoop,
        deadlines: DeadlineService,
        facade: Any,
        mailbox_bound: int | None = None,
    ) -> None:
        self.name = name
        #: The bound of every mailbox not given its own (``ActorSystem(mailbox_bound=)``;
        #: None: unbounded), durable activations included.
        self.mailbox_bound = mailbox_bound
        self.address = address
        self.clock = clock
        self.events = events
        self.loop = loop
        #: Something whose ``_thread_id`` is the ident of the thread running the loop
        #: (None while it is not running): the loop itself for asyncio's loops. Hot paths
        #: compare it with ``threading.get_ident()`` (~40 ns) before the exact check,
        #: because ``asyncio._get_running_loop()`` calls ``getpid()`` (~180 ns here).
        self.loop_thread: Any = loop if hasattr(loop, "_thread_id") else _ThreadProbe(loop)
        self.deadlines = deadlines
        #: The ActorSystem this runtime serves (what ``ctx.system`` returns).
        self.facade = facade
        self.top: dict[str, Cell] = {}
        self.registry: dict[str, Cell] = {}
        self.names = itertools.count(1)
        #: Units of work in flight (drains, starts, tracked tasks): the activity counter.
        self.busy = 0
        #: Messages handled so far (``ManualClock.settle`` watches it move).
        self.progress = 0
        self.idle_waiters: list[asyncio.Future[None]] = []
        self.running = True
        #: Set once ``stop()`` began: nothing new is spawned.
        self.stopping = False
        self.schedules: ScheduleService | None = None
        # The hooks (see the module docstring): tuples, replaced whole by add_x and its
        # remover, so a listener that unregisters while they are called is safe.
        #: Called with each cell once it has fully stopped (``add_stop_listener``).
        self.stop_listeners: tuple[Callable[[Cell], None], ...] = ()
        #: Finders of PIDs of other nodes (``add_resolver``).
        self.resolvers: tuple[TargetResolver, ...] = ()
        #: ``path -> PID | None`` for local paths no cell holds (``add_path_resolver``).
        self.path_resolvers: tuple[Callable[[str], PID | None], ...] = ()
        self._services: dict[str, object] = {}
        #: The ops hook (issue 14), read-only: services above the kernel by name (the
        #: durable runtime as ``"durable"``, ``add_service``), so that read-only operator
        #: tools (``tocsin.metrics``, ``tocsin.console``) find them through the runtime.
        #: The kernel never reads it.
        self.services = MappingProxyType(self._services)

    # -- checks ------------------------------------------------------------------------

    def on_loop_thread(self) -> bool:
        """Whether the caller runs on the thread that runs the system's loop: the fast
        check of the hot paths (~40 ns: asyncio's own ``loop._thread_id`` against
        ``threading.get_ident()``), made before the exact one
        (``asyncio._get_running_loop()`` calls ``getpid()``, ~180 ns here). False also
        while the loop is not running. The one read of the loop's private attribute."""
        thread: object = self.loop_thread._thread_id  # noqa: SLF001 (asyncio's loop)
        return thread == _ident()

    def check(self, what: str) -> None:
        """Raise unless the system runs and this is its event loop.

        Raises:
            ActorSystemNotStartedError: the system is not running.
            WrongEventLoopError: the caller runs on another loop (or on none).
        """
        if not self.running and not getattr(self.facade, "running", False):
            # (A runtime of an earlier start whose system runs again: a PID kept from
            # then is a stopped actor's, and its send fails as such, not as "not running".)
            raise ActorSystemNotStartedError(
                f"cannot {what}: actor system {self.name!r} is not running; call "
                f"`await system.start()` or use `async with ActorSystem(...)`"
            )
        loop = running_loop()
        if loop is not self.loop:
            raise self.wrong_loop(what, loop)

    def wrong_loop(self, what: str, loop: asyncio.AbstractEventLoop | None) -> WrongEventLoopError:
        here = "no running event loop (another thread?)" if loop is None else f"event loop {loop!r}"
        return WrongEventLoopError(
            f"cannot {what} from {here}: actor system {self.name!r} runs on event loop "
            f"{self.loop!r}; call it from that loop, or use pid.tell_threadsafe(...) / "
            f"loop.call_soon_threadsafe(...) from another thread"
        )

    def current_turn(self) -> Cell | None:
        """The cell whose turn the current task is running, if any."""
        # A scan, not a map kept on every wake: this runs once per stop(), waking an
        # actor runs a million times a second.
        task = asyncio.current_task()
        if task is None:
            return None
        for cell in self.registry.values():
            if cell.task is task:
                return cell
        return None

    # -- activity (what a ManualClock waits for) ---------------------------------------

    def busy_begin(self) -> None:
        """One more piece of activity (a drain task, a first start) until ``busy_done``."""
        self.busy += 1

    def busy_done(self, handled: int = 0) -> None:
        """One piece of activity over, having handled ``handled`` messages (``progress``:
        a drain reports its count here, once per turn)."""
        self.progress += handled
        self.busy -= 1
        if self.busy == 0 and self.idle_waiters:
            waiters, self.idle_waiters = self.idle_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def track_task(self, task: asyncio.Task[Any]) -> None:
        """Count ``task`` as activity until it is done."""
        self.busy += 1
        task.add_done_callback(lambda _: self.busy_done())

    def is_idle(self) -> bool:
        return self.busy == 0

    async def wait_idle(self) -> None:
        if self.busy == 0:
            return
        waiter = self.loop.create_future()
        self.idle_waiters.append(waiter)
        await waiter

    async def sleep(self, seconds: float) -> None:
        """Sleep on the system's clock (a ``ManualClock`` drives it)."""
        future: asyncio.Future[None] = self.loop.create_future()
        wake = _Wake(future)
        self.deadlines.add(self.clock.monotonic() + seconds, wake)
        try:
            await future
        finally:
            self.deadlines.remove(wake)

    # -- undeliverable -----------------------------------------------------------------

    def undeliverable(
        self,
        message: Any,
        sender: Any,
        target: PID | None,
        reason: DeadLetterReason,
        reply: Reply | None,
    ) -> None:
        """A message could not be delivered: fail its ask, publish a dead letter."""
        if type(message) in ITEM_TYPES:
            message = message.rejected()
            if message is STALE:
                return  # e.g. a cancelled schedule's tick: not lost, just withdrawn
        if reply is not None:
            fail_reply(reply, target, reason)
        self.events.publish(DeadLetter(message, sender, target, reason))

    def dead_letter(self, letter: DeadLetter) -> None:
        self.events.publish(letter)

    # -- actors ------------------------------------------------------------------------

    async def spawn(
        self,
        factory: Callable[[], Actor],
        name: str | None,
        *,
        parent: Cell | None,
        supervisor: Supervisor | Directive | None,
        passivate_after: float | None,
        mailbox_bound: int | None = None,
    ) -> PID:
        """Create a cell, run its first start, return its PID (see ``ActorSystem.spawn``).

        ``mailbox_bound``: None for the system's default, 0 for unbounded, else the bound
        (checked by :func:`check_mailbox_bound`)."""
        from ._cell import CellState, new_cell

        self.check("spawn")
        if self.stopping:
            raise ActorSystemNotStartedError(
                f"cannot spawn: actor system {self.name!r} is stopping"
            )
        if not callable(factory):
            raise TypeError(f"`factory` must be an Actor subclass or a callable, got {factory!r}")
        if name is None:
            name = f"${next(self.names)}"
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
        if parent is not None:
            if parent.state >= CellState.STOPPING:
                raise DeadActorError(f"cannot spawn a child of {parent.pid}: it is stopping")
            siblings, path = parent.children, f"{parent.pid.path}/{name}"
        else:
            siblings, path = self.top, f"/user/{name}"
        if name in siblings:
            raise ActorNameTakenError(f"an actor named {name!r} already exists at {path}")
        bound = self.mailbox_bound if mailbox_bound is None else mailbox_bound
        cell = new_cell(
            self, path, factory, parent, supervisor, passivate_after, mailbox_bound=bound
        )
        siblings[name] = cell
        self.registry[path] = cell
        error = await cell.first_start()
        if error is not None:
            raise ActorStartError(
                f"actor {path} did not start: its pre_start raised {error!r} and its "
                f"supervisor did not bring it up"
            ) from error
        return cell.pid

    def cell_stopped(self, cell: Cell) -> None:
        """A cell has fully stopped: forget it, tell the listeners."""
        name = cell.pid.name
        siblings = cell.parent.children if cell.parent is not None else self.top
        if siblings.get(name) is cell:
            del siblings[name]
        if self.registry.get(cell.pid.path) is cell:
            del self.registry[cell.pid.path]
        for listener in self.stop_listeners:
            listener(cell)

    def passivate(self, cell: Cell) -> None:
        self.events.publish(ActorPassivated(cell.pid))
        cell.request_stop()

    # -- lookup (``_lookup.py``) --------------------------------------------------------

    def add_resolver(self, resolver: TargetResolver) -> Callable[[], None]:
        """Register a resolver for PIDs of other nodes; returns its unregister function."""
        self.resolvers = (*self.resolvers, resolver)

        def remove() -> None:
            self.resolvers = _without(self.resolvers, resolver)

        return remove

    def add_path_resolver(self, resolver: Callable[[str], PID | None]) -> Callable[[], None]:
        """Register ``resolver(path) -> PID | None`` for local paths no cell holds (asked
        in registration order after the registry); returns its unregister function."""
        self.path_resolvers = (*self.path_resolvers, resolver)

        def remove() -> None:
            self.path_resolvers = _without(self.path_resolvers, resolver)

        return remove

    def add_stop_listener(self, listener: Callable[[Cell], None]) -> Callable[[], None]:
        """Call ``listener(cell)`` each time a cell has fully stopped (after it left the
        registry, before ``ActorStopped`` is published); returns its unregister function."""
        self.stop_listeners = (*self.stop_listeners, listener)

        def remove() -> None:
            self.stop_listeners = _without(self.stop_listeners, listener)

        return remove

    def add_service(self, name: str, service: object) -> Callable[[], None]:
        """Register ``service`` as :attr:`services` ``[name]``; returns its unregister
        function (which removes it only while it is still the one registered).

        Raises:
            ValueError: another service holds ``name``.
        """
        held = self._services.get(name)
        if held is not None and held is not service:
            raise ValueError(f"a service named {name!r} is already registered: {held!r}")
        self._services[name] = service

        def remove() -> None:
            if self._services.get(name) is service:
                del self._services[name]

        return remove

    def pid_of(self, text: str) -> PID:
        """A PID from a name, a path or a PID string (see ``_lookup.pid_of``)."""
        return _lookup.pid_of(self, text)

    def pid_from_wire(self, text: str) -> PID:
        """A PID read from the codec; never raises for a gone actor (``_lookup``)."""
        return _lookup.pid_from_wire(self, text)

    def codec_extension(self) -> Extension:
        """The codec extension for PIDs of this runtime: a PID as its wire string."""
        return _lookup.pid_extension(self)


def _without(hooks: tuple[_T, ...], hook: _T) -> tuple[_T, ...]:
    """``hooks`` without the first ``hook`` (unchanged when it is not there)."""
    for i, held in enumerate(hooks):
        if held is hook:
            return hooks[:i] + hooks[i + 1 :]
    return hooks


@final
class _ThreadProbe:
    """``loop_thread`` for a loop without ``_thread_id`` (the exact, slower check)."""

    __slots__ = ("loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    @property
    def _thread_id(self) -> int | None:
        return threading.get_ident() if running_loop() is self.loop else None


@final
class _Wake(Deadline):
    """Wakes :meth:`Runtime.sleep`."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future[None]) -> None:
        super().__init__()
        self.future = future

    def fire(self, now: float, deadline: float) -> None:
        if not self.future.done():
            self.future.set_result(None)
