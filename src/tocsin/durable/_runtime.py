# SPDX-License-Identifier: Apache-2.0
"""The durable runtime of one system: handles by identity, polling, recovery.

Delivery contract: **at least once** (see ``_drain.py``). Completions are committed in
batches of :data:`~tocsin.durable._drain.COMPLETION_BATCH`, so a crash may re-run up to
that many completed tasks of one drain.

Alarms: an active identity keeps one deadline (its earliest pending due time) in the
system heap. Identities not in memory (after a restart, or never touched) are found by a
poll of the store every :data:`LOOKAHEAD` / 2 seconds for tasks due within
:data:`LOOKAHEAD`; only those get an alarm, so memory holds the near future only. Alarms
that ring activate their actor under :data:`ACTIVATION_CONCURRENCY`, so a restart after
downtime with many overdue identities is not a stampede.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast, final

from .._deadlines import Deadline
from ..actor._spi import PID, Cell, Runtime
from ..clock import ManualClock
from ..cron._spi import local_zone_name
from ..stores import Op, Store, resolve_store
from ._checks import check_text
from ._drain import COMPLETION_BATCH, DRAIN_LIMIT, DrainHost
from ._handle import LOOKAHEAD, DurableHandle
from ._kinds import DurableClass
from ._kinds import registered_kind as _registered
from ._ops import DurableStatistics, RunCounters
from ._outage import RETRY_CAP, Outage, retry_delay
from ._ownership import OwnershipGate
from ._soon import DueSoon

__all__ = [
    "ACTIVATION_CONCURRENCY",
    "CHANGE_CHECK_SECONDS",
    "COMPLETION_BATCH",
    "DRAIN_LIMIT",
    "LOOKAHEAD",
    "SERVICE",
    "DurableRuntime",
    "durable_of",
]

#: Seconds between two looks for changes made by other processes (stores that cannot
#: push them: SQLite's ``PRAGMA data_version``, ~20 µs a look).
CHANGE_CHECK_SECONDS = 1.0
#: Activations running their first start at once (recovery after downtime).
ACTIVATION_CONCURRENCY = 64
#: Identities fetched per poll of the store. Those without a handle in memory wait in
#: :class:`~._soon.DueSoon` (about 250 bytes each) until their time comes.
POLL_LIMIT = 100_000

#: The name the durable runtime registers under in ``Runtime.services`` (issue 14).
SERVICE = "durable"

_log = logging.getLogger("tocsin.durable")


@final
class DurableRuntime:
    """Durable actors of one :class:`~tocsin.ActorSystem` (internal)."""

    def __init__(
        self,
        runtime: Runtime,
        store: str | Store | None,
        *,
        timezone: str | None = None,
        exclusive: bool = True,
    ) -> None:
        from ..stores import MemoryStore

        self.runtime = runtime
        #: The zone of cron tasks registered without one (the system's zone).
        self.timezone = timezone if timezone is not None else local_zone_name()
        #: Take ownership of the store (issue 10, item 6): two systems on one store would
        #: each run every task. Cluster nodes pass False: a durable identity has a single
        #: activation in the cluster, which keeps its tasks apart.
        self.exclusive = exclusive
        resolved = resolve_store(store) if store is not None else None
        self.store: Store = resolved if resolved is not None else MemoryStore()
        self.handles: dict[tuple[str, str], DurableHandle] = {}
        #: Cluster mode: where identities live (None: every identity is this node's).
        self.gate: OwnershipGate | None = None
        #: The handle of each live activation's cell.
        self.cells: dict[Cell, DurableHandle] = {}
        self.kinds: dict[str, DurableClass] = {}
        self.activation_slots = asyncio.Semaphore(ACTIVATION_CONCURRENCY)
        #: Identities with work due soon and no handle in memory (compact, not handles).
        self.soon = DueSoon(self)
        self._poll = _Poll(self)
        self._change_check = _ChangeCheck(self)
        self._unwatch: Callable[[], None] | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._unknown_kinds: set[str] = set()
        self._unsubscribe_wall: Callable[[], None] | None = None
        #: The removers of its runtime hooks (stop listener, path resolver, service).
        self._unhook: tuple[Callable[[], None], ...] = ()
        #: Set when the system starts stopping: no drain starts a task, no alarm rings,
        #: no identity is activated from then on.
        self.stopping = False
        #: Task run counters (issue 14): written by the drain, read by tocsin.metrics.
        self.counters = RunCounters()
        #: Long-running helpers of the cluster (rebalancing): cancelled at the stop.
        self._background: set[asyncio.Task[None]] = set()
        #: Outages heal by themselves (issue 20): the store and the coordinator as the
        #: alarms, polls and claims of this node see them (logged once per outage).
        self.store_outage = Outage("durable store calls", _log)
        self.coordinator_outage = Outage("cluster coordinator calls (durable ownership)", _log)
        #: The longest retry delay after a failed call (cluster mode: at most the
        #: cluster's ``poll_interval``).
        self.retry_cap = RETRY_CAP
        #: Failed polls in a row (the next retry's backoff).
        self._poll_failures = 0
        #: A poll was asked for while one was running: run another once it ends (the
        #: running one may predate what asked, e.g. a lease regained).
        self._poll_again = False
        #: The batch of activation starts that takes more (see :meth:`start_batched`).
        self._start_batch: _StartBatch | None = None
        #: Drain completions waiting for the next group commit (see :meth:`complete`).
        self._completions: list[tuple[list[Op], asyncio.Future[None]]] = []
        #: Group commits started so far: a batch of the output gate waiting for the next
        #: one is open to more changes of its identity (``._writes.Writes.gate_change``).
        self.flushes = 0

    async def start(self) -> None:
        """Open the store and arm the alarms of identities with work due soon.

        On failure nothing stays open or subscribed (``ActorSystem.start`` is retried).
        """
        await self.store.open(exclusive=self.exclusive)
        runtime = self.runtime
        try:
            # A task retried or discarded by `tocsin tasks` (another process) reaches the
            # next poll at once instead of up to LOOKAHEAD / 2 later (issue 15, part 4).
            self._unwatch = await self.store.watch(self._changed_outside)
            if not isinstance(runtime.clock, ManualClock) and not _pushes_changes(self.store):
                # Stores that cannot push (SQLite) are looked at once a second. Not on a
                # ManualClock: outside processes live in real time, and a test advancing
                # a day would fire 86,400 looks. Not on a store that calls its watchers
                # itself (memory): its look does nothing, and a simulated cluster of a
                # simulated day would pay a timer per node and second for it.
                self._change_check.start()
            # Alarms are wall times converted to monotonic deadlines when armed: a wall
            # step (NTP, set_wall) must convert them again, or a task made due by the step
            # would wait for its old monotonic deadline.
            self._unsubscribe_wall = runtime.clock.on_wall_jump(self._wall_jumped)
            self._unhook = (
                runtime.add_stop_listener(self.cell_stopped),
                runtime.add_path_resolver(self.pid_for_path),
                runtime.add_service(SERVICE, self),  # the ops hook: found by durable_of
            )
            await self.poll()  # recovery: every identity with work due soon gets its alarm
        except BaseException:
            await self._release()
            raise

    async def _release(self) -> None:
        runtime = self.runtime
        if self._unsubscribe_wall is not None:
            self._unsubscribe_wall()
            self._unsubscribe_wall = None
        unhook, self._unhook = self._unhook, ()
        for remove in unhook:
            remove()
        runtime.deadlines.remove(self._poll)
        self._stop_watching()
        await self.store.close()

    def _stop_watching(self) -> None:
        self.runtime.deadlines.remove(self._change_check)
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def begin_stop(self) -> None:
        """The synchronous start of the system's stop (called before anything awaits):
        from here on no drain starts another task (a drain paused between two tasks
        would otherwise start one after this point), no alarm rings and nothing is
        activated."""
        if self.stopping:
            return
        self.stopping = True
        if self._unsubscribe_wall is not None:
            self._unsubscribe_wall()
            self._unsubscribe_wall = None
        self.runtime.deadlines.remove(self._poll)
        self.soon.clear()
        self._stop_watching()
        for task in self._background:
            task.cancel()
        for handle in self.handles.values():
            handle.alarm.rearm(None)
            handle.request_stop()
            # A task run suspended in a turn would hold the stop up until its budget runs
            # out (15 minutes by default). Cut it short instead: it is not completed, so
            # at-least-once delivery runs it again on the next start.
            handle.current.interrupt()

    async def before_stop(self) -> None:
        """Stop every activation (after :meth:`begin_stop`)."""
        self.begin_stop()
        if self._poll_task is not None:
            await asyncio.wait({self._poll_task})
        if self._background:
            await asyncio.wait(set(self._background))
        await asyncio.gather(*(h.stop() for h in list(self.handles.values())))

    async def close(self) -> None:
        await self._release()

    # -- identities --------------------------------------------------------------------

    def handle(
        self, cls: DurableClass, identity: str, passivate_after: float | None
    ) -> DurableHandle:
        key = (cls.kind, identity)
        handle = self.handles.get(key)
        if handle is None:
            check_text(identity, "identity")  # once per identity: what every store holds
        if handle is None or handle.cls is not cls:
            if handle is not None and handle.cell is not None:
                raise ValueError(
                    f"durable kind {cls.kind!r} is already active with class "
                    f"{handle.cls.__qualname__}; give {cls.__qualname__} another `kind`"
                )
            handle = DurableHandle(self, cls, identity, passivate_after)
            self.handles[key] = handle
            self.kinds[cls.kind] = cls
        elif passivate_after is not None:
            handle.passivate_after = passivate_after
        return handle

    def pid_for_path(self, path: str) -> PID | None:
        """``/durable/<kind>/<identity>`` -> the identity's stable PID (activated by its
        first message), if a class of that kind is imported; else None."""
        prefix, _, rest = path.partition("/durable/")
        kind, _, identity = rest.partition("/")
        if prefix or not kind or not identity:
            return None
        handle = self.handles.get((kind, identity))
        if handle is not None:
            return handle.pid
        cls = self.kinds.get(kind) or _kind_class(kind)
        if cls is None:
            return None
        return self.handle(cls, identity, cls.passivate_after).pid

    async def pid_of(self, cls: DurableClass, identity: str, passivate_after: float | None) -> PID:
        """The identity's PID, once an activation (started here if needed) is up."""
        handle = self.handle(cls, identity, passivate_after)
        if handle.cell is None:
            handle.activate()
        while handle.starting is not None:  # a claim (cluster mode), then the start
            await asyncio.shield(handle.starting)
        return handle.pid

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Run a background helper of the cluster (rebalancing) until it ends or the
        system stops (then it is cancelled and awaited). Not counted as activity: a
        helper waiting for idle actors must not keep ``wait_idle`` from returning.
        ``None`` (the coroutine closed unstarted) once the system is stopping."""
        if self.stopping or not self.runtime.running:
            coroutine.close()
            return None
        task = self.runtime.loop.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_observed)
        return task

    def lose_ownership(self) -> None:
        """Cluster mode: this node lost its lease; every activation stops (its epoch may
        already be another node's) and every alarm is dropped (the poll re-arms those
        this node may run once it holds a lease again)."""
        for handle in list(self.handles.values()):
            handle.lose_ownership()
        self.soon.clear()
        # After a coordinator reset the node holds its lease again at once (same
        # incarnation): look for due identities now, not at the next periodic poll.
        self.poll_soon()

    def _changed_outside(self) -> None:
        if self.runtime.running and not self.stopping:
            self.start_poll()

    def _wall_jumped(self, seconds: float) -> None:
        if not self.runtime.running:
            return
        for handle in list(self.handles.values()):
            alarm = handle.alarm
            if alarm.due is not None:
                alarm.rearm(alarm.due)
        self.soon.rearm()
        self.start_poll()  # identities not in memory may now be due within the look-ahead

    def activated(self, cell: Cell, handle: DurableHandle) -> None:
        """``handle`` started an activation in ``cell`` (the stop listener finds it)."""
        self.cells[cell] = handle

    def cell_stopped(self, cell: Cell) -> None:
        """Stop listener: an activation has fully stopped."""
        handle = self.cells.pop(cell, None)
        if handle is not None:
            handle.cell_stopped(cell)

    def outage_of(self, exc: BaseException) -> Outage:
        """The outage a failed call belongs to (coordinator errors vs the store's)."""
        from ..errors import CoordinatorError

        return self.coordinator_outage if isinstance(exc, CoordinatorError) else self.store_outage

    # -- completions -------------------------------------------------------------------

    def complete(self, handle: DrainHost, ops: list[Op]) -> Awaitable[None]:
        """Commit a drain's completions: resolved once they are committed, or raising
        what the store raised (the drain's tasks then run again: at least once).

        Group commit across identities: the completions of every drain that
        ends in the same turn of the event loop go to the store as one ``apply`` (one
        transaction, one round trip) instead of one each. A group the store refuses is
        written again one drain at a time, so one bad batch fails its own drain only.
        Cluster mode commits each drain alone, behind its identity's fence
        (``handle.commit``)."""
        if self.gate is not None:
            return handle.commit(ops)
        return self.commit_soon(ops)

    def commit_soon(self, ops: list[Op]) -> asyncio.Future[None]:
        """``ops`` with the next group commit (outside cluster mode): resolved once they
        are committed, or with what the store raised. Drain completions and the task
        changes of the output gate (:mod:`._gate`) made in the same turn of the event
        loop share it."""
        done: asyncio.Future[None] = self.runtime.loop.create_future()
        if not self._completions:
            self.runtime.loop.call_soon(self._commit_completions)
        self._completions.append((ops, done))
        return done

    def _commit_completions(self) -> None:
        group, self._completions = self._completions, []
        self.flushes += 1
        # One task per part, started in order: the store sees the applies in that order
        # and, if it has a group commit of its own (PostgreSQL), merges those that wait
        # into one transaction instead of one round trip after another. An identity has
        # at most one entry in a group (a drain awaits each completion; a turn's gated
        # changes are one batch, settled before its next drain), so parts never reorder
        # one identity's writes.
        # No `_observed` callback on these tasks: `_commit_group` logs what escapes it.
        for part in _parts(group):
            self.runtime.track_task(self.runtime.loop.create_task(_commit_group(self.store, part)))

    # -- polling -----------------------------------------------------------------------

    async def poll(self) -> None:
        """Arm the alarms of identities with pending tasks due within the look-ahead.

        Raises what the store raised (the start's recovery poll fails the start); the
        background polls go through :meth:`_poll_guarded`, which never raises."""
        await self._poll_once()
        runtime = self.runtime
        if runtime.running:
            runtime.deadlines.add(runtime.clock.monotonic() + LOOKAHEAD / 2, self._poll)

    async def _poll_guarded(self) -> None:
        """A background poll: a failure (store or coordinator) re-arms the poll after a
        capped backoff instead of ending polling (issue 20, item 2); a success re-arms it
        for the next period. Never raises."""
        runtime = self.runtime
        try:
            while True:
                self._poll_again = False
                try:
                    await self._poll_once()
                except Exception as exc:
                    self._poll_failures += 1
                    self.outage_of(exc).failed(exc, "the look-ahead poll")
                    delay = retry_delay(self._poll_failures, self.retry_cap)
                else:
                    self._poll_failures = 0
                    delay = LOOKAHEAD / 2
                if not runtime.running or self.stopping:
                    return
                runtime.deadlines.add(runtime.clock.monotonic() + delay, self._poll)
                if not self._poll_again:
                    return
        except BaseException:
            if runtime.running and not self.stopping:  # never left without a next poll
                runtime.deadlines.add(runtime.clock.monotonic() + self.retry_cap, self._poll)
            raise

    async def _poll_once(self) -> None:
        runtime = self.runtime
        if not runtime.running:
            return
        horizon = runtime.clock.wall() + LOOKAHEAD
        gate = self.gate
        failed: BaseException | None = None
        rows = await self.store.due_actors(horizon, POLL_LIMIT)
        self.store_outage.ok()
        for due in rows:
            if gate is not None:
                try:
                    mine = await gate.may_run(due.kind, due.identity)
                except Exception as exc:
                    # The coordinator failed: ask about the rest at the poll's retry, not
                    # one bounded wait per identity now.
                    failed = exc
                    break
                if not mine:
                    continue  # another node owns it (or should claim it): its poll arms it
            handle = self.handles.get((due.kind, due.identity))
            if handle is not None:
                handle.alarm.arm(due.due)
                continue
            cls = self.kinds.get(due.kind) or _kind_class(due.kind)
            if cls is None:
                if due.kind not in self._unknown_kinds:
                    self._unknown_kinds.add(due.kind)
                    _log.warning(
                        "tasks of durable kind %r are due but no DurableActor subclass "
                        "with that kind is imported; they wait in the store",
                        due.kind,
                    )
                continue
            # No handle until its time comes (compact: DueSoon); the class's own kind
            # string, shared by every waiting identity of the kind.
            self.soon.arm((cls.kind, due.identity), due.due)
        if failed is not None:
            raise failed  # some identities were not asked about: the poll retries soon
        if gate is not None and rows:
            self.coordinator_outage.ok()

    def ring_due(self, ready: list[tuple[tuple[str, str], float]]) -> None:
        """Waiting identities whose time has come (:class:`DueSoon`, earliest first):
        each gets its handle now, and the handle's alarm for its due time. An identity
        given its handle here rings at once (its time has come): no deadline pushed and
        popped again, and the activations that follow start in batches
        (:meth:`start_batched`)."""
        if self.stopping or not self.runtime.running:
            return
        handles = self.handles
        wall = self.runtime.clock.wall()
        for key, due in ready:
            kind, identity = key
            handle = handles.get(key)
            if handle is None:
                cls = self.kinds.get(kind) or _kind_class(kind)
                if cls is None:
                    continue  # its class went away: the tasks wait in the store (the poll warned)
                handle = self.handle(cls, identity, getattr(cls, "passivate_after", None))
                if due <= wall:
                    handle.alarm.ring()
                    continue
            handle.alarm.arm(due)

    def start_batched(self, handle: DurableHandle, cell: Cell) -> asyncio.Task[None]:
        """Start ``handle``'s activation ``cell`` in a task shared with up to
        :data:`ACTIVATION_CONCURRENCY` others: the task is created with the batch's
        first activation and runs them in order from its first step, so the
        activations of one turn of the loop (the identities a ring found due) share
        it. Only for starts that do not suspend before their drain (the handle decides)."""
        batch = self._start_batch
        if batch is None or len(batch.items) >= ACTIVATION_CONCURRENCY:
            batch = self._start_batch = _StartBatch(self)
        batch.items.append((handle, cell))
        return batch.task

    def batch_began(self, batch: _StartBatch) -> None:
        """``batch``'s task runs: the starts that come next go to a new batch."""
        if self._start_batch is batch:
            self._start_batch = None

    def held(self) -> set[tuple[str, str]]:
        """The ``(kind, identity)`` of every identity held in memory: with a handle, or
        waiting for work due soon without one."""
        return set(self.handles) | set(self.soon.dues)

    def poll_soon(self) -> None:
        """Look for due identities now (cluster mode: a node left, its identities with
        due tasks may now be this node's to run)."""
        if self.runtime.running and not self.stopping:
            self.start_poll()

    def start_poll(self) -> None:
        if self._poll_task is None or self._poll_task.done():
            self._poll_task = self.runtime.loop.create_task(self._poll_guarded())
            self._poll_task.add_done_callback(_observed)
            self.runtime.track_task(self._poll_task)
        else:
            self._poll_again = True  # the running poll may predate what asked for this

    # -- operator tools (issue 14): read at scrape time, never on a hot path -------------

    def identities(self) -> tuple[int, int]:
        """``(identities known in memory, identities active now)``."""
        handles = self.handles.values()
        return len(handles) + len(self.soon), sum(1 for h in handles if h.cell is not None)

    def statistics(self) -> DurableStatistics:
        """A frozen snapshot of the run counters (a copy of the durations ring) and the
        identities, for operator tools: taking it reads no store."""
        c = self.counters
        known, active = self.identities()
        return DurableStatistics(
            c.runs,
            c.failed,
            c.interrupted,
            c.dropped,
            c.timed,
            c.timed_runs,
            tuple(c.durations),
            known,
            active,
            tuple((label, what, n) for (label, what), n in sorted(c.outcomes.items())),
        )

    def time_runs(self) -> None:
        """Record each task run's duration from now on (a clock read per run: switched
        on only once someone reads them, by :mod:`tocsin.metrics`)."""
        self.counters.timed = True

    def wrap_store(self, wrap: Callable[[Store], Store]) -> None:
        """Replace the store by ``wrap(store)`` here and in every known identity (store
        call timing is switched on this way, only once someone reads it)."""
        wrapped = wrap(self.store)
        self.store = wrapped
        for handle in self.handles.values():
            handle.use_store(wrapped)

    def wake(self, kind: str, identity: str, due: float) -> None:
        """Run identity ``kind/identity``'s tasks due by ``due`` (wall epoch seconds) without
        waiting for the periodic poll (after a retry written to the store). A known
        identity gets its alarm armed; an unknown one is found by a poll now."""
        if self.stopping or not self.runtime.running:
            return
        handle = self.handles.get((kind, identity))
        if handle is not None:
            handle.alarm.arm(due)
        else:
            self.start_poll()


#: Most ops one group commit of drain completions writes in one ``apply``: within what
#: the SQLite store commits on the loop thread (``INLINE_MAX_OPS``); a larger batch goes
#: to its writer thread, whose commit holds the file's lock while other writes wait.
GROUP_OPS = 100


Group = list[tuple[list[Op], asyncio.Future[None]]]


def _parts(group: Group) -> list[Group]:
    """``group`` in order, in parts of :data:`GROUP_OPS` ops at most (an entry with more
    is a part alone). A list, not a generator: iterating it calls nothing back here."""
    parts: list[Group] = []
    start = 0
    while start < len(group):
        end, size = start, 0
        while end < len(group) and (end == start or size + len(group[end][0]) <= GROUP_OPS):
            size += len(group[end][0])
            end += 1
        parts.append(group[start:end])
        start = end
    return parts


async def _commit_group(store: Store, group: Group) -> None:
    """Commit drains' completions, :data:`GROUP_OPS` at most a transaction; each drain's
    future resolves once its ops are committed, or fails with the store's error. Never
    raises: what escapes it (a bug: the store's errors are the futures') is logged, so
    the task needs no done callback to be observed."""
    try:
        for part in _parts(group):
            try:
                await store.apply([op for ops, _ in part for op in ops])
            except Exception as exc:
                if len(part) == 1:
                    _settle(part[0][1], exc)
                    continue
                # Alone, so that one refused batch fails only its own drain; two failures
                # in a row mean the store itself is failing (an outage): the rest fail with
                # it at once instead of one bounded wait each, and their drains retry later.
                failures = 0
                for ops, done in part:
                    if failures >= 2:
                        _settle(done, exc)
                        continue
                    try:
                        await store.apply(ops)
                    except Exception as alone:
                        failures += 1
                        exc = alone
                        _settle(done, alone)
                    else:
                        failures = 0
                        _settle(done, None)
                continue
            # `_settle(done, None)` written out: the commit's own path calls nothing back
            # here once the store returned.
            for _, done in part:
                if not done.done():  # its drain was cancelled (the system stops)
                    done.set_result(None)
    except Exception as exc:
        _log.error("durable: a group commit failed", exc_info=exc)


def _settle(done: asyncio.Future[None], exc: BaseException | None) -> None:
    if done.done():
        return  # its drain was cancelled (the system stops)
    if exc is None:
        done.set_result(None)
    else:
        done.set_exception(exc)


def _pushes_changes(store: Store) -> bool:
    """Whether ``store`` calls its watchers on every outside change by itself (its
    ``check_changes`` does nothing). A store says so with a class or instance attribute
    ``pushes_changes = True``, looked up statically so that a wrapper forwarding every
    name does not claim it by accident."""
    return inspect.getattr_static(store, "pushes_changes", False) is True


def _kind_class(kind: str) -> DurableClass | None:
    """The imported class of durable ``kind`` (only ``DurableActor`` subclasses register)."""
    return cast("DurableClass | None", _registered(kind))


def _observed(task: asyncio.Task[None]) -> None:
    """No background task (a poll, a helper of the cluster) dies unobserved (issue 20):
    its exception is logged."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        _log.error("durable: a background task failed", exc_info=exc)


def durable_of(runtime: Runtime | None) -> DurableRuntime | None:
    """The durable runtime registered on ``runtime`` (None without one, or no runtime)."""
    found = None if runtime is None else runtime.services.get(SERVICE)
    return found if isinstance(found, DurableRuntime) else None


@final
class _StartBatch:
    """Activation starts sharing one task (:meth:`DurableRuntime.start_batched`)."""

    __slots__ = ("durable", "items", "task")

    def __init__(self, durable: DurableRuntime) -> None:
        self.durable = durable
        self.items: list[tuple[DurableHandle, Cell]] = []
        runtime = durable.runtime
        self.task = runtime.loop.create_task(self._run())
        self.task.add_done_callback(_observed)

    async def _run(self) -> None:
        self.durable.batch_began(self)
        for handle, cell in self.items:
            try:
                await handle.run_start(cell)
            except Exception:  # a bug: every expected failure is handled inside
                _log.exception("durable: the start of %s failed", handle.path)


@final
class _Poll(Deadline):
    """The periodic look-ahead poll of the store."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: DurableRuntime) -> None:
        super().__init__()
        self.runtime = runtime

    def fire(self, now: float, deadline: float) -> None:
        self.runtime.start_poll()


@final
class _ChangeCheck(Deadline):
    """Once a second, ask the store whether another process changed it (real clocks)."""

    __slots__ = ("durable",)

    def __init__(self, durable: DurableRuntime) -> None:
        super().__init__()
        self.durable = durable

    def start(self) -> None:
        runtime = self.durable.runtime
        runtime.deadlines.add(runtime.clock.monotonic() + CHANGE_CHECK_SECONDS, self)

    def fire(self, now: float, deadline: float) -> None:
        durable = self.durable
        if durable.stopping:
            return
        try:
            durable.store.check_changes()
        except Exception as exc:  # a store that fails here keeps being looked at
            durable.store_outage.failed(exc, "looking for changes by other processes")
        durable.runtime.deadlines.add(now + CHANGE_CHECK_SECONDS, self)
