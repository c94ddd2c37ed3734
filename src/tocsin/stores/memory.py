# SPDX-License-Identifier: Apache-2.0
"""In-memory :class:`~tocsin.stores.Store`: for tests and for systems that need no durability.

Prior art: procrastinate's ``InMemoryConnector`` (same contract as the real stores, plus a
``reset()`` for tests).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Sequence
from typing import final

import msgspec

from ..errors import FencedError
from ._ownership import Holder, ownership_error
from ._protocols import (
    HISTORY_LIMIT,
    DeleteHistory,
    DeleteState,
    DeleteTask,
    DueActor,
    DueWork,
    Fence,
    Op,
    PauseTask,
    PutState,
    RecordTick,
    TaskRow,
    TaskState,
    TickRow,
)
from ._schedule_rows import SchedulePause, ScheduleRequest, ScheduleRow, ScheduleTickRow
from ._validate import validate_ops

__all__ = ["MemoryStore"]

_Key = tuple[str, str, str]


@final
class MemoryStore:
    """A store held in two dicts; nothing survives the process.

    Gives every guarantee of :class:`~tocsin.stores.Store`: :meth:`apply` validates the
    whole batch first and only then applies it, so a refused batch leaves nothing behind.
    Reads never await anything, so they see every write that has returned. Works without
    :meth:`open` and after :meth:`close` (data is kept until :meth:`reset`), so a test
    can inspect a store its system has closed. Ownership (``open(exclusive=True)``) is a
    flag on the object: two running systems given one ``MemoryStore`` are refused, as
    they are on one file or database.
    """

    url = "memory://"
    #: Its watchers are called on every :meth:`announce`, with nothing to look at:
    #: a system need not call :meth:`check_changes` periodically.
    pushes_changes = True

    def __init__(self) -> None:
        self._tasks: dict[_Key, TaskRow] = {}
        self._state: dict[_Key, bytes] = {}
        self._fences: dict[tuple[str, str], tuple[int, str]] = {}
        self._history: dict[_Key, deque[TickRow]] = {}
        self._cluster: str | None = None
        self._owned = False
        self._watchers: list[Callable[[], None]] = []
        #: Stored schedules (by id), their ledgers (by id, then (instant, manual)), the single-node
        #: claims (key -> expiry) and the revision every schedule change bumps.
        self._schedules: dict[str, ScheduleRow] = {}
        self._ledger: dict[str, dict[tuple[float, bool], ScheduleTickRow]] = {}
        self._claims: dict[str, float] = {}
        self._requests: dict[tuple[str, float, bool], ScheduleRequest] = {}
        self._revision = 0
        #: The schedules' ids in order, for paged reads (``None``: to sort again, after
        #: an add or a removal).
        self._schedule_ids: list[str] | None = None

    def __repr__(self) -> str:
        return f"MemoryStore(tasks={len(self._tasks)}, state={len(self._state)})"

    def reset(self) -> None:
        """Forget every task and state value."""
        self._tasks.clear()
        self._state.clear()

    async def open(self, *, exclusive: bool = False) -> None:
        """Nothing to connect to; ``exclusive`` takes ownership of this object.

        Raises:
            StoreError: ``exclusive`` and the store is already owned.
        """
        if exclusive:
            if self._owned:
                raise ownership_error(self.url, Holder.me())
            self._owned = True

    async def close(self) -> None:
        """Release ownership and watchers; data is kept (see :meth:`reset`)."""
        self._owned = False
        self._watchers.clear()

    async def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` on each :meth:`announce`; returns the unwatch function."""
        self._watchers.append(callback)

        def unwatch() -> None:
            if callback in self._watchers:
                self._watchers.remove(callback)

        return unwatch

    def check_changes(self) -> None:
        """Nothing to look at: :meth:`announce` calls the watchers directly."""

    async def announce(self) -> None:
        """Call every watcher (a write made outside the system that owns this store)."""
        for callback in list(self._watchers):
            callback()

    async def swap_cluster(self, expected: str | None, new: str | None) -> str | None:
        """Compare-and-set the recorded cluster fingerprint (atomic: nothing is awaited)."""
        current = self._cluster
        if current == expected:
            self._cluster = new
        return current

    async def apply(self, ops: Sequence[Op]) -> None:
        """Apply a batch atomically: all ops, in order, or (on :class:`StoreError`) none."""
        validate_ops(ops)
        for op in ops:  # the fence check of the SQL stores' trigger, before any write
            if isinstance(op, Fence):
                epoch, owner = self._fences.get((op.kind, op.identity), (0, ""))
                if epoch > op.epoch or (epoch == op.epoch and owner and owner != op.owner):
                    raise FencedError(
                        f"memory store: tocsin fenced: epoch {op.epoch} of {op.owner!r} "
                        f"against {epoch} of {owner!r} for {op.kind}/{op.identity}"
                    )
        for op in ops:
            if isinstance(op, Fence):
                self._fences[op.kind, op.identity] = (op.epoch, op.owner)
            elif isinstance(op, PutState):
                self._state[op.kind, op.identity, op.key] = op.value
            elif isinstance(op, DeleteState):
                self._state.pop((op.kind, op.identity, op.key), None)
            elif isinstance(op, DeleteTask):
                self._tasks.pop((op.kind, op.identity, op.id), None)
            elif isinstance(op, RecordTick):
                key = (op.kind, op.identity, op.id)
                ring = self._history.get(key)
                if ring is None:
                    ring = self._history[key] = deque(maxlen=HISTORY_LIMIT)
                ring.append(msgspec.structs.replace(op, instant=float(op.instant), at=float(op.at)))
            elif isinstance(op, DeleteHistory):
                self._history.pop((op.kind, op.identity, op.id), None)
            elif isinstance(op, PauseTask):
                key = (op.kind, op.identity, op.id)
                old = self._tasks.get(key)
                if old is not None:
                    paused = op.paused_at is not None
                    self._tasks[key] = msgspec.structs.replace(
                        old,
                        paused_at=None if op.paused_at is None else float(op.paused_at),
                        pause_note=op.note if paused else None,
                        paused_by=op.by if paused else None,
                    )
            else:
                row = _as_floats(op.row)
                key = (row.kind, row.identity, row.id)
                old = self._tasks.get(key)
                if old is not None and old.paused_at is not None:
                    # The SQL stores' upsert leaves the pause columns alone: so does this.
                    row = msgspec.structs.replace(
                        row,
                        paused_at=old.paused_at,
                        pause_note=old.pause_note,
                        paused_by=old.paused_by,
                    )
                elif row.paused_at is not None and old is not None:
                    row = msgspec.structs.replace(
                        row, paused_at=None, pause_note=None, paused_by=None
                    )
                self._tasks[key] = row

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None:
        """The value of ``storage[key]``, or ``None``."""
        return self._state.get((kind, identity, key))

    async def list_state(
        self, kind: str, identity: str, prefix: str = ""
    ) -> list[tuple[str, bytes]]:
        """Keys starting with ``prefix`` and their values, sorted by key (code points)."""
        return sorted(
            (key, value)
            for (k, i, key), value in self._state.items()
            if k == kind and i == identity and key.startswith(prefix)
        )

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None:
        """One task by primary key, or ``None``."""
        return self._tasks.get((kind, identity, task_id))

    async def list_tasks(
        self,
        kind: str | None = None,
        identity: str | None = None,
        state: TaskState | None = None,
    ) -> list[TaskRow]:
        """Tasks matching the filters, ordered by ``(due, id, kind, identity)``."""
        rows = [
            row
            for row in self._tasks.values()
            if (kind is None or row.kind == kind)
            and (identity is None or row.identity == identity)
            and (state is None or row.state == state)
        ]
        return sorted(rows, key=_order)

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        """Every task with this id, across actors, ordered like :meth:`list_tasks`."""
        return sorted((row for row in self._tasks.values() if row.id == task_id), key=_order)

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        """This actor's pending tasks due at or before ``before``, by ``(due, id)``."""
        rows = [
            row
            for row in self._tasks.values()
            if row.kind == kind
            and row.identity == identity
            and row.state == "pending"
            and row.due <= before
        ]
        return sorted(rows, key=_order)[: max(limit, 0)]

    async def due_work(self, kind: str, identity: str, before: float, limit: int) -> DueWork:
        """``due_tasks`` and the earliest pending ``due`` after ``before`` (one drain's read)."""
        rows = await self.due_tasks(kind, identity, before, limit)
        later = [
            row.due
            for row in self._tasks.values()
            if row.kind == kind
            and row.identity == identity
            and row.state == "pending"
            and row.due > before
        ]
        return DueWork(rows, min(later, default=None))

    async def next_due(self, kind: str, identity: str) -> float | None:
        """The earliest ``due`` among this actor's pending tasks, or ``None``."""
        dues = [
            row.due
            for row in self._tasks.values()
            if row.kind == kind and row.identity == identity and row.state == "pending"
        ]
        return min(dues, default=None)

    async def task_history(self, kind: str, identity: str, task_id: str) -> list[TickRow]:
        """One task's history, oldest first (at most ``HISTORY_LIMIT`` entries)."""
        return list(self._history.get((kind, identity, task_id), ()))

    async def fence_epoch(self, kind: str, identity: str) -> int:
        """The highest epoch fenced for ``(kind, identity)`` (0 if none)."""
        return self._fences.get((kind, identity), (0, ""))[0]

    # --- stored schedules (ScheduleStore) -----------------------------------------------

    async def schedule_rows(self) -> list[ScheduleRow]:
        """Every stored schedule, by id."""
        return [self._schedules[key] for key in sorted(self._schedules)]

    async def schedule_page(self, after: str, limit: int) -> list[ScheduleRow]:
        """At most ``limit`` stored schedules with ids after ``after``, by id."""
        ids = self._schedule_ids
        if ids is None:
            ids = self._schedule_ids = sorted(self._schedules)
        start = bisect.bisect_right(ids, after)
        return [self._schedules[key] for key in ids[start : start + max(limit, 0)]]

    async def schedule_row(self, schedule_id: str) -> ScheduleRow | None:
        """One stored schedule, or ``None``."""
        return self._schedules.get(schedule_id)

    async def schedule_rows_of(self, schedule_ids: Sequence[str]) -> dict[str, ScheduleRow]:
        """The stored schedules of ``schedule_ids`` by id (the missing left out)."""
        found = self._schedules
        return {sid: found[sid] for sid in schedule_ids if sid in found}

    async def write_schedule(self, row: ScheduleRow, *, expect: int | None) -> bool:
        """Insert if absent (``expect=None``) or compare-and-set on ``version``."""
        current = self._schedules.get(row.id)
        if expect is None:
            if current is not None:
                return False
            self._schedules[row.id] = row
            self._schedule_ids = None
        else:
            if current is None or current.version != expect:
                return False
            self._schedules[row.id] = msgspec.structs.replace(
                current, spec=row.spec, version=row.version, updated_at=float(row.updated_at)
            )
        self._revision += 1
        return True

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Remove one schedule (its ledger stays); whether it existed."""
        if self._schedules.pop(schedule_id, None) is None:
            return False
        self._schedule_ids = None
        self._revision += 1
        return True

    async def pause_schedule_row(self, schedule_id: str, pause: SchedulePause) -> bool:
        """Set the pause state (not the version); whether the schedule exists."""
        current = self._schedules.get(schedule_id)
        if current is None:
            return False
        self._schedules[schedule_id] = msgspec.structs.replace(
            current, paused=pause.paused, note=pause.note, paused_by=pause.by, paused_at=pause.at
        )
        self._revision += 1
        return True

    async def schedules_revision(self) -> int:
        """Moves at every change of a stored schedule."""
        return self._revision

    async def record_schedule_tick(
        self, row: ScheduleTickRow, keep: int, *, replace: bool = True
    ) -> None:
        """Write the ledger row of ``(id, instant, manual)``, keep the newest ``keep``."""
        row = msgspec.structs.replace(row, instant=float(row.instant), at=float(row.at))
        rows = self._ledger.setdefault(row.id, {})
        key = (row.instant, row.manual)
        old = rows.get(key)
        if old is not None and not replace:
            return
        if old is not None and row.started is None and old.started is not None:
            row = msgspec.structs.replace(row, started=old.started)
        rows[key] = row
        if len(rows) > keep:
            for old_key in sorted(rows)[: len(rows) - keep]:
                del rows[old_key]

    async def schedule_ticks(
        self, schedule_id: str, limit: int | None = None
    ) -> list[ScheduleTickRow]:
        """One schedule's ledger, oldest first (the newest ``limit`` with a limit)."""
        rows = self._ledger.get(schedule_id, {})
        ordered = [rows[instant] for instant in sorted(rows)]
        return ordered if limit is None else ordered[max(len(ordered) - limit, 0) :]

    async def schedule_last_instants(
        self, first: str | None = None, last: str | None = None
    ) -> dict[str, float]:
        """The newest instant of each schedule's ledger, manual runs aside, by id (from
        ``first`` to ``last`` when given)."""
        newest: dict[str, float] = {}
        for sid, rows in self._ledger.items():
            if (first is not None and sid < first) or (last is not None and sid > last):
                continue
            instants = [instant for instant, manual in rows if not manual]
            if instants:
                newest[sid] = max(instants)
        return newest

    async def schedule_tick(
        self, schedule_id: str, instant: float, *, manual: bool = False
    ) -> ScheduleTickRow | None:
        """The ledger row of one instant (a manual run's: ``manual``), or ``None``."""
        return self._ledger.get(schedule_id, {}).get((float(instant), manual))

    async def claim_schedule_ticks(
        self, claims: Sequence[tuple[str, float]], node: str, now: float
    ) -> list[bool]:
        """:meth:`claim_schedule_tick` for each ``(key, expires)`` of ``claims``, in order,
        in one step; whether each call won."""
        return [await self.claim_schedule_tick(key, node, now, until) for key, until in claims]

    async def claim_schedule_tick(self, key: str, node: str, now: float, expires: float) -> bool:
        """Put-if-absent ``key`` until ``expires`` (an expired claim is replaced)."""
        held = self._claims.get(key)
        if held is not None and held > now:
            return False
        if len(self._claims) > 1024:  # purge the expired now and then, as the SQL stores do
            for stale in [k for k, until in self._claims.items() if until <= now]:
                del self._claims[stale]
        self._claims[key] = float(expires)
        return True

    async def request_schedule_run(self, request: ScheduleRequest) -> None:
        """Record a run asked for (once) and move the revision."""
        key = (request.id, float(request.instant), request.manual)
        if key not in self._requests:
            self._requests[key] = request
            self._revision += 1

    async def schedule_requests(self) -> list[ScheduleRequest]:
        """The requests not yet done, oldest instant first."""
        return sorted(self._requests.values(), key=lambda r: (r.instant, r.id))

    async def delete_schedule_request(self, request: ScheduleRequest) -> None:
        """Forget a request."""
        self._requests.pop((request.id, float(request.instant), request.manual), None)

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        """Actors with a pending task due at or before ``before``, earliest first.

        Ties are broken by ``(kind, identity)``; at most ``limit`` actors.
        """
        earliest: dict[tuple[str, str], float] = {}
        for row in self._tasks.values():
            if row.state == "pending" and row.due <= before:
                actor = (row.kind, row.identity)
                if actor not in earliest or row.due < earliest[actor]:
                    earliest[actor] = row.due
        ordered = sorted(earliest.items(), key=lambda item: (item[1], item[0]))
        return [DueActor(kind, identity, due) for (kind, identity), due in ordered[: max(limit, 0)]]


def _order(row: TaskRow) -> tuple[float, str, str, str]:
    return (row.due, row.id, row.kind, row.identity)


def _as_floats(row: TaskRow) -> TaskRow:
    """Store times as floats, as the SQL stores do (``due=5`` reads back as ``5.0``)."""
    return msgspec.structs.replace(
        row,
        due=float(row.due),
        created_at=float(row.created_at),
        every=None if row.every is None else float(row.every),
        timeout=None if row.timeout is None else float(row.timeout),
    )
