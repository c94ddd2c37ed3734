# SPDX-License-Identifier: Apache-2.0
"""ActorSystem: the facade that composes the layers (kernel, scheduling, durable).

``start()`` makes the one :class:`~tocsin.actor._runtime.Runtime` (loop, deadlines,
events, activity counter, registry), installs the scheduler as its schedule service and
stop listener, and opens the durable store, the cluster node and the optional services,
pushing each one's undo on one :class:`~contextlib.AsyncExitStack` as it goes. A start
that fails closes that stack; ``stop()`` is the grace (actors stop, their handlers get
``stop_timeout``) and then the same ``aclose()``, so both unwind the same way, in
reverse. Every other call forwards to the runtime or a service.

Prior art: Pekko's ``ActorSystem`` and Proto.Actor's ``actor_system`` (the system owns
the services every actor shares); APScheduler 4's composition root (services entered on
one ``AsyncExitStack``).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast, final

from ._deadlines import Deadline, DeadlineService, Seconds, WallWatch, to_seconds
from ._resource import AsyncResource
from .actor._spi import (
    PID,
    Actor,
    DeadLetter,
    Directive,
    EventStream,
    Runtime,
    ScheduleService,
    SchedulingCalls,
    Supervisor,
    check_mailbox_bound,
    local_address,
    target_of,
)
from .clock import Clock, OffsetClock, SystemClock
from .cluster import Cluster, ClusterNode, ClusterView, LeaseRegained, NodeJoined, NodeLeft
from .cluster._spi import (
    ClusterOwnership,
    Rebalancer,
    bind_store,
    in_process_pid,
    register_in_process,
    warn_if_clustered,
)
from .durable import DurableActor, DurableTasks
from .durable._spi import DurableRuntime
from .errors import (
    ActorNotFoundError,
    ActorSystemNotStartedError,
    AskTimeoutError,
    ClusterDisabledError,
    RemotingDisabledError,
    ScheduleNotFoundError,
)
from .jobs import Jobs, JobWatch, check_jobs_option, import_jobs, registered_jobs
from .remote import RemoteMetrics, Remoting
from .remote._spi import RemoteService
from .schedules import Schedule, Schedules
from .schedules._spi import SCHEDULES_SERVICE, Runner
from .scheduling._spi import DEFAULT_HISTORY, Scheduler, check_history, local_zone_name, zone
from .stores import resolve_store
from .stores._spi import redact

if TYPE_CHECKING:
    from .actor._spi import Cell, SystemView
    from .stores import Store

__all__ = ["DEFAULT_STOP_TIMEOUT", "SERVICES", "ActorSystem", "OptionalService"]

#: Seconds ``stop()`` waits for running handlers before cancelling them.
DEFAULT_STOP_TIMEOUT = 10.0

Closer = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class OptionalService:
    """A service of a layer above the facade that ``ActorSystem`` starts when its option
    is given (the console: ``console="127.0.0.1:8765"``).

    ``check(value, token)`` runs at construction (a bad option fails there);
    ``start(system, value, token)`` runs last in ``start()`` and returns the closer that
    ``stop()`` awaits first.
    """

    check: Callable[[Any, str | None], None]
    start: Callable[[ActorSystem, Any, str | None], Awaitable[Closer]]


#: Optional services by option name. The facade sits below the layers that implement
#: them and never imports them at load time: a built-in one is found by name in
#: ``_BUILT_IN_SERVICES`` (``"module:attribute"``, as an entry point) and registered here
#: the first time a system is given its option, so ``import tocsin`` loads neither
#: ``tocsin.metrics`` nor the console and has no side effect. One registered here first
#: (a test's, a distribution's) is used instead.
SERVICES: dict[str, OptionalService] = {}
_BUILT_IN_SERVICES = {"console": "tocsin.metrics._console:CONSOLE_SERVICE"}


def _optional_service(option: str) -> OptionalService:
    """The service of ``option``, registering the built-in one on first use."""
    service = SERVICES.get(option)
    if service is None:
        module, attribute = _BUILT_IN_SERVICES[option].split(":")
        found: OptionalService = getattr(importlib.import_module(module), attribute)
        service = SERVICES.setdefault(option, found)
    return service


_log = logging.getLogger("tocsin.actor")


@final
class ActorSystem(SchedulingCalls, AsyncResource):
    """A set of actors sharing one clock, one deadline heap, one scheduler and one event stream.

    Use ``async with ActorSystem() as system:`` or ``await system.start()`` /
    ``await system.stop()`` (both idempotent). Any call that needs a running system raises
    :class:`~tocsin.ActorSystemNotStartedError` before start and after stop. A system
    belongs to the event loop it started on: a call from another loop raises
    :class:`~tocsin.WrongEventLoopError`.

    Args:
        name: the system's name; its address is ``tocsin://<name>`` and PIDs print as
            ``tocsin://<name>/user/...``.
        clock: the time source (default :class:`~tocsin.SystemClock`; tests pass a
            :class:`~tocsin.ManualClock`).
        store: where durable actors keep tasks and state: a store URL
            (``"sqlite:///app.db"``, ``"postgresql://..."``, ``"memory://"``) or a store
            object. Default: an in-process memory store.
        timezone: IANA zone in which cron expressions are evaluated by default (default:
            this machine's zone), in cluster mode too: every node of a cluster must have
            the same one (a node whose zone differs from the live members' refuses to
            join with :class:`~tocsin.TimezoneMismatchError`).
        stop_timeout: default grace of :meth:`stop`, in seconds: handlers still running
            after it are cancelled.
        remoting: a :class:`~tocsin.Remoting` to reach and be reached by other
            processes and machines (``docs/remoting.md``). The node listens at
            ``start()``; :attr:`address` then becomes ``tocsin://<name>@<host>:<port>``.
        cluster: a :class:`~tocsin.Cluster`: this system joins a cluster at ``start()``
            (``docs/cluster.md``): cron schedules fire once per tick cluster-wide and
            :attr:`cluster` lists the members. Every coordinator but ``memory://`` needs
            ``remoting``.
        console: ``"host:port"`` to serve the live web console (with ``/metrics``) while
            the system runs: started last by :meth:`start`, closed first by :meth:`stop`.
            Needs the ``console`` extra. Port 0 picks a free port (``console_url``).
        console_token: asked of every console request (at least 16 characters).
            Default: a random token made at each start; ``console_url`` carries it.
        history: entries each schedule keeps of what became of its recent instants
            (:meth:`schedule_history`; an int from 1 to 65,536, default 64).
        mailbox_bound: the bound of every actor's mailbox, in messages, unless its
            ``spawn`` gives one (durable activations included): past it a ``tell`` is a
            dead letter with reason ``overflow``, ``await pid.send(...)`` waits for room
            and remote connections stop reading (``docs/actors.md`` "Backpressure").
            ``None`` or ``0``: unbounded (the default).
        schedules: :class:`~tocsin.Schedule` values upserted into the store at each
            :meth:`start` (missing ones added, changed ones updated, unchanged ones left
            alone, pauses kept, nothing removed): ``docs/schedules.md``. In a rolling
            deploy the last node to start wins.
        jobs: modules (or dotted module names) whose ``@job`` functions this system
            runs; imported at each :meth:`start` (``docs/jobs.md``).

    Raises:
        InvalidStoreURLError: a malformed ``store`` URL (here, not at :meth:`start`).
        ValueError: a bad ``console`` bind, a short token, a token without ``console``,
            a bad ``history``.
        ImportError: ``console`` given without the ``console`` extra (aiohttp).
    """

    def __init__(
        self,
        name: str = "tocsin",
        *,
        clock: Clock | None = None,
        store: str | Store | None = None,
        timezone: str | None = None,
        stop_timeout: Seconds = DEFAULT_STOP_TIMEOUT,
        remoting: Remoting | None = None,
        cluster: Cluster | None = None,
        console: str | None = None,
        console_token: str | None = None,
        history: int = DEFAULT_HISTORY,
        mailbox_bound: int | None = None,
        schedules: Iterable[Schedule] | None = None,
        jobs: Iterable[ModuleType | str] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name or any(c in name for c in "/@#: "):
            raise ValueError(
                f"`name` must be a non-empty str without '/', '@', '#', ':' or spaces, got {name!r}"
            )
        if clock is not None and not isinstance(clock, Clock):
            raise TypeError(f"`clock` must be a tocsin.Clock, got {clock!r}")
        if remoting is not None and not isinstance(remoting, Remoting):
            raise TypeError(f"`remoting` must be a tocsin.Remoting or None, got {remoting!r}")
        self.name = name
        #: This node's address: ``tocsin://<name>``; remoting sets a reachable one.
        self.address = local_address(name)
        given: Clock = clock if clock is not None else SystemClock()
        #: The clock this system reads. In cluster mode an OffsetClock over the given
        #: one, corrected at each lease renewal to the coordinator's clock: cron
        #: instants and durable due times are the cluster's (issue 20, item 5).
        self.clock: Clock = given
        self._cluster_config = _check_cluster(cluster, remoting)
        if self._cluster_config is not None:
            self.clock = OffsetClock(given)
        self.timezone = timezone if timezone is not None else local_zone_name()
        zone(self.timezone)  # fail here, not at the first cron schedule
        self.stop_timeout = to_seconds(stop_timeout, "stop_timeout")
        self.history = check_history(history)
        #: The bound of every mailbox not given one at ``spawn`` (None: unbounded).
        self.mailbox_bound = check_mailbox_bound(mailbox_bound) or None
        self.events = EventStream()
        # A store URL mistake is this call's error, not start()'s (issue 31, item 5): the
        # URL is read now (nothing connects), the same way on every tier and for the CLI.
        resolve_store(store)
        self._store_spec = store
        #: Modules whose ``@job`` functions this system runs, imported at each start.
        self._job_modules = check_jobs_option(jobs)
        self._jobs: Jobs | None = None
        self._runtime: Runtime | None = None
        self._durable: DurableRuntime | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._remoting = remoting
        self._remote: RemoteService | None = None
        self._cluster: ClusterNode | None = None
        self._ownership: ClusterOwnership | None = None
        self._rebalancer: Rebalancer | None = None
        #: Optional services to start: (service, option value, token), in start order.
        self._options: list[tuple[OptionalService, Any, str | None]] = []
        #: The undo of the current start, one entry per service, closed in reverse by a
        #: failed start or by stop(). ``_front`` holds the optional services' closers:
        #: entered last on ``_stack``, and closed by stop() before the grace.
        self._stack = AsyncExitStack()
        self._front = AsyncExitStack()
        if console is not None:
            service = _optional_service("console")
            service.check(console, console_token)
            self._options.append((service, console, console_token))
        elif console_token is not None:
            raise ValueError("`console_token` was given without `console`")
        self._declared: tuple[Schedule, ...] | None = None
        if schedules is not None:
            declared = tuple(schedules)
            for spec in declared:
                if not isinstance(spec, Schedule):
                    raise TypeError(f"`schedules` must hold tocsin.Schedule values, got {spec!r}")
            ids = [spec.id for spec in declared]
            twice = sorted({i for i in ids if ids.count(i) > 1})
            if twice:
                raise ValueError(f"`schedules` declares these ids twice: {', '.join(twice)}")
            self._declared = declared
        self._schedules: Schedules | None = None
        self._runner: Runner | None = None
        #: The console's address to open while it is served, carrying its token
        #: (``http://127.0.0.1:8765/?token=...``: a secret); None otherwise.
        self.console_url: str | None = None

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the system is started and not stopped."""
        return self._runtime is not None and self._runtime.running

    @property
    def runtime(self) -> Runtime | None:
        """The shared services of the current (or last) start; None before the first.

        Internal: for tocsin's own operator tools (``tocsin.metrics``, ``tocsin.console``),
        which read it and never change it. Not a stable API.
        """
        return self._runtime

    async def start(self) -> None:
        """Start the system (no-op when running).

        A start that raises (the store cannot be opened, say) leaves nothing running and
        nothing open, so it can simply be retried.

        Raises:
            WrongEventLoopError: the system is running on another event loop.
            AddressInUseError: ``remoting``'s listen address is held by a live listener.
            TimezoneMismatchError: cluster mode, and the live members of the cluster
                evaluate cron in another zone than this system's ``timezone``.
        """
        runtime = self._runtime
        if runtime is not None and runtime.running:
            runtime.check("start")
            return
        stack = AsyncExitStack()
        try:
            await self._compose(stack, asyncio.get_running_loop())
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack

    async def _compose(self, stack: AsyncExitStack, loop: asyncio.AbstractEventLoop) -> None:
        """Start every service, pushing each one's undo on ``stack`` as it goes.

        The pushes are ordered so that the unwind (last pushed, first undone) is the stop
        order: the optional services, the in-process registration, the runtime (its
        clock, schedules and deadlines), the durable store, the cluster node (leaving:
        this node's identities may move at once), and last remoting (replies of the
        actors that just stopped have been sent).
        """
        # First: the durable runtime's recovery poll must find the kinds of due runs.
        import_jobs(self._job_modules)
        remote = None
        if self._remoting is not None:
            # The node listens first: its address (the real port) is part of every PID.
            remote = RemoteService(self._remoting, self.name, self.clock)
            stack.push_async_callback(self._stop_remote, remote)
            self.address = await remote.start()
        # Reserved here, so undone after the runtime: the cluster node and the durable
        # store (which `durable()` may also open later, on a running system).
        stack.push_async_callback(self._leave_cluster)
        stack.push_async_callback(self._close_durable)
        deadlines = DeadlineService(self.clock)
        runtime = Runtime(
            name=self.name,
            address=self.address,
            clock=self.clock,
            events=self.events,
            loop=loop,
            deadlines=deadlines,
            facade=self,
            mailbox_bound=self.mailbox_bound,
        )
        scheduler = Scheduler(runtime, self.timezone, self.history)
        runtime.schedules = scheduler
        self._runtime = runtime
        stack.callback(_close_runtime, runtime, scheduler, deadlines)
        stack.callback(self.events.add_task_tracker(runtime.track_task))
        if not self.clock.reports_wall_jumps:
            # A cluster clock reports its own offset moves: the watch looks for steps of
            # the clock underneath (passed on by the OffsetClock), else it would report
            # each offset move a second time.
            clock = self.clock
            watched = clock.inner if isinstance(clock, OffsetClock) else clock
            WallWatch(watched, deadlines).start()
        self.clock.attach(runtime)
        stack.callback(self.clock.detach, runtime)
        if remote is not None:
            remote.attach(runtime)
            self._remote = remote
        node = None
        if self._cluster_config is not None:
            node = self._cluster = ClusterNode(
                self._cluster_config,
                name=self.name,
                address=self.address,
                clock=self.clock,
                publish=self._cluster_event,
                on_lease_lost=self._lease_lost,
                zone=self.timezone,  # every member must compute the same instants
            )
        if self._store_spec is not None:
            # Before joining: once peers list this node they send it messages for the
            # durable identities it should own; a store still opening would answer
            # them DeadActorError. Unjoined, it claims and runs nothing (no lease).
            durable = await self._start_durable(runtime, self._store_spec)
            if node is None:
                await warn_if_clustered(durable.store)
            else:  # one store, one cluster: refuse before joining (issue 19)
                await bind_store(durable.store, node.coordinator, record=False)
        if node is not None:
            # Joined before anything may claim: cron ticks are claimed from now on.
            await node.start()
            if self._durable is not None:  # recorded once joined (a typo never is)
                await bind_store(self._durable.store, node.coordinator, record=True)
            scheduler.cron_gate = node.cron_claims
            if remote is None:
                # memory:// without remoting: in-process peers reach this node here.
                stack.callback(register_in_process(self.address, self._local_path))
            if self._durable is not None:
                self._durable.poll_soon()  # its first poll, unjoined, ran nothing
        if self._declared is not None or self._store_spec is not None:
            # Stored schedules run on every node with a store of its own choosing (or
            # declared schedules): workers that declare none still fire what an operator
            # added. A system on the default memory store starts them at the first use
            # of `system.schedules`.
            schedules = await self._start_schedules(stack)
            if self._declared is not None:
                await schedules.apply(self._declared)
        # Last, so a page never shows a half-started system; a failed one (address in
        # use) fails the whole start.
        front = self._front = await stack.enter_async_context(AsyncExitStack())
        for service, value, token in self._options:
            front.push_async_callback(self._close_option, await service.start(self, value, token))

    async def _start_schedules(self, stack: AsyncExitStack | None = None) -> Schedules:
        """Start running stored schedules on this node (once per start)."""
        if self._schedules is not None:
            return self._schedules
        runtime = self._live("use stored schedules")
        durable = self._durable
        if durable is None:
            durable = await self._start_default_store(runtime, "stored schedules")
        store: Any = durable.store
        node = self._cluster
        runner = Runner(
            store=store,
            clock=self.clock,
            node=self.name,
            claims=node.cron_claims if node is not None else None,
            durable=durable,
            system=self,
            publish=self.events.publish,
            poll_interval=(node.config.poll_interval or 1.0) if node is not None else 1.0,
        )
        await runner.start()
        # Closed before the durable store and the cluster node (pushed after them).
        undo = stack if stack is not None else self._stack
        undo.push_async_callback(self._stop_schedules)
        undo.callback(runtime.add_service(SCHEDULES_SERVICE, runner))  # tocsin.metrics
        self._schedules = Schedules(store, self.clock, self.name, runner)
        self._runner = runner
        return self._schedules

    async def _stop_schedules(self) -> None:
        runner, self._runner = self._runner, None
        self._schedules = None
        if runner is not None:
            await runner.close()

    @property
    def schedules(self) -> Schedules:
        """Stored schedules (``docs/schedules.md``): ``add``, ``update``, ``remove``,
        ``get``, ``list``, ``pause``, ``resume``, ``trigger``, ``backfill``,
        ``history``, all coroutines answered from the store. This node runs them from
        its start when ``schedules=`` was given, else from the first verb called.

        Raises:
            ActorSystemNotStartedError: the system is not running.
        """
        self._live("use stored schedules")
        if self._schedules is not None:
            return self._schedules
        # Not started yet (the default memory store): a proxy with the same verbs that
        # starts them at its first call, typed as what it forwards to.
        return cast(Schedules, _LazySchedules(self))

    async def _start_default_store(self, runtime: Runtime, user: str) -> DurableRuntime:
        """The durable runtime on the default store, memory, said once per start (issue
        31, item 6): a 24 h reminder on ``ActorSystem()`` used to vanish at exit silently."""
        _log.warning(
            "system %r: %s uses the in-memory durable store (no `store=` given): its tasks "
            "and storage are lost when the process exits; pass store='sqlite:///app.db' "
            '(or postgresql://...) to keep them (docs/durable.md "Stores")',
            self.name,
            user,
        )
        return await self._start_durable(runtime, None)

    async def _start_durable(self, runtime: Runtime, store: str | Store | None) -> DurableRuntime:
        """Open the durable runtime; in cluster mode behind the cluster's ownership gate
        (an identity activates only where the directory says, with its epoch)."""
        cluster = self._cluster
        # Cluster nodes share the store: single activation keeps an identity's tasks apart.
        durable = DurableRuntime(runtime, store, timezone=self.timezone, exclusive=cluster is None)
        if cluster is not None:

            def fenced(kind: str, identity: str) -> Awaitable[int]:
                return durable.store.fence_epoch(kind, identity)

            durable.gate = self._ownership = ClusterOwnership(cluster, self._pid_at, fenced)
            # Due work runs within poll_interval of the coordinator or store coming back.
            durable.retry_cap = min(durable.retry_cap, cluster.config.poll_interval or 1.0)
            self._rebalancer = Rebalancer(
                cluster, durable, fenced, self.clock, cluster.config.rebalance_rate
            )
        await durable.start()
        self._durable = durable
        if store is not None and (self._job_modules or registered_jobs()):
            # A worker of jobs: a run a web process enqueued starts within 10 ms on a
            # store that cannot push (SQLite), not within durable's 1 s look.
            JobWatch(durable).start()
        return durable

    def _pid_at(self, address: str, path: str) -> PID | None:
        """The PID at ``path`` of the node at ``address`` (remoting, else in-process)."""
        runtime = self._runtime
        if runtime is None:
            return None
        if self._remote is not None:
            return runtime.pid_from_wire(address + path)
        return in_process_pid(address, path, origin=self.address)

    def _local_path(self, path: str) -> PID | None:
        runtime = self._runtime
        if runtime is None or not runtime.running:
            return None
        try:
            return runtime.pid_of(path)
        except ActorNotFoundError:
            return None

    def _cluster_event(self, event: object) -> None:
        self.events.publish(event)
        if isinstance(event, NodeJoined) and self._rebalancer is not None:
            self._rebalancer.node_joined()  # identities it now prefers move to it
        if isinstance(event, (NodeLeft, LeaseRegained)) and self._durable is not None:
            # Its passivated identities with due tasks are free now (or this node may run
            # its own again): armed at once instead of at the next periodic poll.
            self._durable.poll_soon()

    def _lease_lost(self) -> None:
        """This node lost its cluster lease: its durable activations stop at once (their
        epochs may already be another node's; fencing refuses their writes anyway)."""
        if self._durable is not None:
            self._durable.lose_ownership()

    async def _stop_remote(self, remote: RemoteService) -> None:
        if self._remote is remote:
            self._remote = None
        await remote.stop()

    async def _leave_cluster(self) -> None:
        node, self._cluster = self._cluster, None
        if node is not None:
            await node.stop()

    async def _close_durable(self) -> None:
        durable, self._durable = self._durable, None
        if durable is not None:
            await durable.close()

    async def _close_option(self, close: Closer) -> None:
        try:
            await close()
        except Exception:
            _log.exception("closing an optional service of system %r failed", self.name)

    async def stop(self, timeout: Seconds | None = None) -> None:
        """Stop every actor (children first), cancel every schedule, answer every ask.

        No-op when not running. Returns once every actor is fully stopped. Handlers
        still running ``timeout`` seconds after the stop began (default: the system's
        ``stop_timeout``) are cancelled (logged at WARNING, naming the actor); their
        ``post_stop`` still runs. Durable task runs in flight are interrupted and run
        again on the next start (at least once). In cluster mode the ``at_most_once``
        cron ticks (and stored schedules' instants) this node won ahead of their time
        (``Cluster(claim_ahead=...)``) are delivered first, at that time: the stop waits
        at most ``claim_ahead`` for them, and not past ``timeout`` (a tick it cuts off is
        recorded ``dead_letter``), actors running as usual meanwhile; nothing new is
        claimed once the stop began.

        Called from inside an actor (``await ctx.system.stop()``), it begins the stop and
        returns at once: the stop completes when that handler returns, and any other
        caller of ``stop()`` waits for it to complete.

        Raises:
            WrongEventLoopError: called on another event loop than the system's.
            InvalidIntervalError: ``timeout`` is not a positive finite number of seconds.
        """
        runtime = self._runtime
        if runtime is None or not runtime.running:
            return
        runtime.check("stop the system")
        grace = self.stop_timeout if timeout is None else to_seconds(timeout, "timeout")
        stopping = self._stopping
        if stopping is None:
            # Begin synchronously, before any await: nothing new is claimed, and (but in
            # the wait below) nothing new is spawned or started. Cluster mode: cron ticks
            # this node won ahead of their delivery time are delivered first (their wait:
            # at most `claim_ahead`; `_stop`), to actors running as usual meanwhile (a
            # tick's handler may spawn), so the actors stop after them; else every actor
            # stops after the message it is handling.
            node = self._cluster
            drain = node is not None and node.cron_claims.begin_stop()
            if not drain:
                self._begin_stop(runtime)
            task = self._stop(runtime, grace, drain=drain)
            stopping = self._stopping = runtime.loop.create_task(task)
        if runtime.current_turn() is not None:
            return  # from inside an actor: waiting here would wait for ourselves
        await asyncio.shield(stopping)

    def _begin_stop(self, runtime: Runtime) -> None:
        """Every actor stops after the message it is handling; nothing new is spawned; no
        durable run starts. Once per stop (the grace running out first calls it too)."""
        if runtime.stopping:
            return
        runtime.stopping = True
        if self._durable is not None:
            self._durable.begin_stop()
        for cell in list(runtime.top.values()):
            cell.request_stop()

    async def _drain(self, runtime: Runtime, end: float) -> None:
        """Deliver the cron ticks (and stored schedules' instants) this node won ahead of
        their delivery time, at that time, before anything stops: the other nodes
        recorded ``claimed_elsewhere`` for them, so an ``at_most_once`` tick would be
        lost. The wait is at most the lead (``claim_ahead``), and ends with the grace
        (``end``): what it cuts off is recorded (``CronClaims.drain``). The decisions of
        the stored schedules' instants just delivered (a store write each) get at most
        as long again: a slow or unreachable store does not hold the stop to its grace."""
        node = self._cluster
        if node is None:
            return
        claims = node.cron_claims
        bound = min(end, runtime.clock.monotonic() + 2 * claims.ahead)
        await claims.drain(end)
        runner = self._runner
        if runner is not None:
            await runner.settle(bound)

    async def _stop(self, runtime: Runtime, grace: float, *, drain: bool = False) -> None:
        """The grace, then the start's own unwind (``_compose`` gives its order)."""
        timer = _Grace(runtime, partial(self._begin_stop, runtime))
        end = runtime.clock.monotonic() + grace
        runtime.deadlines.add(end, timer)
        try:
            if drain:
                try:
                    await self._drain(runtime, end)
                finally:
                    if runtime.clock.monotonic() >= end:
                        timer.run_out()  # due now: its order (cancel, then stop)
                    else:
                        self._begin_stop(runtime)
            durable = self._durable
            await self._front.aclose()  # first: no page reads a stopping system
            if durable is not None:
                await durable.before_stop()
            await asyncio.gather(*(cell.stop() for cell in list(runtime.top.values())))
        finally:
            runtime.deadlines.remove(timer)
            self._stopping = None
            stack, self._stack = self._stack, AsyncExitStack()
            await stack.aclose()

    # `async with ActorSystem(...) as system:` starts it and stops it (AsyncResource).
    async def _enter(self) -> None:
        await self.start()

    async def _exit(self) -> None:
        await self.stop()

    def _live(self, what: str) -> Runtime:
        runtime = self._runtime
        if runtime is None:
            raise ActorSystemNotStartedError(
                f"cannot {what}: actor system {self.name!r} is not running; call "
                f"`await system.start()` or use `async with ActorSystem(...)`"
            )
        runtime.check(what)
        return runtime

    def _live_scheduler(self) -> ScheduleService:
        # Inlined checks: this runs on every schedule and cancel (~3 µs each); the loop
        # check is the measured one (Runtime.loop_thread): ~40 ns against ~180 ns.
        runtime = self._runtime
        if runtime is None or not runtime.running or not runtime.on_loop_thread():
            runtime = self._live("schedule")  # raises the right error
        schedules = runtime.schedules
        assert schedules is not None
        return schedules

    def _schedule_owner(self) -> Cell | None:
        return None

    async def cancel_schedule(self, reference: str, *, missing_ok: bool = False) -> None:
        """Cancel a schedule; once this returns, none of its ticks reaches ``receive``.

        Args:
            reference: the schedule's reference.
            missing_ok: make an unknown reference a no-op (as Akka's ``cancel`` is)
                instead of an error: for "cancel it if it is still there".

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference`` (and not ``missing_ok``).
            TypeError: ``reference`` is not a str.
            ActorSystemNotStartedError, WrongEventLoopError: the system is not running, or
                this is another event loop.
        """
        # SchedulingCalls.cancel_schedule with its `_live_scheduler` inlined (cancel is as
        # hot as create in timeout-style use: bench/footprint.py `cancel`); the thread
        # check is the runtime's fast one, `_live` makes the exact one.
        runtime = self._runtime
        if runtime is None or not runtime.running or not runtime.on_loop_thread():
            runtime = self._live("schedule")  # raises the right error
        schedules = runtime.schedules
        assert schedules is not None
        try:
            schedules.cancel(reference)
        except ScheduleNotFoundError:
            if not missing_ok:
                raise

    # -- actors ------------------------------------------------------------------------

    async def spawn(
        self,
        factory: Callable[[], Actor],
        name: str | None = None,
        *,
        supervisor: Supervisor | Directive | None = None,
        passivate_after: Seconds | None = None,
        mailbox_bound: int | None = None,
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
            mailbox_bound: the most messages its mailbox holds (``docs/actors.md``
                "Backpressure"): past it a ``tell`` is a dead letter with reason
                ``overflow`` and ``await pid.send(...)`` waits for room. ``None``: the
                system's ``mailbox_bound``; ``0``: unbounded.

        Raises:
            ActorNameTakenError: a live actor already has this path.
            ActorStartError: the first ``pre_start`` failed and the supervisor did not
                bring the actor up (``__cause__``: the ``pre_start`` exception). The
                actor is fully stopped and the name is free.
            ActorSystemNotStartedError: the system is not running.
        """
        runtime = self._live("spawn")
        idle = None if passivate_after is None else to_seconds(passivate_after, "passivate_after")
        return await runtime.spawn(
            factory,
            name,
            parent=None,
            supervisor=supervisor,
            passivate_after=idle,
            mailbox_bound=check_mailbox_bound(mailbox_bound),
        )

    async def stop_actor(self, pid: PID) -> None:
        """Stop ``pid`` (children first, then ``post_stop``); return once fully stopped.

        Stopping an already stopped actor is a no-op. Called by the actor on itself from
        ``receive``, it returns at once and the stop completes after the current message.
        """
        self._live("stop an actor")
        await target_of(pid).stop()

    async def actor_of(self, name_or_path: str) -> PID:
        """The PID of a live actor by name (``"ping"``), path (``"/user/a/b"``) or PID
        string (``str(pid)``, ``"tocsin://shop/user/a"``).

        A PID string of another node (with remoting) asks that node, which answers with
        its live actor at that path.

        Raises:
            ActorNotFoundError: no live actor there (on whichever node hosts the path).
            NodeUnreachableError: the string names another node that cannot be reached.
            RemotingDisabledError: the string names another node and remoting is off.
        """
        runtime = self._live("look up an actor")
        remote = self._remote
        if (
            remote is not None
            and isinstance(name_or_path, str)
            and name_or_path.startswith("tocsin:")
            and not name_or_path.startswith(runtime.address + "/")
        ):
            return await remote.actor_of(name_or_path)
        return runtime.pid_of(name_or_path)

    @property
    def cluster(self) -> ClusterView:
        """This node's side of the cluster, the user's view of it: ``members()``,
        ``pause_cron(reference, note=None)``, ``resume_cron(reference)``, ``offset``,
        ``metrics()`` (``docs/cluster.md``).

        Raises:
            ActorSystemNotStartedError: the system is not running.
            ClusterDisabledError: the system was made without ``cluster=`` (a
                ``RuntimeError`` too).
        """
        if self._cluster_config is None:
            raise ClusterDisabledError(
                f"actor system {self.name!r} was made without `cluster=`: it is not part of "
                "a cluster; pass cluster=Cluster(coordinator=...) to join one"
            )
        node = self._cluster
        if node is None:
            raise ActorSystemNotStartedError(
                f"actor system {self.name!r} is not running: it joins its cluster at "
                "`await system.start()`"
            )
        return ClusterView(node)

    def remote_metrics(self) -> RemoteMetrics:
        """A snapshot of this node's remoting counters (frames, bytes, reconnects, ...).

        Raises:
            RemotingDisabledError: the system has no ``remoting``.
            ActorSystemNotStartedError: the system is not running.
        """
        if self._remoting is None:
            raise RemotingDisabledError(
                f"actor system {self.name!r} was made without `remoting=`: no remote counters"
            )
        self._live("read remote metrics")
        assert self._remote is not None
        return self._remote.metrics()

    async def reinstate(self, pid: PID) -> None:
        """Let a suspended actor take messages again (no-op if it is not suspended)."""
        self._live("reinstate an actor")
        target_of(pid).reinstate()

    async def durable(
        self,
        kind: type[DurableActor],
        identity: str,
        *,
        passivate_after: Seconds | None = None,
        timeout: Seconds | None = None,
    ) -> PID:
        """The PID of durable actor ``identity`` of class ``kind``, activating it if needed.

        The PID is stable across activations: messages to a passivated identity activate
        it again. Returns once the activation's ``pre_start`` has run.

        In cluster mode (``cluster=``) the identity has one activation in the whole
        cluster: the directory says where, and a free identity is placed on the
        coordinator's view of the live nodes. The PID returned is always this node's
        PID of the identity: while another node owns it (or was chosen for it) this call
        returns without activating anything here and each message is forwarded to the
        owner found in the directory at that moment, so the PID keeps working across a
        failover or a move; otherwise it activates here with this node's ownership epoch,
        which fences every write (``docs/cluster.md``).

        Args:
            kind: a :class:`~tocsin.DurableActor` subclass.
            identity: any non-empty str naming the instance (``"order-42"``).
            passivate_after: idle seconds before passivation (default: the class's
                ``passivate_after``, else never).
            timeout: seconds this call may take, placement and activation included
                (default: none of its own; each coordinator and store call it makes is
                bounded by the driver's 10 s). During a coordinator or store freeze a
                caller with a 2 s budget gets its answer in 2 s, not after 10 s: give the
                same budget here and to the ask (``docs/cluster.md`` "Outages").

        Raises:
            AskTimeoutError: not resolved within ``timeout`` (also a ``TimeoutError``);
                an activation already started goes on and serves later calls.
            CoordinatorUnavailableError: cluster mode, and the coordinator failed or did
                not answer within its bound (nothing was decided; call again).
            NotOwnerError: cluster mode, and this node holds no lease right now.
            StoreError: the durable store failed.
        """
        runtime = self._live("activate a durable actor")
        if not (isinstance(kind, type) and issubclass(kind, DurableActor)):
            raise TypeError(f"`kind` must be a DurableActor subclass, got {kind!r}")
        if not isinstance(identity, str) or not identity:
            raise ValueError(f"`identity` must be a non-empty str, got {identity!r}")
        if passivate_after is not None:
            idle: float | None = to_seconds(passivate_after, "passivate_after")
        else:
            idle = kind.passivate_after
        if timeout is None:
            return await self._resolve_durable(runtime, kind, identity, idle)
        budget = to_seconds(timeout, "timeout")
        return await _bounded(
            runtime,
            self._resolve_durable(runtime, kind, identity, idle),
            budget,
            f"system.durable({kind.__qualname__}, {identity!r}) was not resolved within "
            f"{budget:g} s (the coordinator or the store did not answer in time)",
        )

    async def _resolve_durable(
        self, runtime: Runtime, kind: type[DurableActor], identity: str, idle: float | None
    ) -> PID:
        durable = self._durable
        if durable is None:
            durable = await self._start_default_store(runtime, f"durable actor {kind.kind!r}")
        ownership = self._ownership
        if ownership is not None:
            # Cluster mode: place a free identity on the coordinator's view (the entry may
            # name another node). The PID returned is this node's: each activation claims
            # through the directory and forwards to the owner wherever it is, so it keeps
            # working across a failover, a rebalance or a lost claim race.
            await ownership.place(kind.kind, identity)
        return await durable.pid_of(kind, identity, idle)

    def durable_tasks(self, kind: type[DurableActor], identity: str) -> DurableTasks:
        """The tasks of durable actor ``identity`` of class ``kind``, for an operator:
        list, pause, resume, trigger, backfill, history, cancel, and retry or discard
        parked ones, with the verbs ``DurableActor`` has (``pause_schedule``, ...).

        Every call is answered from the store: none waits behind the identity's running
        task, and none activates it (a run made due is run by the identity's alarm).

        Raises:
            ActorSystemNotStartedError: the system is not running.
            TypeError: ``kind`` is not a DurableActor subclass.
            ValueError: ``identity`` is not a non-empty str.
        """
        self._live("operate durable tasks")
        if not (isinstance(kind, type) and issubclass(kind, DurableActor)):
            raise TypeError(f"`kind` must be a DurableActor subclass, got {kind!r}")
        if not isinstance(identity, str) or not identity:
            raise ValueError(f"`identity` must be a non-empty str, got {identity!r}")
        return DurableTasks(self._durable_runtime, kind.kind, identity)

    async def _durable_runtime(self) -> DurableRuntime:
        runtime = self._live("operate durable tasks")
        durable = self._durable
        if durable is None:
            durable = await self._start_durable(runtime, None)
        return durable

    @property
    def jobs(self) -> Jobs:
        """Enqueue and steer runs of ``@job`` functions (``system.jobs.enqueue(f, ...)``).

        Runs are durable tasks in this system's store: a worker that imported the job
        (this system, or any process on the same store) runs each at least once.
        """
        jobs = self._jobs
        if jobs is None:
            jobs = self._jobs = Jobs(_SystemJobs(self._job_store, self._job_written, self.clock))
        return jobs

    async def _job_store(self) -> Store:
        runtime = self._live("enqueue a job")
        durable = self._durable
        if durable is None:
            durable = await self._start_default_store(runtime, "jobs")
        return durable.store

    def _job_written(self, kind: str, identity: str, due: float) -> None:
        durable = self._durable
        if durable is not None:
            durable.wake(kind, identity, due)

    @property
    def dead_letters(self) -> int:
        """How many dead letters were published."""
        return self.events.count(DeadLetter)


async def _bounded(
    runtime: Runtime, work: Coroutine[Any, Any, PID], budget: float, message: str
) -> PID:
    """``await work``, or :class:`AskTimeoutError` once ``budget`` seconds of the system's
    clock have passed (a deadline in its heap, as an ask's timeout); the work is then
    cancelled (an activation it started goes on: it is shielded there)."""
    task = runtime.loop.create_task(work)
    expired: asyncio.Future[None] = runtime.loop.create_future()
    timer = _Expiry(expired)
    runtime.deadlines.add(runtime.clock.monotonic() + budget, timer)
    try:
        either: set[asyncio.Future[Any]] = {task, expired}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        raise AskTimeoutError(message)
    finally:
        runtime.deadlines.remove(timer)
        if not task.done():
            task.cancel()
            # Awaited (its cancellation runs its cleanup) without letting its outcome,
            # or a CancelledError of its own, replace the one raised here.
            await asyncio.wait({task})
        elif not task.cancelled():
            task.exception()  # retrieved: a late failure is not "never retrieved"


@final
class _Expiry(Deadline):
    """Completes a future when a deadline passes (``system.durable(timeout=...)``)."""

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future[None]) -> None:
        super().__init__()
        self._future = future

    def fire(self, now: float, deadline: float) -> None:
        if not self._future.done():
            self._future.set_result(None)


@final
class _LazySchedules:
    """``system.schedules``: each verb starts this node's schedules first if needed."""

    __slots__ = ("_system",)

    def __init__(self, system: ActorSystem) -> None:
        self._system = system

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(Schedules, name):
            raise AttributeError(name)
        system = self._system

        async def call(*args: Any, **kwargs: Any) -> Any:
            schedules = await system._start_schedules()  # noqa: SLF001 - the facade's own
            return await getattr(schedules, name)(*args, **kwargs)

        call.__name__ = name
        call.__doc__ = getattr(Schedules, name).__doc__
        return call


class _SystemJobs:
    """``system.jobs`` writes to this system's durable store and wakes its runtime."""

    __slots__ = ("_clock", "_store", "_written")

    def __init__(
        self,
        store: Callable[[], Awaitable[Store]],
        written: Callable[[str, str, float], None],
        clock: Clock,
    ) -> None:
        self._store = store
        self._written = written
        self._clock = clock

    async def store(self) -> Store:
        return await self._store()

    def wall(self) -> float:
        return self._clock.wall()

    async def written(self, kind: str, identity: str, due: float) -> None:
        self._written(kind, identity, due)


def _close_runtime(runtime: Runtime, scheduler: Scheduler, deadlines: DeadlineService) -> None:
    """The runtime's undo: every schedule cancelled, no deadline armed, PIDs of this
    start refused from now on."""
    scheduler.close()
    deadlines.close()
    runtime.running = False


@final
class _Grace(Deadline):
    """The stop's grace period: when it runs out, running handlers are cancelled, then
    every actor is asked to stop (a no-op when the stop already asked them).

    In that order: a handler cancelled once its actor is stopping is its last (the actor
    goes on to its stop, its next messages dead letters), and an idle actor asked to
    stop here starts its stop in a task this never cancels. Cancelling while an actor
    still ran (the stop waited for ticks won ahead) would let it go on with its next
    message, one no grace would cut short. Runs once, at its deadline or earlier from
    the stop itself (:meth:`run_out`)."""

    __slots__ = ("begin", "ran", "runtime")

    def __init__(self, runtime: Runtime, begin: Callable[[], None]) -> None:
        super().__init__()
        self.runtime = runtime
        self.begin = begin
        self.ran = False

    def fire(self, now: float, deadline: float) -> None:
        # Out of the deadline heap's firing: asking every actor to stop removes deadlines
        # from that heap (the durable poll, each identity's alarm: DurableRuntime.begin_stop).
        self.runtime.loop.call_soon(self.run_out)

    def run_out(self) -> None:
        if self.ran:
            return
        self.ran = True
        for cell in list(self.runtime.registry.values()):
            if cell.interrupt():
                _log.warning(
                    "actor %s was still handling a message when the stop's grace ran out; "
                    "cancelled it (post_stop still runs)",
                    cell.pid,
                )
        self.begin()


def _check_cluster(cluster: object, remoting: Remoting | None) -> Cluster | None:
    """``cluster=`` must be a Cluster; every coordinator but memory:// needs remoting."""
    if cluster is None:
        return None
    if not isinstance(cluster, Cluster):
        raise TypeError(f"`cluster` must be a tocsin.Cluster or None, got {cluster!r}")
    coordinator = cluster.coordinator
    url = coordinator if isinstance(coordinator, str) else getattr(coordinator, "url", "")
    if remoting is None and not str(url).lower().startswith("memory://"):
        raise ValueError(
            f"a cluster on {redact(str(url))!r} needs `remoting=`: nodes of other processes "
            "reach each other through it (only a memory:// coordinator joins the systems of one "
            "process without it)"
        )
    return cluster


if TYPE_CHECKING:

    def _meets_system_view(system: ActorSystem) -> SystemView:
        """Static check (mypy): the facade meets the Protocol ``ctx.system`` is typed by."""
        return system
