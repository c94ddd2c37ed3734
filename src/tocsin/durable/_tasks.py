# SPDX-License-Identifier: Apache-2.0
"""One identity's tasks as a :class:`Tasks` object: add (queue/schedule/every/cron),
cancel, list, pause, resume, trigger, backfill, history and the parked list.

Every check happens here, at the call: a bad delay raises ``InvalidIntervalError``, a
payload outside the codec-safe set ``CodecError``, a bad ``max_retries`` ``ValueError``
— never later, when the task would run.

A :class:`Tasks` works through a :class:`TaskHost`, which says how its writes are made
and who learns of them. Inside the actor (``self.pause_schedule(...)``) the host is the
identity's handle: writes join an open ``transaction()``, the drain in progress learns
which tasks were replaced or cancelled, and the alarm is armed in place. Outside it
(``system.durable_tasks(Kind, id)``, an operator) the host writes to the store at once
and wakes the identity: nothing waits behind the identity's running task (a read of a
history waited seven minutes behind a seven-minute run through an ask).
"""

from __future__ import annotations

import difflib
import itertools
import os
import random
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, final

import msgspec

from .._codec import encode
from .._deadlines import to_seconds
from ..actor._spi import Outcome, TickOutcome
from ..errors import TaskNotFoundError
from ..stores import (
    DeleteHistory,
    DeleteTask,
    Op,
    PauseTask,
    RecordTick,
    TaskRow,
    TickRow,
    UpsertTask,
)
from ._checks import check_note, check_retries, check_size, check_text
from ._kinds import default_on_task_base
from ._manual import backfill_instants, backfill_rows, trigger_row
from ._plan import (
    Cursor,
    Instants,
    decode_policy,
    encode_policy,
    first_instant,
    jittered,
    paused_step,
)
from ._policy import TaskPolicy
from ._records import TaskRecord, record_from_row
from ._writes import MISSING, UNSURE

if TYPE_CHECKING:
    from ..stores import Store

__all__ = ["TaskHost", "Tasks", "tick_outcome"]

Method = str | Callable[..., Any]

_SEQUENCE = itertools.count()
# Ids need to be unique, not secret: a PRNG seeded once from the OS costs ~0.1 µs a call,
# where os.urandom is a system call (10 µs each on this VM, bench/durable.py profile).
_RANDOM = random.Random(os.urandom(16))
# A forked child inherits the PRNG's state: reseed it, or parent and child would make the
# same ids (and an upsert by id would silently overwrite one task with the other).
os.register_at_fork(after_in_child=lambda: _RANDOM.seed(os.urandom(16)))


