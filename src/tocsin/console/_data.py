# SPDX-License-Identifier: Apache-2.0
"""What the console shows: one frozen :class:`Snapshot`, read from a running system or
from the stores alone, and the two actions (retry, discard a parked task).

A snapshot is read once per refresh and shared by every open page, so ten operators
watching cost one read, not ten.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import msgspec

from ..actor._spi import ActorStat, TickOutcome, actor_stats
from ..clock import Clock, SystemClock
from ..cron import CronExpression
from ..durable._spi import durable_of
from ..errors import ScheduleNotFoundError, TocsinError
from ..scheduling._spi import Scheduler, last_lateness
from ..stores import DeleteTask, Store, TaskRow, UpsertTask
from ..stores._spi import redact
from ._stored import (
    StoredHistory,
    StoredView,
    act_on_stored,
    read_stored,
    schedules_of,
    stored_history,
)
from ._task_page import TaskHistory, task_history

if TYPE_CHECKING:
    from ..system import ActorSystem

__all__ = [
    "MAX_TASKS",
    "ActionError",
    "ConsoleSource",
    "ScheduleHistory",
    "ScheduleView",
    "Snapshot",
    "StoreSource",
    "SystemSource",
    "TaskView",
    "redact_url",
]

#: Most rows of each list a snapshot holds (durable tasks, schedules, actors); the page
#: says how many more there are. A page is for people: 500 rows is already a lot.
MAX_TASKS: Final = 500

Members = Callable[[], Awaitable[Sequence[Any]]]


class ActionError(TocsinError):
    """A console action could not be done (unknown task, not parked, no store)."""


@dataclass(frozen=True, slots=True)
class ScheduleView:
    """One schedule as the console shows it."""

    reference: str
    target: str
    kind: str
    every: str  # interval in seconds, or the cron expression
    timezone: str | None
    description: str
    next_fire_at: datetime | None
    paused: bool
    ticks: int
    #: Seconds its last tick fired after its deadline; None before its first tick.
    lateness: float | None = None
    #: While paused: the note given to pause_schedule, when and by which node.
    note: str | None = None
    paused_at: datetime | None = None
    paused_by: str | None = None


@dataclass(frozen=True, slots=True)
class ScheduleHistory:
    """One schedule and its history ring (oldest first), for its history page."""

    schedule: ScheduleView
    entries: tuple[TickOutcome, ...]


@dataclass(frozen=True, slots=True)
class TaskView:
    """One durable task as the console shows it."""

    kind: str
    identity: str
    id: str
    name: str
    state: str
    due: datetime
    every: float | None
    attempts: int
    max_retries: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one page shows, read at ``taken_at``. ``None`` means "not available
    here" (no schedules or actors without a running system; no members without a
    cluster), as opposed to an empty list."""

    taken_at: datetime
    mode: str  # "system NAME" or "store URL"
    schedules: tuple[ScheduleView, ...] | None  # the soonest to fire first
    lateness: tuple[float, float, float] | None  # p50, p99, max (seconds)
    tasks: tuple[TaskView, ...]
    tasks_total: int
    parked: tuple[TaskView, ...]
    actors: tuple[ActorStat, ...] | None  # the fullest mailbox first
    members: tuple[Any, ...] | None
    dead_letters: int | None
    store_error: str | None = None
    schedules_total: int = 0
    actors_total: int = 0
    members_error: str | None = None  # the member list could not be read this time
    #: Stored schedules (``system.schedules``), read from the store; None: none here.
    stored: tuple[StoredView, ...] | None = None
    stored_total: int = 0
    stored_error: str | None = None


class ConsoleSource(Protocol):
    """Where the console reads from and acts on."""

    clock: Clock

    async def snapshot(self) -> Snapshot: ...

    async def retry(self, kind: str, identity: str, task_id: str) -> TaskRow: ...

    async def discard(self, kind: str, identity: str, task_id: str) -> TaskRow: ...

    async def history(self, reference: str) -> ScheduleHistory | None:
        """One live schedule and its history ring; None if there is none here."""
        ...

    async def stored_history(self, schedule_id: str) -> StoredHistory | None:
        """One stored schedule and its ledger; None if there is none."""
        ...

    async def stored_action(self, action: str, schedule_id: str, note: str | None) -> None:
        """Pause, resume or trigger a stored schedule (``ScheduleNotFoundError``)."""
        ...

    async def task_history(self, kind: str, identity: str, task_id: str) -> TaskHistory | None:
        """One durable task and its history, from the store; None if there is neither."""
        ...


def redact_url(url: str) -> str:
    """``url`` with every secret in it (a password in the user-info or in a query option)
    replaced by ``***``: what the page, ``snapshot.json`` and the stream may show."""
    return redact(url)


