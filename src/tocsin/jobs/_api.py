# SPDX-License-Identifier: Apache-2.0
"""``system.jobs`` and ``client.jobs``: enqueue runs, read and steer them in the store.

Both write the same task rows (:mod:`._worker` says what a run is stored as) through a
small :class:`JobBackend`: a running system wakes its own durable runtime after a write;
a :class:`~tocsin.Client`, which runs nothing, tells the store's watchers (PostgreSQL
``NOTIFY``; SQLite workers see the file change at their next change check). Every check
(the job, the arguments, the times) happens at the call, before anything is written.
"""

from __future__ import annotations

import itertools
import os
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol, final

import msgspec

from .._deadlines import Seconds, to_seconds
from ..actor import Tick
from ..durable import decode, encode
from ..errors import CodecError, TaskNotFoundError
from ..stores import DeleteTask, Store, TaskRow, UpsertTask
from ._registry import DEFAULT_MAX_RETRIES, JobSpec, check_max_retries, check_name, resolve
from ._worker import KIND_PREFIX, TASK_NAME, kind_of, shard_of

__all__ = ["MAX_ARGUMENT_BYTES", "JobBackend", "JobRun", "Jobs", "job_row"]

#: The largest encoded arguments of one run (the durable tasks' payload limit).
MAX_ARGUMENT_BYTES: Final = 1024 * 1024

_SEQUENCE = itertools.count()
# Unique, not secret (see durable's task ids): reseeded in a forked child.
_RANDOM = random.Random(os.urandom(16))
os.register_at_fork(after_in_child=lambda: _RANDOM.seed(os.urandom(16)))

RunState = Literal["pending", "running", "parked"]


class JobBackend(Protocol):
    """Where ``Jobs`` writes: the facade's durable store, or a client's."""

    async def store(self) -> Store:
        """The open store (raises ``ActorSystemNotStartedError`` when not started)."""
        ...

    def wall(self) -> float:
        """Now, in epoch seconds (through the owner's clock)."""
        ...

    async def written(self, kind: str, identity: str, due: float) -> None:
        """A run of ``kind``/``identity`` due at ``due`` was written: wake whoever runs it."""
        ...


@final
@dataclass(frozen=True, slots=True)
class JobRun:
    """A snapshot of one stored run of a job (``jobs.get``, ``jobs.list``).

    Attributes:
        job: the job's name.
        id: the run's id (what ``enqueue`` returned).
        args, kwargs: the arguments it will be called with.
        due: when it runs (aware UTC); for a parked run, when it last failed.
        attempts: failed runs so far.
        max_retries: retries allowed before it is parked.
        state: ``pending``, ``running`` or ``parked``.
        last_error: the last failure (type, text, innermost frames), if any.
        created_at: when it was first enqueued (aware UTC).
    """

    job: str
    id: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    due: datetime
    attempts: int
    max_retries: int
    state: RunState
    last_error: str | None
    created_at: datetime


def _run_of(row: TaskRow) -> JobRun:
    payload = decode(row.payload)
    args: Any = ()
    kwargs: Any = {}
    if isinstance(payload, dict):
        args = payload.get("a", ())
        kwargs = payload.get("k", {})
    return JobRun(
        job=row.kind[len(KIND_PREFIX) :],
        id=row.id,
        args=tuple(args) if isinstance(args, (list, tuple)) else (),
        kwargs=dict(kwargs) if isinstance(kwargs, dict) else {},
        due=datetime.fromtimestamp(row.due, UTC),
        attempts=row.attempts,
        max_retries=row.max_retries,
        state=row.state,
        last_error=row.last_error,
        created_at=datetime.fromtimestamp(row.created_at, UTC),
    )


