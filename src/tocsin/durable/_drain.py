# SPDX-License-Identifier: Apache-2.0
"""One identity's drain: run its due tasks inside its actor's turn, then commit.

The alarm of a :class:`~tocsin.durable._handle.DurableHandle` queues the drain turn
(:data:`DRAIN`, which finds the handle in its cell) into the actor's mailbox; the cell
runs it in mailbox order, so a task run never overlaps ``receive``. Completions go
through the handle's one write path, in batches of :data:`COMPLETION_BATCH`.

Delivery contract: **at least once**. A task row is deleted (or moved on) only after its
method returned; a crash in between runs it again on the next activation.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Protocol, cast, final

import msgspec

from ..actor._spi import Outcome, TickNotDelivered, Turn
from ..clock import WALL_TOLERANCE
from ..errors import FencedError
from ..stores import DeleteTask, DueWork, Op, RecordTick, TaskRow, UpsertTask
from ._cron import next_fire
from ._failure import describe_failure
from ._ops import DURATION_MASK
from ._plan import (
    Cursor,
    Notes,
    after_run,
    before_run,
    encode_policy,
    grid_after,
    paused_step,
    retry_row,
)
from ._policy import TaskPolicy
from ._records import TaskParked, record_from_row
from ._run import DROPPED, INTERRUPTED, RunHost, RunStop, TaskActor, run_task

if TYPE_CHECKING:
    from collections.abc import Awaitable, Sequence

    from ..actor._spi import PID, Cell
    from ..stores import Store
    from ._alarm import Alarm
    from ._ops import RunCounters
    from ._writes import Writes

    Planned = tuple[TaskPolicy, Cursor, float] | None

__all__ = ["COMPLETION_BATCH", "DRAIN", "DRAIN_LIMIT", "DrainHost", "DrainTurn", "drain"]

#: Task completions committed together during one drain.
COMPLETION_BATCH = 100
#: Most tasks one drain turn runs; more due tasks run in the next turn, so the actor's
#: other messages are not held up behind a long backlog.
DRAIN_LIMIT = 1000

_log = logging.getLogger("tocsin.durable")
_replace = msgspec.structs.replace
_DEFAULT = TaskPolicy()


class DrainRuntime(RunStop, Protocol):
    """What a drain reads of the durable runtime (``DurableRuntime`` is the one)."""

    @property
    def counters(self) -> RunCounters: ...
    @property
    def timezone(self) -> str: ...
    def complete(self, handle: DrainHost, ops: list[Op]) -> Awaitable[None]: ...


class DrainHost(RunHost, Protocol):
    """What a drain uses of its identity's handle (``DurableHandle`` is the one): a
    protocol, so this module does not import the handle or the actor class (issue 21).
    The drain writes nothing of the handle: it asks its parts (the alarm, the writes,
    the run in progress), each the one writer of its own state."""

    @property
    def durable(self) -> DrainRuntime: ...
    @property
    def store(self) -> Store: ...
    @property
    def kind(self) -> str: ...
    @property
    def identity(self) -> str: ...
    @property
    def pid(self) -> PID: ...
    @property
    def alarm(self) -> Alarm: ...
    @property
    def writes(self) -> Writes: ...
    @property
    def clock_now(self) -> bool: ...
    def wall_now(self, actor: TaskActor) -> float: ...
    def commit(self, ops: Sequence[Op]) -> Awaitable[None]: ...
    def settle(self) -> Awaitable[None]: ...


@final
class DrainTurn(Turn):
    """Run the identity's due tasks inside its actor's turn.

    One turn serves every identity (:data:`DRAIN`): it finds the identity's handle in
    the cell it runs in, which the handle made with itself as the factory of its actors
    (``DurableHandle.__call__``). A ring queues it as it is: no turn made per ring (nor
    a call into this module for it), and none kept by each of the handles in memory.
    """

    __slots__ = ()

    async def run(self, cell: Cell) -> None:
        handle = cast("DrainHost", cell.factory)  # a durable cell's factory: its handle
        try:
            # The task changes of earlier turns are committed before the drain reads
            # (the output gate, ._gate): it must see a replaced task's new row. The
            # list is read here: a drain with none to wait for crosses no module for it.
            if handle.writes.gated:
                await handle.settle()
            rearm, due = await drain(handle, cell)
        except FencedError:
            raise  # another owner holds the identity: the activation stops (supervisor)
        except Exception as exc:
            # A store call failed (issue 20, item 1): the alarm is kept, armed again after
            # a capped backoff, so the identity's tasks run once the store answers; the
            # tasks that ran and were not committed run again (at least once).
            handle.alarm.retry_later(exc, "a drain turn")
        else:
            if rearm:
                handle.alarm.drained(due)
            else:
                handle.alarm.calls_ok()


#: The drain turn an alarm queues (:meth:`DrainTurn.run`: one for every identity).
DRAIN: Final = DrainTurn()


async def drain(handle: DrainHost, cell: Cell) -> tuple[bool, float | None]:
    """Run every task of this actor due at the start of the turn, in due order.

    Returns whether the alarm is to be set again and to what (the identity's next due
    time, ``None``: no task left); not while the system stops (its start re-arms from
    the store)."""
    alarm, writes = handle.alarm, handle.writes
    alarm.drain_started()
    # Before the read, not after: a task cancelled while the read is in flight stays
    # cancelled (its stale row is skipped); one changed before it reads as changed.
    writes.drain_began()
    durable = handle.durable
    actor: TaskActor = cell.actor  # type: ignore[assignment]
    # handle.wall_now(actor), written out: the drain's start crosses no module for it.
    start = handle.runtime.clock.wall() if handle.clock_now else actor.now().timestamp()
    store = handle.store
    before = start + WALL_TOLERANCE
    read = getattr(store, "due_work", None)  # optional: a store without it reads next_due
    if read is not None:
        work: DueWork = await read(handle.kind, handle.identity, before, DRAIN_LIMIT)
        rows, later = work.rows, work.later
    else:
        rows, later = await store.due_tasks(handle.kind, handle.identity, before, DRAIN_LIMIT), None
    #: The earliest due among what this drain leaves pending (its own writes included):
    #: with ``later`` it sets the alarm, without a ``next_due`` read after the commit.
    soonest = later if len(rows) < DRAIN_LIMIT else rows[-1].due  # more due: drain again
    left = 0  # rows[left:] were not run (the drain ended early)
    ops: list[Op] = []
    parked: list[tuple[TaskRow, BaseException]] = []
    # Run counters (issue 14), read by tocsin.metrics at scrape time, inlined: an int add
    # per run; run durations (one clock read per run: the end of one run starts the
    # next) only once metrics are attached (``timed``).
    counters = durable.counters
    timed = counters.timed
    durations, mask = counters.durations, DURATION_MASK
    monotonic = handle.runtime.clock.monotonic
    started = monotonic() if timed else 0.0
    for row in rows:
        if durable.stopping:
            break  # no task starts once the system is stopping
        if not cell.alive_running():
            break
        left += 1
        if row.id in writes.touched:  # read anew: `Writes` alone writes it
            continue  # replaced or cancelled by an earlier task of this drain
        planned: Planned = None
        error: BaseException | None = None
        instant = row.due
        notes: Notes | None = None  # a list only where there is something to record
        if row.paused_at is not None:
            # Paused: its instants pass without a run, each recorded with the note.
            try:
                step_op, paused_notes = paused_step(row, durable.timezone, start, row.pause_note)
            except Exception as failure:  # e.g. a calendar that needs a missing package
                error = failure
            else:
                _record(handle, ops, row.id, paused_notes, start)
                ops.append(step_op)
                continue
        elif row.policy is not None:
            notes = []
            # Schedule policies (issue 22): which instant runs, or none (skipped,
            # missed, excluded: the row moves on without a run).
            try:
                step, policy, cursor = before_run(row, durable.timezone, start, notes)
            except Exception as failure:  # e.g. a calendar that needs a missing package
                error = failure
            else:
                if notes:
                    _record(handle, ops, cursor.of or row.id, notes, start)
                    notes = []
                if step.op is not None:
                    ops.append(step.op)
                    continue
                instant = step.instant
                planned = (policy, cursor, instant)
        # The run names itself as the run in progress (`CurrentRun`, its one writer).
        if error is None:
            error = await run_task(
                cell, actor, row, handle, instant, None if planned is None else planned[1]
            )
        counters.runs += 1
        if timed:
            ended = monotonic()
            timed_runs = counters.timed_runs
            durations[timed_runs & mask] = ended - started
            counters.timed_runs = timed_runs + 1
            started = ended
        if error is not None:
            counters.ended_with(error)
        if error is INTERRUPTED:
            left -= 1
            break  # the system is stopping: this task stays pending, untouched
        actor = cell.actor  # type: ignore[assignment]
        if row.id in writes.touched:  # read anew: `Writes` alone writes it
            continue  # the task rescheduled or cancelled itself: that write stands
        if error is DROPPED:
            ops.append(DeleteTask(row.kind, row.identity, row.id))
            continue
        origin = None if planned is None else planned[1].of
        if error is None and (origin is not None or _recurring(row)):
            # The history (issue 23): recurring tasks, and manual or backfilled runs of
            # one (under that task's id); a one-shot task's would only grow the store.
            if notes is None:
                notes = []
            notes.append((instant, Outcome.DELIVERED, None))
        ops.append(
            _completion(
                handle, actor, row, start, error, parked, durable.timezone, planned, instant, notes
            )
        )
        if notes:
            _record(handle, ops, origin or row.id, notes, start)
        if len(ops) >= COMPLETION_BATCH:
            soonest = _soonest(ops, soonest)
            await durable.complete(handle, ops)
            ops = []
            # A store call may complete without suspending (the SQLite store's small
            # commits run on the loop thread, the memory store's always): yield once
            # per batch so a long drain does not hold up the rest of the loop.
            await asyncio.sleep(0)
            if timed:
                started = monotonic()  # the commit and the yield are no run's time
    if ops:
        soonest = _soonest(ops, soonest)
        await durable.complete(handle, ops)
    for row, exc in parked:
        parked_row = await store.get_task(row.kind, row.identity, row.id)
        if parked_row is not None:
            handle.runtime.events.publish(TaskParked(handle.pid, record_from_row(parked_row), exc))
    if durable.stopping:
        return False, None  # the system is stopping: its start re-arms from the store
    if read is None:
        return True, await store.next_due(handle.kind, handle.identity)
    if left < len(rows):  # the activation stopped early: the rest is still due
        soonest = rows[left].due if soonest is None else min(soonest, rows[left].due)
    armed = alarm.due
    if armed is not None and (soonest is None or armed < soonest):
        # Armed during the drain for sooner (a task the actor wrote, an outside change a
        # poll found, or a poll that saw a task this drain ran): the store says what is
        # pending now. Taking the alarm as it is would ring an empty drain (an activation
        # turn and a read) for every identity a poll re-armed while it drained.
        return True, await store.next_due(handle.kind, handle.identity)
    return True, soonest


def _soonest(ops: list[Op], soonest: float | None) -> float | None:
    """``soonest`` lowered to the due time of every pending task ``ops`` write."""
    for op in ops:
        if op.__class__ is UpsertTask:
            row = op.row
            if row.state == "pending" and (soonest is None or row.due < soonest):
                soonest = row.due
    return soonest


def _recurring(row: TaskRow) -> bool:
    return row.every is not None or row.cron is not None


def _record(handle: DrainHost, ops: list[Op], reference: str, notes: Notes, at: float) -> None:
    """The history entries of ``notes`` (issue 23), written with the drain's batch; every
    outcome but ``delivered`` is also a :class:`TickNotDelivered` event, whose reference
    is the task's path (``/durable/<kind>/<identity>/<id>``: unique in the system), and
    counted for ``tocsin_schedule_ticks_total`` under that reference."""
    runtime = handle.runtime
    node = runtime.name
    for instant, outcome, detail in notes:
        if outcome is not Outcome.DELIVERED:
            path = f"/durable/{handle.kind}/{handle.identity}/{reference}"
            # tocsin_schedule_ticks_total counts what the event tells.
            handle.durable.counters.outcome(path, outcome.value)
            runtime.events.publish(
                TickNotDelivered(path, datetime.fromtimestamp(instant, UTC), outcome, detail, node)
            )
        ops.append(
            RecordTick(
                handle.kind,
                handle.identity,
                reference,
                instant,
                at,
                outcome.value,
                None if detail is None else str(detail),
                node,
            )
        )


def _completion(
    handle: DrainHost,
    actor: TaskActor,
    row: TaskRow,
    start: float,
    error: BaseException | None,
    parked: list[tuple[TaskRow, BaseException]],
    default_zone: str,
    planned: Planned = None,
    instant: float = 0.0,
    notes: Notes | None = None,
) -> Op:
    if planned is not None:
        policy, cursor, instant = planned
        if error is None:
            if policy.is_default and cursor.instant == instant and not cursor.queue:
                # A plain task's retry succeeded (its blob only kept the instant).
                row = _replace(row, policy=None)
            else:
                end = handle.wall_now(actor)
                return after_run(row, policy, cursor, instant, start, end, default_zone, notes)
        else:
            row = retry_row(row, policy, cursor, instant)
    elif error is not None and error is not DROPPED:
        # A plain task keeps its nominal instant for its retries (current_task).
        row = _replace(row, policy=encode_policy(_DEFAULT, Cursor(instant=instant)))
    if error is None:
        if row.cron is not None:
            nxt = next_fire(row.cron, row.timezone or default_zone, row.due, start)
            if nxt is None:  # the expression has no further fire time: done
                return DeleteTask(row.kind, row.identity, row.id)
            return UpsertTask(_replace(row, due=nxt, attempts=0, last_error=None))
        every = row.every
        if every is None:
            return DeleteTask(row.kind, row.identity, row.id)
        # The task's grid (its instant plus whole intervals), never re-anchored: the
        # first grid instant after the start of the run. An on-time run makes that one
        # interval after it; a catch-up run after downtime goes back onto the grid
        # instead of shifting every later run by its lateness.
        return UpsertTask(
            _replace(row, due=grid_after(instant, every, start), attempts=0, last_error=None)
        )
    attempts = row.attempts + 1
    decision = actor.retry_policy.decide(error, attempts, row.max_retries)
    # With the traceback (issue 10, item 13): a failing task must be visible without
    # turning on DEBUG. ERROR once it is parked (it needs an operator), else WARNING.
    _log.log(
        logging.ERROR if decision is None else logging.WARNING,
        "durable task %s/%s %s (%s) failed (attempt %d of %d)%s",
        row.kind,
        row.identity,
        row.id,
        row.name,
        attempts,
        row.max_retries + 1,
        "; parked" if decision is None else f"; retry in {decision.delay:.3g} s",
        exc_info=(type(error), error, error.__traceback__),
    )
    last_error = describe_failure(error)
    now = handle.wall_now(actor)
    if decision is None:
        parked.append((row, error))
        return UpsertTask(
            _replace(row, due=now, attempts=attempts, state="parked", last_error=last_error)
        )
    return UpsertTask(
        _replace(row, due=now + decision.delay, attempts=attempts, last_error=last_error)
    )