def _method_name(method: Method) -> str:
    name = method if isinstance(method, str) else getattr(method, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(
            f"`method` must be a method name (str) or a method of the actor, got {method!r}"
        )
    return name


def check_method(cls: type, name: str) -> None:
    """Raise at the call if a task naming ``name`` could never run on ``cls``.

    A task whose name matches no method used to be silently lost (the default
    ``on_task`` does nothing; issue 10, item 8). A class that overrides ``on_task``
    handles such names itself, so it may schedule any name.

    Raises:
        AttributeError: ``cls`` has no callable ``name`` and does not override
            ``on_task``; the message suggests close names.
    """
    if callable(getattr(cls, name, None)):
        return  # the common case: one attribute lookup
    base = default_on_task_base(cls)
    if base is None:
        return
    mine = [n for n in dir(cls) if n not in base and callable(getattr(cls, n, None))]
    close = difflib.get_close_matches(name, mine, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise AttributeError(
        f"{cls.__qualname__} has no method {name!r} to run as a task{hint} "
        "(define it, or override on_task to handle tasks without a method)"
    )


def _check_id(task_id: Any, now: float) -> str:
    if task_id is None:
        # Time-ordered, like UUIDv7: milliseconds, a counter, then random bits. New rows
        # land at the right edge of the primary-key B-tree instead of on random pages, and
        # tasks due at the same time run in the order they were made (the stores order by
        # (due, id)), so `queue` is FIFO even when the clock did not move in between.
        return (
            f"{max(0, int(now * 1000)):012x}{next(_SEQUENCE) & 0xFFFFFFFF:08x}"
            f"{_RANDOM.getrandbits(48):012x}"
        )
    if not isinstance(task_id, str):
        raise TypeError(f"`id` must be a non-empty str or None, got {task_id!r}")
    return check_text(task_id, "id")


class TaskHost(Protocol):
    """What a :class:`Tasks` uses of its identity: where rows live and how a write is
    made and announced (the handle inside the actor, an operator's view outside it)."""

    @property
    def kind(self) -> str: ...
    @property
    def identity(self) -> str: ...
    @property
    def store(self) -> Store: ...
    @property
    def timezone(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def running_id(self) -> str | None: ...
    def change(
        self, ops: Sequence[Op], touched: Iterable[str] = (), due: float | None = None
    ) -> Awaitable[None]:
        """Write ``ops``, tell whoever drains the identity's tasks that ``touched``
        changed (a drain in progress leaves their rows alone), and make sure the
        identity's alarm rings by ``due``: one call, so a task change crosses into its
        host once."""
        ...

    def settle(self) -> Awaitable[None]:
        """Wait until the task changes made through ``change`` are committed (a read
        that follows must see them)."""
        ...

    def gated_task(self, task_id: str) -> Any:
        """Task ``task_id`` as a change made through ``change`` and not yet committed
        leaves it: its row, ``None`` (deleted), ``UNSURE`` or ``MISSING`` (none: the
        store has the latest)."""
        ...


@final
class Tasks:
    """The tasks of one durable identity (internal): every call checks its arguments
    first, reads the store, and writes through its host."""

    __slots__ = ("host",)

    def __init__(self, host: TaskHost) -> None:
        self.host = host

    async def add(
        self,
        cls: type,
        max_value_bytes: int,
        now: float,
        method: Method,
        payload: Any,
        *,
        delay: float,
        every: float | None,
        task_id: str | None,
        max_retries: int,
        timeout: float | timedelta | None,
        cron: tuple[str, str] | None = None,
        policy: TaskPolicy | None = None,
    ) -> str:
        """Insert or replace a task; arm the alarm. Returns the task id.

        ``cron`` is ``(expression, zone name)`` for a cron task (``every`` is then
        ``None`` and ``delay`` leads to its first fire time). ``policy`` (``None``: the
        defaults) is stored with it; its first instant skips what the calendar
        excludes, and its due time carries the jitter. Replacing a paused task keeps
        its pause (the store's upsert never writes it).
        """
        host = self.host
        # This module's own checks first, then the codec's and the limits': a call
        # crosses into each module once (bench/_durable_trace.py counts it).
        name = _method_name(method)
        check_method(cls, name)
        tid = _check_id(task_id, now)
        data = encode(payload)
        data = check_size(data, max_value_bytes, "payload")
        retries = check_retries(max_retries)
        budget = None if timeout is None else to_seconds(timeout, "timeout")
        due = now + delay
        created = now
        expression, zone_name = cron if cron is not None else (None, None)
        stored: bytes | None = None
        if policy is not None:
            if zone_name is None and policy.exclude is not None:
                # An `every` task's calendar is read in the system's zone: recorded, so
                # that every process (tocsin tasks backfill too) reads it in the same one.
                zone_name = host.timezone
            instants = Instants(every, expression, zone_name or host.timezone, policy, anchor=due)
            if instants.recurring:
                instant, due = first_instant(tid, due, policy, instants)
                if instant is None:
                    instant = due  # a cron whose fires are all excluded: the drain drops it
            else:
                instant, due = due, jittered(tid, due, policy, instants)
            stored = encode_policy(policy, Cursor(instant=instant))
        if task_id is not None:
            # The gated change of this id in flight, if any: registering many tasks by
            # id in one turn does not wait for each one's commit before the next.
            old = host.gated_task(tid)
            if old is MISSING or old is UNSURE:
                if old is UNSURE:
                    await host.settle()
                old = await host.store.get_task(host.kind, host.identity, tid)
            if old is not None:
                created = old.created_at
                if (
                    (every is not None or cron is not None)
                    and old.state == "pending"
                    and old.every == every
                    and old.cron == expression
                    and old.timezone == zone_name
                    and old.name == name
                    and old.payload == data
                    and old.max_retries == retries
                    and _same_policy(old.policy, policy)
                ):
                    # Re-registering the same recurring task (pre_start on every
                    # activation) keeps its cadence instead of pushing its next run away.
                    return tid
        row = TaskRow(
            kind=host.kind,
            identity=host.identity,
            id=tid,
            name=name,
            payload=data,
            due=due,
            every=every,
            attempts=0,
            max_retries=retries,
            created_at=created,
            state="pending",
            last_error=None,
            timeout=budget,
            cron=expression,
            timezone=zone_name,
            policy=stored,
        )
        await host.change([UpsertTask(row)], (tid,), due)
        return tid

    async def get(self, task_id: object) -> TaskRow:
        """The row of task ``task_id``.

        Raises:
            TaskNotFoundError: no such task.
            TypeError: ``task_id`` is not a str.
        """
        if not isinstance(task_id, str):
            raise TypeError(f"`id` must be a str, got {task_id!r}")
        host = self.host
        await host.settle()
        row = await host.store.get_task(host.kind, host.identity, task_id)
        if row is None:
            raise TaskNotFoundError(f"no task {task_id!r} for {host.kind}/{host.identity}")
        return row

    async def trigger(self, task_id: str, now: float) -> str:
        """One manual run of task ``task_id`` now, beside it (its due time is unchanged;
        a paused task runs too: an explicit "run it now")."""
        child = trigger_row(await self.get(task_id), now)
        host = self.host
        await host.change([UpsertTask(child)], (child.id,), child.due)
        return child.id

    async def backfill(
        self, task_id: str, start: object, end: object, now: float, *, dry_run: bool
    ) -> list[datetime]:
        """The instants of task ``task_id`` in ``[start, end)`` not after ``now``; unless
        ``dry_run``, one run of each, oldest first, paced at its ``misfire.rate``."""
        begin, finish = _moment(start, "start"), _moment(end, "end")
        row = await self.get(task_id)
        host = self.host
        instants = backfill_instants(row, begin, finish, host.timezone, now)
        if not dry_run and instants:
            children = backfill_rows(row, instants, now)
            await host.change(
                [UpsertTask(child) for child in children],
                [child.id for child in children],
                children[0].due,
            )
        return [datetime.fromtimestamp(instant, UTC) for instant in instants]

    async def history(self, task_id: str, *, missing_ok: bool = True) -> list[TickOutcome]:
        """What became of task ``task_id``'s recent instants, oldest first.

        Raises:
            TaskNotFoundError: not ``missing_ok``, and there is neither such a task nor
                a history under its id.
        """
        if not isinstance(task_id, str):
            raise TypeError(f"`id` must be a str, got {task_id!r}")
        host = self.host
        await host.settle()
        rows = await host.store.task_history(host.kind, host.identity, task_id)
        if not rows and not missing_ok:
            await self.get(task_id)  # raises for an unknown id
        return [tick_outcome(row) for row in rows]

    async def cancel(self, task_id: str, *, missing_ok: bool | None) -> bool:
        """Delete a task (pending or parked) and its history; return whether it existed.

        ``missing_ok=None`` (the old signature): an unknown id returns ``False`` with a
        :class:`DeprecationWarning` (it will raise); ``True``: ``False`` quietly;
        ``False``: :class:`TaskNotFoundError`.
        """
        if not isinstance(task_id, str):
            raise TypeError(f"`id` must be a str, got {task_id!r}")
        if missing_ok is not None and not isinstance(missing_ok, bool):
            raise TypeError(f"`missing_ok` must be a bool or None, got {missing_ok!r}")
        host = self.host
        await host.settle()
        existed = await host.store.get_task(host.kind, host.identity, task_id) is not None
        if not existed:
            if missing_ok is False:
                raise TaskNotFoundError(f"no task {task_id!r} for {host.kind}/{host.identity}")
            if missing_ok is None:
                warnings.warn(
                    f"cancel_schedule({task_id!r}): no such task of {host.kind}/"
                    f"{host.identity}; this will raise TaskNotFoundError (a "
                    "ScheduleNotFoundError) in the next release: pass missing_ok=True to "
                    "keep ignoring it, or missing_ok=False to raise now",
                    DeprecationWarning,
                    stacklevel=3,
                )
        await host.change(
            [
                DeleteTask(host.kind, host.identity, task_id),
                DeleteHistory(host.kind, host.identity, task_id),
            ],
            (task_id,),
        )
        return existed

    async def pause(self, task_id: str, now: float, note: object = None) -> None:
        """Pause task ``task_id``: its instants pass without a run, each recorded as
        ``paused`` with ``note``, until :meth:`resume`. Pausing a paused task changes
        nothing (its note stays the first one).

        Raises:
            TaskNotFoundError: no such task.
            TypeError, ValueError: ``note`` is not a str or None, or is too long.
        """
        text = check_note(note)
        row = await self.get(task_id)
        if row.paused_at is not None:
            return
        host = self.host
        await host.change([PauseTask(host.kind, host.identity, row.id, now, text, host.node)])

    async def resume(self, task_id: str, now: float) -> None:
        """Resume task ``task_id``: it goes on from now (its next instant after now; an
        instant that passed while it was paused is not a misfire and does not run).
        Resuming a task that is not paused changes nothing.

        Raises:
            TaskNotFoundError: no such task.
        """
        row = await self.get(task_id)
        if row.paused_at is None:
            return
        host = self.host
        ops: list[Op] = [PauseTask(host.kind, host.identity, row.id, None)]
        if row.state == "pending" and row.due <= now:
            # Instants that came due while paused and that no drain has seen yet: they
            # were paused, not missed; the task goes on after now.
            step, notes = paused_step(row, host.timezone, now, row.pause_note)
            ops.append(step)
            ops.extend(
                RecordTick(
                    host.kind,
                    host.identity,
                    row.id,
                    instant,
                    now,
                    outcome.value,
                    None if detail is None else str(detail),
                    host.node,
                )
                for instant, outcome, detail in notes
            )
        moved = ops[1] if len(ops) > 1 else None
        await host.change(ops, (row.id,), moved.row.due if isinstance(moved, UpsertTask) else None)

    async def list(self, state: str | None = None) -> list[TaskRecord]:
        """Every task (or those in ``state``), in due order."""
        host = self.host
        await host.settle()
        rows = await host.store.list_tasks(host.kind, host.identity, state)  # type: ignore[arg-type]
        running = host.running_id
        return [record_from_row(row, running=row.id == running) for row in rows]

    async def _parked(self, task_id: object) -> TaskRow:
        if not isinstance(task_id, str):
            raise TypeError(f"`id` must be a str, got {task_id!r}")
        host = self.host
        await host.settle()
        row = await host.store.get_task(host.kind, host.identity, task_id)
        if row is None or row.state != "parked":
            raise TaskNotFoundError(f"no parked task {task_id!r} for {host.kind}/{host.identity}")
        return row

    async def retry_parked(self, task_id: str, now: float) -> None:
        """Make a parked task pending again, due now, with its attempt count reset."""
        row = await self._parked(task_id)
        fresh = msgspec.structs.replace(row, due=now, attempts=0, state="pending")
        host = self.host
        await host.change([UpsertTask(fresh)], (row.id,), now)

    async def discard_parked(self, task_id: str) -> None:
        """Delete a parked task for good."""
        row = await self._parked(task_id)
        host = self.host
        await host.change([DeleteTask(host.kind, host.identity, row.id)], (row.id,))


def _same_policy(stored: bytes | None, policy: TaskPolicy | None) -> bool:
    """Whether a stored row's policies are ``policy`` (its cursor does not count)."""
    if stored is None:
        return policy is None
    try:
        kept = decode_policy(stored)[0]
    except Exception:  # a row this version cannot read is replaced
        return False
    # A task without policies keeps a default one while it retries (for its instant).
    return kept == policy if policy is not None else kept.is_default


def _moment(value: object, name: str) -> float:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise TypeError(f"`{name}` must be an aware datetime, got {value!r}")
    return value.timestamp()


def tick_outcome(row: TickRow) -> TickOutcome:
    """A stored history entry as a :class:`TickOutcome` (``coalesced``: detail an int)."""
    outcome = Outcome(row.outcome)
    detail: int | str | None = row.detail
    if outcome is Outcome.COALESCED and row.detail is not None and row.detail.isdigit():
        detail = int(row.detail)
    return TickOutcome(
        reference=row.id,
        instant=datetime.fromtimestamp(row.instant, UTC),
        at=datetime.fromtimestamp(row.at, UTC),
        outcome=outcome,
        detail=detail,
        node=row.node,
    )