@lru_cache(maxsize=1024)
def _describe(expression: str) -> str:
    try:
        return CronExpression.parse(expression).describe()
    except TocsinError as exc:  # a schedule holds only valid expressions; never fail a page
        return f"(cannot describe: {exc})"


_NEVER = datetime.max.replace(tzinfo=UTC)


def _fire_order(info: Any) -> tuple[datetime, str]:
    """Soonest next fire first; paused ones (no next fire) last, by reference."""
    return (info.next_fire_at or _NEVER, info.reference)


def _view(s: Any, lateness: float | None) -> ScheduleView:
    """A :class:`ScheduleView` of one ``ScheduleInfo``."""
    return ScheduleView(
        s.reference,
        s.target,
        str(s.kind),
        s.cron if s.cron is not None else f"{s.interval:g} s",
        s.timezone,
        _describe(s.cron) if s.cron is not None else "",
        s.next_fire_at,
        s.paused,
        s.ticks,
        lateness,
        s.note,
        s.paused_at,
        s.paused_by,
    )


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _task(row: TaskRow) -> TaskView:
    return TaskView(
        row.kind,
        row.identity,
        row.id,
        row.name,
        row.state,
        _utc(row.due),
        row.every,
        row.attempts,
        row.max_retries,
        row.last_error,
    )


async def _read_tasks(
    store: Store | None,
) -> tuple[tuple[TaskView, ...], int, tuple[TaskView, ...], str | None]:
    if store is None:
        return (), 0, (), None
    try:
        rows = await store.list_tasks()
    except TocsinError as exc:
        return (), 0, (), str(exc)
    rows.sort(key=lambda r: (r.kind, r.identity, r.due, r.id))
    parked = tuple(_task(r) for r in rows if r.state == "parked")
    return tuple(_task(r) for r in rows[:MAX_TASKS]), len(rows), parked, None


async def _read_members(
    members: Members | None,
) -> tuple[tuple[Any, ...] | None, str | None]:
    """The members and no error, or no members and the error text: a coordinator that
    is unreachable for a moment is said on the page, and the other sections still show
    (the next refresh tries again)."""
    if members is None:
        return None, None
    try:
        return tuple(await members()), None
    except TocsinError as exc:  # CoordinatorError: unreachable, timed out
        return None, str(exc)


async def _parked_row(store: Store | None, kind: str, identity: str, task_id: str) -> TaskRow:
    if store is None:
        raise ActionError("this system has no durable store yet: nothing is parked")
    row = await store.get_task(kind, identity, task_id)
    if row is None:
        raise ActionError(f"no task {task_id!r} of {kind}/{identity}")
    if row.state != "parked":
        raise ActionError(
            f"task {task_id!r} of {kind}/{identity} is {row.state}, not parked; "
            "only parked tasks can be retried or discarded"
        )
    return row


async def retry_in_store(
    store: Store | None, kind: str, identity: str, task_id: str, now: float
) -> TaskRow:
    """Make a parked task pending again, due ``now``, attempts reset (``tocsin tasks retry``)."""
    row = await _parked_row(store, kind, identity, task_id)
    assert store is not None
    fresh = msgspec.structs.replace(row, state="pending", attempts=0, due=now)
    await store.apply([UpsertTask(fresh)])
    return fresh


async def discard_in_store(store: Store | None, kind: str, identity: str, task_id: str) -> TaskRow:
    """Delete a parked task for good (``tocsin tasks discard``)."""
    row = await _parked_row(store, kind, identity, task_id)
    assert store is not None
    await store.apply([DeleteTask(kind, identity, task_id)])
    return row


