# SPDX-License-Identifier: Apache-2.0
"""Scheduling durable tasks: queue/schedule/every/cancel/list, parked-list management.

Every check happens here, at the call: a bad delay raises ``InvalidIntervalError``, a
payload outside the codec-safe set ``CodecError``, a bad ``max_retries`` ``ValueError``
— never later, when the task would run.
"""

from __future__ import annotations

import difflib
import itertools
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from .._codec import encode
from .._deadlines import to_seconds
from ..actor._spi import Outcome, TickOutcome
from ..errors import InvalidIntervalError, TaskNotFoundError
from ..stores import DeleteHistory, DeleteTask, TaskRow, TickRow, UpsertTask
from ._checks import check_retries, check_size, check_text
from ._manual import backfill_instants, backfill_rows, trigger_row
from ._plan import Cursor, Instants, decode_policy, encode_policy, first_instant, jittered
from ._policy import TaskPolicy
from ._records import TaskRecord, record_from_row

if TYPE_CHECKING:
    from ._handle import DurableHandle

__all__ = [
    "add_task",
    "backfill_task",
    "cancel_task",
    "discard_parked",
    "list_tasks",
    "retry_parked",
    "task_history",
    "tick_outcome",
    "trigger_task",
]

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
    from ._actor import DurableActor

    if getattr(cls, "on_task", None) is not DurableActor.on_task:
        return
    base = set(dir(DurableActor))  # suggest the class's own methods, not the base API
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


def delay_seconds(delay: Any, now: float) -> float:
    """``delay`` (seconds, timedelta, or an aware datetime: absolute) as seconds from now."""
    if isinstance(delay, datetime):
        if delay.tzinfo is None:
            raise InvalidIntervalError(f"`delay` as a datetime must be aware, got {delay!r}")
        return max(0.0, delay.timestamp() - now)
    return to_seconds(delay, "delay")


async def add_task(
    handle: DurableHandle,
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

    ``cron`` is ``(expression, zone name)`` for a cron task (``every`` is then ``None``
    and ``delay`` leads to its first fire time). ``policy`` (``None``: the defaults) is
    stored with it; its first instant skips what the calendar excludes, and its due time
    carries the jitter.
    """
    name = _method_name(method)
    check_method(handle.cls, name)
    retries = check_retries(max_retries)
    budget = None if timeout is None else to_seconds(timeout, "timeout")
    data = check_size(encode(payload), handle.cls.max_value_bytes, "payload")
    tid = _check_id(task_id, now)
    due = now + delay
    created = now
    expression, zone_name = cron if cron is not None else (None, None)
    stored: bytes | None = None
    if policy is not None:
        if zone_name is None and policy.exclude is not None:
            # An `every` task's calendar is read in the system's zone: recorded, so that
            # every process (tocsin tasks backfill too) reads it in the same one.
            zone_name = handle.durable.timezone
        instants = Instants(every, expression, zone_name or handle.durable.timezone, policy)
        if instants.recurring:
            instant, due = first_instant(tid, due, policy, instants)
            if instant is None:
                instant = due  # a cron whose fires are all excluded: the drain drops it
        else:
            instant, due = due, jittered(tid, due, policy, instants)
        stored = encode_policy(policy, Cursor(instant=instant))
    if task_id is not None:
        old = await handle.store.get_task(handle.kind, handle.identity, tid)
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
                # Re-registering the same recurring task (pre_start on every activation)
                # keeps its cadence instead of pushing its next run away each time.
                return tid
    row = TaskRow(
        kind=handle.kind,
        identity=handle.identity,
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
    await handle.write([UpsertTask(row)])
    handle.touched.add(tid)
    # Inside a transaction this arms before the commit: an early alarm is harmless, the
    # drain re-reads the store.
    handle.arm(due)
    return tid


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


async def _task(handle: DurableHandle, task_id: object) -> TaskRow:
    if not isinstance(task_id, str):
        raise TypeError(f"`id` must be a str, got {task_id!r}")
    row = await handle.store.get_task(handle.kind, handle.identity, task_id)
    if row is None:
        raise TaskNotFoundError(f"no task {task_id!r} for {handle.kind}/{handle.identity}")
    return row


async def trigger_task(handle: DurableHandle, task_id: str, now: float) -> str:
    """One manual run of task ``task_id`` now, beside it (its due time is unchanged)."""
    child = trigger_row(await _task(handle, task_id), now)
    await handle.write([UpsertTask(child)])
    handle.touched.add(child.id)
    handle.arm(child.due)
    return child.id


async def backfill_task(
    handle: DurableHandle, task_id: str, start: object, end: object, now: float, *, dry_run: bool
) -> list[datetime]:
    """The instants of task ``task_id`` in ``[start, end)``; unless ``dry_run``, one run
    of each, oldest first, paced at its ``misfire.rate``."""
    begin, finish = _moment(start, "start"), _moment(end, "end")
    row = await _task(handle, task_id)
    instants = backfill_instants(row, begin, finish, handle.durable.timezone, now)
    if not dry_run and instants:
        children = backfill_rows(row, instants, now)
        await handle.write([UpsertTask(child) for child in children])
        handle.touched.update(child.id for child in children)
        handle.arm(children[0].due)
    return [datetime.fromtimestamp(instant, UTC) for instant in instants]


def _moment(value: object, name: str) -> float:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise TypeError(f"`{name}` must be an aware datetime, got {value!r}")
    return value.timestamp()


async def task_history(handle: DurableHandle, task_id: str) -> list[TickOutcome]:
    """What became of task ``task_id``'s recent instants, oldest first."""
    if not isinstance(task_id, str):
        raise TypeError(f"`id` must be a str, got {task_id!r}")
    rows = await handle.store.task_history(handle.kind, handle.identity, task_id)
    return [tick_outcome(row) for row in rows]


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


async def cancel_task(handle: DurableHandle, task_id: str) -> bool:
    """Delete a task (pending or parked); return whether it existed."""
    if not isinstance(task_id, str):
        raise TypeError(f"`id` must be a str, got {task_id!r}")
    existed = await handle.store.get_task(handle.kind, handle.identity, task_id) is not None
    await handle.write(
        [
            DeleteTask(handle.kind, handle.identity, task_id),
            DeleteHistory(handle.kind, handle.identity, task_id),
        ]
    )
    handle.touched.add(task_id)
    return existed


async def list_tasks(handle: DurableHandle, state: str | None = None) -> list[TaskRecord]:
    rows = await handle.store.list_tasks(handle.kind, handle.identity, state)  # type: ignore[arg-type]
    return [record_from_row(row, running=row.id == handle.running_id) for row in rows]


async def _parked(handle: DurableHandle, task_id: str) -> TaskRow:
    row = await handle.store.get_task(handle.kind, handle.identity, task_id)
    if row is None or row.state != "parked":
        raise TaskNotFoundError(f"no parked task {task_id!r} for {handle.kind}/{handle.identity}")
    return row


async def retry_parked(handle: DurableHandle, task_id: str, now: float) -> None:
    """Make a parked task pending again, due now, with its attempt count reset."""
    row = await _parked(handle, task_id)
    fresh = msgspec.structs.replace(row, due=now, attempts=0, state="pending")
    await handle.write([UpsertTask(fresh)])
    handle.touched.add(task_id)
    handle.arm(now)


async def discard_parked(handle: DurableHandle, task_id: str) -> None:
    """Delete a parked task for good."""
    await _parked(handle, task_id)
    await handle.write([DeleteTask(handle.kind, handle.identity, task_id)])