def job_row(
    name: str,
    run_id: str,
    due: float,
    args: tuple[Any, ...] | list[Any],
    kwargs: dict[str, Any],
    *,
    max_retries: int,
    created_at: float,
    tick: Tick | None = None,
    ledger: tuple[int, int, bool] | None = None,
    at_most_once: bool = False,
) -> TaskRow:
    """The stored row of one run of job ``name`` (what a worker runs; stored schedules
    firing a job write these too, with the :class:`~tocsin.Tick` of the instant, which
    the run's ``ctx.tick`` then carries, and ``ledger``, the schedule's ``(version,
    history, again)``: the worker running it then keeps the instant's ledger row up to
    date: ``delivered`` with the start time, ``failed`` with the error's text,
    ``retried`` at a retry, or from the start when ``again``: a re-claimed instant).
    With ``ledger`` and ``at_most_once`` the run is at most once: the worker marks it
    started in the store before calling the job, and a run found started already (a
    crash or stop cut it) or failing is not run again; its row says ``failed``.

    Raises:
        CodecError: arguments that are not codec-safe, or over 1 MiB encoded.
    """
    payload: dict[str, Any] = {"a": list(args), "k": kwargs}
    if tick is not None:
        payload["t"] = tick.to_wire()
        if ledger is not None:
            payload["s"] = [ledger[0], ledger[1], ledger[2], at_most_once]
    data = encode(payload, name="job arguments")
    if len(data) > MAX_ARGUMENT_BYTES:
        raise CodecError(
            f"job arguments are {len(data):,} bytes encoded; the limit is "
            f"{MAX_ARGUMENT_BYTES:,} bytes: store large data elsewhere and pass a reference"
        )
    return TaskRow(
        kind=kind_of(name),
        identity=shard_of(run_id),
        id=run_id,
        name=TASK_NAME,
        payload=data,
        due=due,
        every=None,
        attempts=0,
        max_retries=max_retries,
        created_at=created_at,
    )


def _new_id(now: float) -> str:
    # Time-ordered like durable task ids: runs due together start in the order made.
    return (
        f"{max(0, int(now * 1000)):012x}{next(_SEQUENCE) & 0xFFFFFFFF:08x}"
        f"{_RANDOM.getrandbits(48):012x}"
    )