@final
class SystemSource:
    """Reads a running :class:`~tocsin.ActorSystem` (and its durable store)."""

    def __init__(self, system: ActorSystem, members: Members | None = None) -> None:
        self.system = system
        self.clock: Clock = system.clock
        self._members = members

    async def snapshot(self) -> Snapshot:
        system = self.system
        schedules: tuple[ScheduleView, ...] | None = None
        lateness = None
        infos: list[Any] = []
        actors: list[ActorStat] = []
        if system.running:
            infos = system.list_schedules()
            infos.sort(key=_fire_order)
            scheduler = system.runtime.schedules if system.runtime is not None else None
            late = last_lateness(scheduler) if isinstance(scheduler, Scheduler) else {}
            schedules = tuple(_view(s, late.get(s.reference)) for s in infos[:MAX_TASKS])
            m = system.scheduler_metrics()
            lateness = (m.lateness_p50, m.lateness_p99, m.lateness_max)
            actors = actor_stats(system.runtime)
            actors.sort(key=lambda a: (-a.mailbox, a.path))
        tasks, total, parked, error = await _read_tasks(self._store())
        members, members_error = await _read_members(self._members)
        stored, stored_total, stored_error = await read_stored(self._schedules())
        return Snapshot(
            stored=stored,
            stored_total=stored_total,
            stored_error=stored_error,
            taken_at=_utc(self.clock.wall()),
            mode=f"system {system.name}",
            schedules=schedules,
            lateness=lateness,
            tasks=tasks,
            tasks_total=total,
            parked=parked,
            actors=tuple(actors[:MAX_TASKS]),
            members=members,
            dead_letters=system.dead_letters,
            store_error=error,
            schedules_total=len(infos),
            actors_total=len(actors),
            members_error=members_error,
        )

    async def history(self, reference: str) -> ScheduleHistory | None:
        system = self.system
        if not system.running:
            return None
        try:
            entries = system.schedule_history(reference)
        except ScheduleNotFoundError:
            return None
        info = next(s for s in system.list_schedules() if s.reference == reference)
        scheduler = system.runtime.schedules if system.runtime is not None else None
        late = last_lateness(scheduler) if isinstance(scheduler, Scheduler) else {}
        return ScheduleHistory(_view(info, late.get(reference)), tuple(entries))

    async def retry(self, kind: str, identity: str, task_id: str) -> TaskRow:
        now = self.clock.wall()
        row = await retry_in_store(self._store(), kind, identity, task_id, now)
        # Written like `tocsin tasks retry`; then the runtime is told, so the task runs
        # now rather than at the next store poll.
        durable = durable_of(self.system.runtime)
        if durable is not None:
            durable.wake(kind, identity, now)
        return row

    async def discard(self, kind: str, identity: str, task_id: str) -> TaskRow:
        return await discard_in_store(self._store(), kind, identity, task_id)

    async def stored_history(self, schedule_id: str) -> StoredHistory | None:
        return await stored_history(self._schedules(), schedule_id)

    async def task_history(self, kind: str, identity: str, task_id: str) -> TaskHistory | None:
        return await task_history(self._store(), kind, identity, task_id)

    async def stored_action(self, action: str, schedule_id: str, note: str | None) -> None:
        await act_on_stored(self._schedules(), action, schedule_id, note)

    def _schedules(self) -> Any:
        if not self.system.running or self._store() is None:
            return None
        return schedules_of(self._store(), self.clock, self.system)

    def _store(self) -> Store | None:
        """The running system's durable store (None before the first durable actor)."""
        durable = durable_of(self.system.runtime)
        return None if durable is None else durable.store


@final
class StoreSource:
    """Reads the stores alone (``tocsin console --store URL``): tasks and parked tasks,
    and cluster members when a coordinator is given; no schedules or actors (those live
    in the memory of running systems)."""

    def __init__(
        self, store: Store, members: Members | None = None, clock: Clock | None = None
    ) -> None:
        self.store = store
        self.clock = clock if clock is not None else SystemClock()
        self._members = members

    async def snapshot(self) -> Snapshot:
        tasks, total, parked, error = await _read_tasks(self.store)
        members, members_error = await _read_members(self._members)
        stored, stored_total, stored_error = await read_stored(self._schedules())
        return Snapshot(
            stored=stored,
            stored_total=stored_total,
            stored_error=stored_error,
            taken_at=_utc(self.clock.wall()),
            mode=f"store {redact_url(self.store.url)}",
            schedules=None,
            lateness=None,
            tasks=tasks,
            tasks_total=total,
            parked=parked,
            actors=None,
            members=members,
            dead_letters=None,
            store_error=error,
            members_error=members_error,
        )

    async def history(self, reference: str) -> ScheduleHistory | None:
        return None  # schedules live in the memory of running systems

    async def stored_history(self, schedule_id: str) -> StoredHistory | None:
        return await stored_history(self._schedules(), schedule_id)

    async def task_history(self, kind: str, identity: str, task_id: str) -> TaskHistory | None:
        return await task_history(self.store, kind, identity, task_id)

    async def stored_action(self, action: str, schedule_id: str, note: str | None) -> None:
        await act_on_stored(self._schedules(), action, schedule_id, note)

    def _schedules(self) -> Any:
        return schedules_of(self.store, self.clock)

    async def retry(self, kind: str, identity: str, task_id: str) -> TaskRow:
        row = await retry_in_store(self.store, kind, identity, task_id, self.clock.wall())
        # As `tocsin tasks retry` does: a system running on this store (PostgreSQL
        # LISTEN/NOTIFY, a shared memory store) runs it now, not at its next poll.
        await self.store.announce()
        return row

    async def discard(self, kind: str, identity: str, task_id: str) -> TaskRow:
        row = await discard_in_store(self.store, kind, identity, task_id)
        await self.store.announce()
        return row
