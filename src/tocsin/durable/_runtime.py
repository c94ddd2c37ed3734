# SPDX-License-Identifier: Apache-2.0
"""The durable runtime of one system: handles by identity, due-task drains, recovery.

Delivery contract: **at least once**. A task row is deleted (or moved on) only after its
method returned; a crash in between runs it again on the next activation. Completions are
committed in batches of :data:`COMPLETION_BATCH`, so a crash may re-run up to that many
completed tasks of one drain.

Alarms: an active identity keeps one deadline (its earliest pending due time) in the
system heap. Identities not in memory (after a restart, or never touched) are found by a
poll of the store every :data:`LOOKAHEAD` / 2 seconds for tasks due within
:data:`LOOKAHEAD`; only those get an alarm, so memory holds the near future only. Alarms
that ring activate their actor under :data:`ACTIVATION_CONCURRENCY`, so a restart after
downtime with many overdue identities is not a stampede.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..actor._cell import Cell, CellState
from ..clock import WALL_TOLERANCE
from ..scheduling._heap import Deadline
from ..stores import DeleteTask, Op, Store, TaskRow, UpsertTask, resolve_store
from ._handle import LOOKAHEAD, DurableHandle
from ._ops import RunCounters
from ._records import TaskParked, record_from_row
from ._run import INTERRUPTED, run_task

if TYPE_CHECKING:
    from ..actor._system import ActorSystem
    from ._actor import DurableActor

__all__ = [
    "ACTIVATION_CONCURRENCY",
    "COMPLETION_BATCH",
    "LOOKAHEAD",
    "DurableRuntime",
]

#: Seconds ahead the store is polled for identities with due tasks.
#: Activations running their first start at once (recovery after downtime).
ACTIVATION_CONCURRENCY = 64
#: Task completions committed together during one drain.
COMPLETION_BATCH = 100
#: Most tasks one drain turn runs; more due tasks run in the next turn, so the actor's
#: other messages are not held up behind a long backlog.
DRAIN_LIMIT = 1000
#: Identities fetched per poll of the store.
POLL_LIMIT = 10_000

_log = logging.getLogger("tocsin.durable")


@final
class DurableRuntime:
    """Durable actors of one :class:`~tocsin.ActorSystem` (internal)."""

    def __init__(self, system: ActorSystem, store: str | Store | None) -> None:
        from ..stores import MemoryStore

        self.system = system
        resolved = resolve_store(store) if store is not None else None
        self.store: Store = resolved if resolved is not None else MemoryStore()
        self.handles: dict[tuple[str, str], DurableHandle] = {}
        self.kinds: dict[str, type[DurableActor]] = {}
        self.activation_slots = asyncio.Semaphore(ACTIVATION_CONCURRENCY)
        self._poll = _Poll(self)
        self._poll_task: asyncio.Task[None] | None = None
        self._unknown_kinds: set[str] = set()
        self._unsubscribe_wall: Callable[[], None] | None = None
        #: Set when the system starts stopping: no drain starts a task, no alarm rings,
        #: no identity is activated from then on.
        self.stopping = False
        self.counters = RunCounters()  # ops hook (issue 14): read by tocsin.metrics

    async def start(self) -> None:
        await self.store.open()
        # Alarms are wall times converted to monotonic deadlines when armed: a wall step
        # (NTP, set_wall) must convert them again, or a task made due by the step would
        # wait for its old monotonic deadline.
        self._unsubscribe_wall = self.system.clock.on_wall_jump(self._wall_jumped)
        await self.poll()  # recovery: every identity with work due soon gets its alarm

    async def before_stop(self) -> None:
        # First, synchronously: from here on no drain starts another task (a drain paused
        # between two tasks would otherwise start one after this point), no alarm rings
        # and nothing is activated.
        self.stopping = True
        if self._unsubscribe_wall is not None:
            self._unsubscribe_wall()
            self._unsubscribe_wall = None
        self.system._deadlines.remove(self._poll)
        for handle in self.handles.values():
            handle.rearm(None)
            handle.request_stop()
            # A task run suspended in a turn would hold the stop up until its budget runs
            # out (15 minutes by default). Cut it short instead: it is not completed, so
            # at-least-once delivery runs it again on the next start.
            if handle.budget is not None:
                handle.budget.interrupt()
        if self._poll_task is not None:
            await asyncio.wait({self._poll_task})
        await asyncio.gather(*(h.stop() for h in list(self.handles.values())))

    async def close(self) -> None:
        await self.store.close()

    # -- identities --------------------------------------------------------------------

    def handle(
        self, cls: type[DurableActor], identity: str, passivate_after: float | None
    ) -> DurableHandle:
        key = (cls.kind, identity)
        handle = self.handles.get(key)
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

    def _wall_jumped(self, seconds: float) -> None:
        if not self.system.running:
            return
        for handle in list(self.handles.values()):
            if handle.alarm_due is not None:
                handle.rearm(handle.alarm_due)
        self._start_poll()  # identities not in memory may now be due within the look-ahead

    def cell_stopped(self, cell: Cell) -> None:
        target = cell.pid._target
        if isinstance(target, DurableHandle):
            target.cell_stopped(cell)

    # -- polling -----------------------------------------------------------------------

    async def poll(self) -> None:
        """Arm the alarms of identities with pending tasks due within the look-ahead."""
        from ._actor import registered_kind

        system = self.system
        if not system.running:
            return
        horizon = system.clock.wall() + LOOKAHEAD
        for due in await self.store.due_actors(horizon, POLL_LIMIT):
            handle = self.handles.get((due.kind, due.identity))
            if handle is None:
                cls = self.kinds.get(due.kind) or registered_kind(due.kind)
                if cls is None:
                    if due.kind not in self._unknown_kinds:
                        self._unknown_kinds.add(due.kind)
                        _log.warning(
                            "tasks of durable kind %r are due but no DurableActor subclass "
                            "with that kind is imported; they wait in the store",
                            due.kind,
                        )
                    continue
                handle = self.handle(cls, due.identity, getattr(cls, "passivate_after", None))
            handle.arm(due.due)
        system._deadlines.add(system.clock.monotonic() + LOOKAHEAD / 2, self._poll)

    def _start_poll(self) -> None:
        if self._poll_task is None or self._poll_task.done():
            self._poll_task = self.system._loop.create_task(self.poll())
            self.system._track_task(self._poll_task)

    # -- running due tasks (inside the actor's turn) -----------------------------------

    async def drain(self, cell: Cell) -> None:
        """Run every task of this actor due at the start of the turn, in due order."""
        handle = cell.pid._target
        assert isinstance(handle, DurableHandle)
        handle.drain_queued = False
        actor: DurableActor = cell.actor  # type: ignore[assignment]
        start = actor._now()
        store = self.store
        rows = await store.due_tasks(
            handle.kind, handle.identity, start + WALL_TOLERANCE, DRAIN_LIMIT
        )
        handle.touched.clear()
        ops: list[Op] = []
        parked: list[tuple[TaskRow, BaseException]] = []
        for row in rows:
            if self.stopping:
                break  # no task starts once the system is stopping
            if cell.state is not CellState.RUNNING:
                break
            if row.id in handle.touched:
                continue  # replaced or cancelled by an earlier task of this drain
            handle.running_id = row.id
            started = self.system.clock.monotonic()  # ops hook (issue 14): run duration
            try:
                error = await run_task(cell, actor, row, handle)
            finally:
                handle.running_id = None
            self.counters.ran(  # ops hook (issue 14)
                self.system.clock.monotonic() - started, error, error is INTERRUPTED
            )
            if error is INTERRUPTED:
                break  # the system is stopping: this task stays pending, untouched
            actor = cell.actor  # type: ignore[assignment]
            if row.id in handle.touched:
                continue  # the task rescheduled or cancelled itself: that write stands
            ops.append(self._completion(actor, row, start, error, parked))
            if len(ops) >= COMPLETION_BATCH:
                await store.apply(ops)
                ops = []
                # A store call may complete without suspending (the SQLite store's small
                # commits run on the loop thread, the memory store's always): yield once
                # per batch so a long drain does not hold up the rest of the loop.
                await asyncio.sleep(0)
        if ops:
            await store.apply(ops)
        for row, exc in parked:
            parked_row = await store.get_task(row.kind, row.identity, row.id)
            if parked_row is not None:
                self.system.events.publish(TaskParked(handle.pid, record_from_row(parked_row), exc))
        if self.stopping:
            return  # no alarm: the system is stopping, and its start re-arms from the store
        handle.rearm(await store.next_due(handle.kind, handle.identity))

    def _completion(
        self,
        actor: DurableActor,
        row: TaskRow,
        start: float,
        error: BaseException | None,
        parked: list[tuple[TaskRow, BaseException]],
    ) -> Op:
        if error is None:
            if row.every is None:
                return DeleteTask(row.kind, row.identity, row.id)
            nxt = start + row.every
            return UpsertTask(_replace(row, due=nxt, attempts=0, last_error=None))
        _log.warning("durable task %s/%s/%s failed: %r", row.kind, row.identity, row.id, error)
        attempts = row.attempts + 1
        decision = actor.retry_policy.decide(error, attempts, row.max_retries)
        now = actor._now()
        if decision is None:
            parked.append((row, error))
            return UpsertTask(
                _replace(row, due=now, attempts=attempts, state="parked", last_error=repr(error))
            )
        return UpsertTask(
            _replace(row, due=now + decision.delay, attempts=attempts, last_error=repr(error))
        )


def _replace(row: TaskRow, **changes: Any) -> TaskRow:
    fields = {name: getattr(row, name) for name in row.__struct_fields__}
    fields.update(changes)
    return TaskRow(**fields)


@final
class _Poll(Deadline):
    """The periodic look-ahead poll of the store."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: DurableRuntime) -> None:
        super().__init__()
        self.runtime = runtime

    def fire(self, now: float, deadline: float) -> None:
        self.runtime._start_poll()