def _check_id(value: Any) -> str:
    if not isinstance(value, str) or not value or "\x00" in value:
        raise ValueError(f"`id` must be a non-empty str without NUL, or None, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"`id` must be text UTF-8 can encode, got {value!r}") from None
    return value


def _job_name(target: Any) -> tuple[str, JobSpec | None]:
    """A job's name and, if this process registered it, its spec.

    A name this process never registered is accepted (a web worker may enqueue a job
    whose code only the workers import); a function must carry ``@job``.
    """
    if isinstance(target, str):
        try:
            spec = resolve(target)
        except LookupError:
            return check_name(target), None
        return spec.name, spec
    spec = resolve(target)
    return spec.name, spec


def _due(now: float, delay: Seconds | None, at: datetime | None) -> float:
    if delay is not None and at is not None:
        raise ValueError(f"give `delay` or `at`, not both (got delay={delay!r}, at={at!r})")
    if at is not None:
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise ValueError(f"`at` must be an aware datetime, got {at!r}")
        return at.timestamp()
    if delay is None:
        return now
    if delay == 0 and not isinstance(delay, bool):
        return now
    return now + to_seconds(delay, "delay")


@final
class Jobs:
    """Enqueue and steer runs of jobs: ``system.jobs`` and ``client.jobs``.

    Made by tocsin (no public constructor): reach it through a started
    :class:`~tocsin.ActorSystem` or an open :class:`~tocsin.Client`.
    """

    __slots__ = ("_backend",)

    def __init__(self, backend: JobBackend) -> None:
        self._backend = backend

    async def enqueue(
        self,
        f_or_name: Any,
        /,
        *args: Any,
        delay: Seconds | None = None,
        at: datetime | None = None,
        id: str | None = None,
        max_retries: int | None = None,
        **kwargs: Any,
    ) -> str:
        """Store one durable run of a job; return its id.

        The run happens **at least once**, on some worker that imported the job, as soon
        as it is due: a worker in this process is woken at once, another process within
        its store's change watch (PostgreSQL: at once through ``LISTEN/NOTIFY``; SQLite:
        about 10 ms on a worker of jobs) or the cluster's ``poll_interval``. A failed run
        is retried with the job's :class:`~tocsin.Retry`, then parked (the durable tasks'
        parked list).
        A run whose job no running worker knows waits in the store.

        Args:
            f_or_name: a function decorated with ``@job``, or a job's name (a name this
                process did not register is accepted: the workers know it).
            args, kwargs: the job's arguments, codec-safe (checked here).
            delay: seconds (or a timedelta) from now; default: now.
            at: an aware datetime instead of ``delay``.
            id: a stable id makes this an upsert: the pending run with that id (of this
                job) is replaced, never duplicated. A run with that id already in
                progress absorbs the call (the run finishes and the id is done): enqueue
                again after it to run once more.
            max_retries: retries before parking (default: the job's, else 5).

        Raises:
            JobNotFoundError: a function without ``@job``.
            CodecError: arguments that are not codec-safe, or over 1 MiB encoded.
            InvalidIntervalError: a bad ``delay``.
            ValueError: ``delay`` and ``at`` both given, a naive ``at``, a bad ``id`` or
                ``max_retries``.
            ActorSystemNotStartedError: the system (or client) is not started.
        """
        name, spec = _job_name(f_or_name)
        if max_retries is None:
            retries = spec.max_retries if spec is not None else DEFAULT_MAX_RETRIES
        else:
            retries = check_max_retries(max_retries)
        run_id = None if id is None else _check_id(id)
        # Checked before anything is read or written (the codec, the size).
        row = job_row(name, "-", 0.0, args, kwargs, max_retries=retries, created_at=0.0)
        backend = self._backend
        store = await backend.store()
        now = backend.wall()
        due = _due(now, delay, at)
        run_id = _new_id(now) if run_id is None else run_id
        kind, shard = kind_of(name), shard_of(run_id)
        created = now
        if id is not None:
            old = await store.get_task(kind, shard, run_id)
            if old is not None:
                created = old.created_at
        row = msgspec.structs.replace(row, identity=shard, id=run_id, due=due, created_at=created)
        await store.apply([UpsertTask(row)])
        await backend.written(kind, shard, due)
        return run_id

    async def get(self, f_or_name: Any, id: str) -> JobRun | None:
        """The stored run ``id`` of a job (pending, running or parked), or ``None``
        (never made, or finished: a run that succeeded is deleted)."""
        name, _ = _job_name(f_or_name)
        run_id = _check_id(id)
        row = await (await self._backend.store()).get_task(kind_of(name), shard_of(run_id), run_id)
        return None if row is None else _run_of(row)

    async def list(self, f_or_name: Any = None, *, state: RunState | None = None) -> list[JobRun]:
        """Stored runs of one job (or of every job), by due time; ``state`` filters."""
        if state is not None and state not in ("pending", "running", "parked"):
            raise ValueError(
                f"`state` must be 'pending', 'running', 'parked' or None, got {state!r}"
            )
        store = await self._backend.store()
        if f_or_name is None:
            rows = [
                r for r in await store.list_tasks(state=state) if r.kind.startswith(KIND_PREFIX)
            ]
        else:
            rows = await store.list_tasks(kind_of(_job_name(f_or_name)[0]), None, state)
        return [_run_of(r) for r in rows]

    async def retry_parked(self, f_or_name: Any, id: str) -> None:
        """Make parked run ``id`` pending again, due now, attempts reset.

        Raises:
            TaskNotFoundError: no parked run ``id`` of that job.
        """
        row = await self._parked(f_or_name, id)
        backend = self._backend
        now = backend.wall()
        fresh = TaskRow(
            kind=row.kind,
            identity=row.identity,
            id=row.id,
            name=row.name,
            payload=row.payload,
            due=now,
            every=None,
            attempts=0,
            max_retries=row.max_retries,
            created_at=row.created_at,
            timeout=row.timeout,
        )
        await (await backend.store()).apply([UpsertTask(fresh)])
        await backend.written(row.kind, row.identity, now)

    async def discard_parked(self, f_or_name: Any, id: str) -> None:
        """Delete parked run ``id``.

        Raises:
            TaskNotFoundError: no parked run ``id`` of that job.
        """
        row = await self._parked(f_or_name, id)
        await (await self._backend.store()).apply([DeleteTask(row.kind, row.identity, row.id)])

    async def _parked(self, f_or_name: Any, id: str) -> TaskRow:
        name, _ = _job_name(f_or_name)
        run_id = _check_id(id)
        row = await (await self._backend.store()).get_task(kind_of(name), shard_of(run_id), run_id)
        if row is None or row.state != "parked":
            raise TaskNotFoundError(f"job {name!r} has no parked run {run_id!r}")
        return row
