# SPDX-License-Identifier: Apache-2.0
"""An operator's hold on one durable identity's tasks: ``system.durable_tasks(Kind, id)``.

Answered from the store, never through the identity's mailbox: an ask that read a
history used to wait behind the identity's running task (seven minutes behind a
seven-minute run). The same :class:`~tocsin.durable._tasks.Tasks` as the actor's own
calls, over a host that writes to the store at once and then tells this system's
handle of the identity, if it has one: a drain in progress leaves a cancelled task
cancelled (and a pause needs nothing: the store's upsert never writes it), and the
identity's alarm is armed for what became due (else a poll of the store finds it).

Cluster mode: a write made here reaches the store at once whoever owns the identity;
the owning node runs what it made due at its alarm or its next poll of the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, final

from ._tasks import Tasks
from ._writes import MISSING

if TYPE_CHECKING:
    from ..actor._spi import TickOutcome
    from ..stores import Op, Store
    from ._records import TaskRecord
    from ._runtime import DurableRuntime

__all__ = ["DurableTasks"]


@final
class _OperatorHost:
    """A :class:`~tocsin.durable._tasks.TaskHost` outside the actor's turn."""

    __slots__ = ("durable", "identity", "kind")

    def __init__(self, durable: DurableRuntime, kind: str, identity: str) -> None:
        self.durable = durable
        self.kind = kind
        self.identity = identity

    @property
    def store(self) -> Store:
        return self.durable.store

    @property
    def timezone(self) -> str:
        return self.durable.timezone

    @property
    def node(self) -> str:
        return self.durable.runtime.name

    @property
    def running_id(self) -> str | None:
        handle = self.durable.handles.get((self.kind, self.identity))
        return None if handle is None else handle.running_id

    async def settle(self) -> None:
        """Nothing to wait for: an operator's changes are committed in the call."""

    def gated_task(self, task_id: str) -> Any:
        """None in flight (see :meth:`settle`)."""
        return MISSING

    async def change(
        self, ops: Sequence[Op], touched: Iterable[str] = (), due: float | None = None
    ) -> None:
        durable = self.durable
        await durable.store.apply(ops)
        handle = durable.handles.get((self.kind, self.identity))
        if handle is not None and touched:
            handle.touch(touched)
        if due is not None:
            durable.wake(self.kind, self.identity, due)


@final
class DurableTasks:
    """The tasks of one durable identity, for an operator: ``system.durable_tasks(Kind,
    id)``. The verbs of every schedule (DESIGN "One vocabulary on every surface").

    Each call reads or writes the store at once and never waits for the identity's
    running task, nor activates it. Times are the system clock's (a class's ``now()``
    override is the actor's own business). Get one from
    :meth:`ActorSystem.durable_tasks <tocsin.ActorSystem.durable_tasks>`; it has no
    public constructor.
    """

    __slots__ = ("_durable", "identity", "kind")

    def __init__(
        self,
        durable: Callable[[], Awaitable[DurableRuntime]],
        kind: str,
        identity: str,
    ) -> None:
        self._durable = durable
        #: The identity's kind and name.
        self.kind = kind
        self.identity = identity

    def __repr__(self) -> str:
        return f"<DurableTasks {self.kind}/{self.identity}>"

    async def _tasks(self) -> tuple[Tasks, float]:
        # Made per call (two small objects): the system may have restarted in between,
        # with another durable runtime and store.
        durable = await self._durable()
        tasks = Tasks(_OperatorHost(durable, self.kind, self.identity))
        return tasks, durable.runtime.clock.wall()

    async def list_schedules(self) -> list[TaskRecord]:
        """Every task of the identity, parked ones included, in due order (``state`` is
        ``running`` for the one whose method runs now in this system)."""
        tasks, _ = await self._tasks()
        return await tasks.list()

    async def list_parked(self) -> list[TaskRecord]:
        """The parked tasks (failed ``max_retries + 1`` times; they never run again by
        themselves)."""
        tasks, _ = await self._tasks()
        return await tasks.list("parked")

    async def pause_schedule(self, id: str, *, note: str | None = None) -> None:
        """Pause task ``id`` (see :meth:`DurableActor.pause_schedule
        <tocsin.durable.DurableActor.pause_schedule>`): a run in progress finishes, the
        instants after it pass without a run, each recorded as ``paused`` with ``note``.

        Raises:
            TaskNotFoundError: no task ``id`` (a :class:`~tocsin.ScheduleNotFoundError`).
            TypeError, ValueError: ``note`` is not a str or None, or longer than 4,096
                bytes (UTF-8).
        """
        tasks, now = await self._tasks()
        await tasks.pause(id, now, note)

    async def resume_schedule(self, id: str) -> None:
        """Resume task ``id``: it goes on at its next instant after now.

        Raises:
            TaskNotFoundError: no task ``id``.
        """
        tasks, now = await self._tasks()
        await tasks.resume(id, now)

    async def trigger_schedule(self, id: str) -> None:
        """One run of task ``id`` now, beside its schedule (``current_task.manual``);
        it waits in the actor's turn for a run in progress, like every run.

        Raises:
            TaskNotFoundError: no task ``id``.
        """
        tasks, now = await self._tasks()
        await tasks.trigger(id, now)

    async def backfill_schedule(
        self, id: str, start: datetime, end: datetime, *, dry_run: bool = False
    ) -> list[datetime]:
        """The instants of task ``id`` in ``[start, end)`` that are not in the future
        and, unless ``dry_run``, one run of each (see :meth:`DurableActor.backfill_schedule
        <tocsin.durable.DurableActor.backfill_schedule>`).

        Raises:
            TaskNotFoundError: no task ``id``.
            TypeError: ``start`` or ``end`` is not an aware datetime.
            ValueError: ``end`` not after ``start``, the task is not recurring, or more
                than 100,000 instants in the range.
        """
        tasks, now = await self._tasks()
        return await tasks.backfill(id, start, end, now, dry_run=dry_run)

    async def schedule_history(self, id: str) -> list[TickOutcome]:
        """What became of task ``id``'s recent instants, oldest first (at most 64).

        Raises:
            TaskNotFoundError: no task ``id`` and no history under it.
        """
        tasks, _ = await self._tasks()
        return await tasks.history(id, missing_ok=False)

    async def cancel_schedule(self, id: str, *, missing_ok: bool = False) -> bool:
        """Delete task ``id`` (pending or parked) and its history; a run in progress
        finishes and is not rescheduled. Returns whether it existed.

        Raises:
            TaskNotFoundError: no task ``id`` and not ``missing_ok``.
        """
        tasks, _ = await self._tasks()
        return await tasks.cancel(id, missing_ok=missing_ok)

    async def retry_parked(self, id: str) -> None:
        """Make parked task ``id`` pending again, due now, attempts reset.

        Raises:
            TaskNotFoundError: no parked task ``id``.
        """
        tasks, now = await self._tasks()
        await tasks.retry_parked(id, now)

    async def discard_parked(self, id: str) -> None:
        """Delete parked task ``id`` for good.

        Raises:
            TaskNotFoundError: no parked task ``id``.
        """
        tasks, _ = await self._tasks()
        await tasks.discard_parked(id)
