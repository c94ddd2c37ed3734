# SPDX-License-Identifier: Apache-2.0
"""DurableActor: an actor with an identity, persistent storage and persistent tasks.

The top of the durable package: it imports the package's modules and none of them
imports it back (the handle, the runtime and the tasks ask what they need of a class
through :mod:`._kinds`). Its task methods are thin: each checks its options and calls
the identity's :class:`~tocsin.durable._tasks.Tasks`.
"""

from __future__ import annotations

import difflib
import logging
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._deadlines import Seconds, to_seconds
from ..actor._spi import Actor, Misfire, Overlap, Supervisor
from ..errors import InvalidIntervalError, MethodNotFoundError
from . import _cron, _kinds
from ._checks import MAX_VALUE_BYTES, check_text
from ._policy import check_policy
from ._records import Call, TaskRecord
from ._retry import Retry, RetryPolicy

if TYPE_CHECKING:
    from ..actor._spi import ReceiveContext, Tick, TickOutcome
    from ..cron import Calendar, DSTPolicy
    from ._handle import DurableHandle
    from ._storage import Storage

__all__ = ["DurableActor"]

_log = logging.getLogger("tocsin.durable")

Method = str | Callable[..., Any]


class DurableActor(Actor):
    """An actor addressed by ``(kind, identity)``, with persistent storage and tasks.

    Get one with ``pid = await system.durable(Kind, "order-42")``: it is activated on
    demand (at most one activation per identity per system), may be passivated, and is
    reactivated by a message or by its alarm. Subclasses are registered by ``kind``
    (the class attribute, default the class name) so that a restarted process can
    reactivate identities that have due tasks as soon as the class is imported.

    Task delivery is **at least once**: write task methods to be idempotent.

    Class attributes you may override:
        kind: the stable name stored with every task (default: the class name).
        retry_policy: a :class:`~tocsin.Retry`: backoff of failed tasks and the failures
            worth a retry (default: ~1 s doubling, capped at 300 s, every ``Exception``).
        task_timeout: seconds a task may run before it counts as failed (default 900).
        passivate_after: idle seconds before passivation (default: never).
        supervisor: supervision of the activations (default: restart, 10 per minute).
        max_value_bytes: largest encoded payload or storage value (default 1 MiB);
            larger ones raise :class:`~tocsin.CodecError` at the call.
    """

    kind: str = "DurableActor"
    identity: str
    retry_policy: Retry = RetryPolicy()
    task_timeout: float = 900.0
    passivate_after: float | None = None
    supervisor: Supervisor | None = None
    max_value_bytes: int = MAX_VALUE_BYTES
    _handle: DurableHandle

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:
            cls.kind = cls.__name__
        if not isinstance(cls.kind, str) or not cls.kind or "/" in cls.kind:
            raise TypeError(
                f"`kind` of {cls.__qualname__} must be a str without '/', got {cls.kind!r}"
            )
        try:
            check_text(cls.kind, "kind")
        except ValueError as exc:
            raise TypeError(f"{cls.__qualname__}: {exc}") from None
        _kinds.register(cls, cls.kind)

    @property
    def storage(self) -> Storage:
        """This identity's persistent key-value storage (made on first use)."""
        return self._handle.storage

    # -- time --------------------------------------------------------------------------

    @_kinds.default_hook
    def now(self) -> datetime:
        """The time source of every scheduling decision (aware UTC; the system clock).

        Override it, or give the system a ``ManualClock``, to control time in tests.
        """
        return self._handle.runtime.clock.wall_datetime()

    def _now(self) -> float:
        # The handle's flag and clock read here, not through a call into the handle: a
        # schedule crosses into each module once (bench/_durable_trace.py).
        handle = self._handle
        return handle.runtime.clock.wall() if handle.clock_now else self.now().timestamp()

    @property
    def current_task(self) -> Tick | None:
        """The task run in progress, as a :class:`~tocsin.Tick` (``None`` outside one).

        ``reference`` is the task id, ``instant`` the nominal instant the run is for
        (aware UTC; a jittered, late, coalesced or replayed run still carries its own: a
        natural idempotency key), ``attempt`` 1 plus the retries so far, ``fence`` the
        owner's epoch in cluster mode (else ``None``).
        """
        return self._handle.current_tick()

    # -- tasks -------------------------------------------------------------------------

    async def queue(
        self,
        method: Method,
        payload: Any = None,
        *,
        id: str | None = None,
        max_retries: int = 5,
        timeout: Seconds | None = None,
    ) -> str:
        """Run ``self.<method>(payload)`` as soon as possible; returns the task id.

        Raises:
            CodecError: ``payload`` is not codec-safe.
            ValueError: ``max_retries`` is negative or not an int.
        """
        return await self._handle.tasks.add(
            type(self),
            self.max_value_bytes,
            self._now(),
            method,
            payload,
            delay=0.0,
            every=None,
            task_id=id,
            max_retries=max_retries,
            timeout=timeout,
        )

    async def schedule(
        self,
        delay: Seconds | datetime,
        method: Method,
        payload: Any = None,
        *,
        id: str | None = None,
        max_retries: int = 5,
        timeout: Seconds | None = None,
        misfire: Misfire = Misfire.ONCE,
        jitter: Seconds | None = None,
        exclude: Calendar | None = None,
    ) -> str:
        """Run ``self.<method>(payload)`` after ``delay`` (seconds, timedelta, or an aware
        datetime for an absolute time). A stable ``id`` replaces any task with that id.

        Policies (docs/durable.md "Policies"): of ``misfire`` only ``grace`` matters for
        a one-shot task (a run later than ``grace`` after its time is missed: not run);
        ``jitter`` delays it by a stable offset in ``[0, jitter)``; ``exclude``: a
        :class:`~tocsin.Calendar` on whose instants it does not run (it is dropped).

        Raises:
            InvalidIntervalError: ``delay`` is not a positive finite duration.
            ValueError: a policy option of the wrong kind.
        """
        now = self._now()
        if isinstance(delay, datetime):
            if delay.tzinfo is None:
                raise InvalidIntervalError(f"`delay` as a datetime must be aware, got {delay!r}")
            seconds = max(0.0, delay.timestamp() - now)
        else:
            seconds = to_seconds(delay, "delay")
        policy = check_policy(misfire=misfire, jitter=jitter, exclude=exclude)
        return await self._handle.tasks.add(
            type(self),
            self.max_value_bytes,
            now,
            method,
            payload,
            delay=seconds,
            every=None,
            task_id=id,
            max_retries=max_retries,
            timeout=timeout,
            policy=policy,
        )

    async def every(
        self,
        interval: Seconds,
        method: Method,
        payload: Any = None,
        *,
        id: str | None = None,
        max_retries: int = 5,
        timeout: Seconds | None = None,
        overlap: Overlap = Overlap.BUFFER_ONE,
        misfire: Misfire = Misfire.ONCE,
        jitter: Seconds | None = None,
        exclude: Calendar | None = None,
    ) -> str:
        """Run ``self.<method>(payload)`` every ``interval``, first one interval from now.

        Its instants are a grid, the first one plus whole intervals, never re-anchored:
        the next run is the first grid instant after the start of the run (one interval
        after an on-time run; back on the grid after a late one). The attempt count
        resets after each success. With a stable ``id`` this is an upsert;
        re-registering an identical task (same method, interval, payload, policies) keeps
        its cadence, so calling it from ``pre_start`` on every activation never piles up.

        Policies (docs/durable.md "Policies"): ``overlap`` (default ``BUFFER_ONE``) says
        what becomes of instants that come due while a run is in flight, ``misfire``
        (default ``Misfire.once()``) of instants missed while the system was down or the
        identity passivated; ``jitter`` (shorter than ``interval``) delays each instant
        by a stable offset from a hash of (id, instant); ``exclude`` (a
        :class:`~tocsin.Calendar`, evaluated in the system's zone) skips instants.

        Raises:
            InvalidIntervalError: ``interval`` is not a positive finite duration.
            ValueError: a policy option of the wrong kind, or ``jitter >= interval``.
        """
        seconds = to_seconds(interval, "interval")
        policy = check_policy(
            overlap=overlap, misfire=misfire, jitter=jitter, exclude=exclude, interval=seconds
        )
        return await self._handle.tasks.add(
            type(self),
            self.max_value_bytes,
            self._now(),
            method,
            payload,
            delay=seconds,
            every=seconds,
            task_id=id,
            max_retries=max_retries,
            timeout=timeout,
            policy=policy,
        )

    async def cron(
        self,
        expression: str,
        method: Method,
        payload: Any = None,
        *,
        id: str | None = None,
        timezone: str | None = None,
        max_retries: int = 5,
        timeout: Seconds | None = None,
        overlap: Overlap = Overlap.BUFFER_ONE,
        misfire: Misfire = Misfire.ONCE,
        dst: DSTPolicy | None = None,
        jitter: Seconds | None = None,
        exclude: Calendar | None = None,
    ) -> str:
        """Run ``self.<method>(payload)`` at each fire time of a cron expression.

        Quartz (6 or 7 fields) and, where :mod:`tocsin.cron` reads them, Unix (5 fields)
        expressions are accepted, evaluated in ``timezone`` (an IANA name; default: the
        system's zone, recorded with the task). After each run the task is due at the
        expression's next fire time after that run was due (or after now, if later):
        after downtime an overdue cron task runs once, then continues from the next
        future fire time, never once per missed fire. Failed runs are retried and parked
        as for every task; after a success the next fire time applies again.

        With a stable ``id`` this is an upsert; re-registering an identical task (same
        method, expression, zone, payload, ``max_retries``), as ``pre_start`` does on
        every activation, keeps its due time.

        Raises:
            InvalidCronExpressionError: malformed, or no fire time after now.
            InvalidTimezoneError: ``timezone`` is not an IANA zone name.
            CodecError: ``payload`` is not codec-safe or too large.
            ValueError: bad ``max_retries``, an ``id`` the stores cannot hold, or a
                policy option of the wrong kind (the message names it).
            AttributeError: the class has no such method and does not override
                :meth:`on_task`.
        """
        handle = self._handle
        now = self._now()
        policy = check_policy(
            overlap=overlap, misfire=misfire, dst=dst, jitter=jitter, exclude=exclude
        )
        zone_name = handle.durable.timezone if timezone is None else timezone
        due = _cron.first_fire(expression, zone_name, now, None if policy is None else dst)
        return await handle.tasks.add(
            type(self),
            self.max_value_bytes,
            now,
            method,
            payload,
            delay=max(0.0, due - now),
            every=None,
            task_id=id,
            max_retries=max_retries,
            timeout=timeout,
            cron=(expression, zone_name),
            policy=policy,
        )

    # -- operating tasks: the verbs of every schedule (DESIGN "One vocabulary") ----------

    async def pause_schedule(self, id: str, *, note: str | None = None) -> None:
        """Pause task ``id``: its instants pass without a run, each recorded in
        :meth:`schedule_history` as ``paused`` with ``note`` (why, for whoever looks
        later), until :meth:`resume_schedule`. The pause is stored with the task: it
        survives passivation and restarts, and re-registering the task (``pre_start``)
        keeps it. ``list_schedules()`` shows it (``paused``, ``note``, ``paused_at``,
        ``paused_by``). Pausing a paused task changes nothing (its note stays the first
        one). :meth:`trigger_schedule` still runs a paused task.

        Raises:
            TaskNotFoundError: no task ``id`` (a :class:`~tocsin.ScheduleNotFoundError`).
            TypeError: ``note`` is not a str or None.
            ValueError: ``note`` is longer than 4,096 bytes (UTF-8) or holds NUL.
        """
        await self._handle.tasks.pause(id, self._now(), note)

    async def resume_schedule(self, id: str) -> None:
        """Resume task ``id``: it goes on from now, at its next instant after now (an
        ``every`` task on its grid); the instants that passed while paused do not run
        (resuming is not a misfire). Resuming a task that is not paused changes nothing.

        Raises:
            TaskNotFoundError: no task ``id``.
        """
        await self._handle.tasks.resume(id, self._now())

    async def trigger_schedule(self, id: str) -> None:
        """Run task ``id`` once now, beside its schedule: its due time is unchanged.

        The run carries ``current_task.manual == True`` and the task id as
        ``reference`` (``instant``: now). It is a one-shot row of its own
        (``<id>@manual:<time>`` in ``list_schedules()``), serialized with the task's other
        runs in the actor's turn like every run, and retried and parked like any task.
        A paused task runs too (an explicit "run it now").

        Raises:
            TaskNotFoundError: no task ``id``.
        """
        await self._handle.tasks.trigger(id, self._now())

    async def backfill_schedule(
        self, id: str, start: datetime, end: datetime, *, dry_run: bool = False
    ) -> list[datetime]:
        """The instants task ``id`` has in ``[start, end)`` that are not in the future
        (aware UTC, oldest first, none its calendar excludes), and, unless ``dry_run``,
        one run of each, oldest first, at most its ``misfire.rate`` per second, with
        ``current_task.backfill == True`` and each its own ``instant``. An ``every``
        task's instants are its grid (its next instant minus whole intervals). A future
        instant is never backfilled: it runs once, when it comes due. Each run is a
        one-shot row beside the task (``<id>@backfill:<instant>``: backfilling an instant
        again replaces its pending run); the task's own schedule is untouched.

        Raises:
            TaskNotFoundError: no task ``id``.
            TypeError: ``start`` or ``end`` is not an aware datetime.
            ValueError: ``end`` not after ``start``, the task is not recurring, or more
                than 100,000 instants in the range.
        """
        return await self._handle.tasks.backfill(id, start, end, self._now(), dry_run=dry_run)

    async def schedule_history(self, id: str) -> list[TickOutcome]:
        """What became of task ``id``'s recent instants, oldest first (at most 64, kept in
        the store): ``delivered`` runs, and the instants that did not run (``paused``
        with the pause's note, ``missed``, ``excluded``, ``coalesced``,
        ``skipped_overlap``) with a detail. Recurring tasks have one (manual and
        backfilled runs included). Cancelling a task forgets it.

        Raises:
            TaskNotFoundError: no task ``id`` and no history under it.
        """
        return await self._handle.tasks.history(id, missing_ok=False)

    async def trigger(self, id: str) -> None:
        """Deprecated alias of :meth:`trigger_schedule` (one release)."""
        _renamed("trigger", "trigger_schedule")
        await self.trigger_schedule(id)

    async def backfill(
        self, id: str, start: datetime, end: datetime, *, dry_run: bool = False
    ) -> list[datetime]:
        """Deprecated alias of :meth:`backfill_schedule` (one release)."""
        _renamed("backfill", "backfill_schedule")
        return await self.backfill_schedule(id, start, end, dry_run=dry_run)

    async def task_history(self, id: str) -> list[TickOutcome]:
        """Deprecated alias of :meth:`schedule_history` (one release); unlike it, an
        unknown id gives an empty list."""
        _renamed("task_history", "schedule_history")
        return await self._handle.tasks.history(id)

    async def cancel_schedule(self, id: str, *, missing_ok: bool | None = None) -> bool:
        """Delete task ``id`` (pending or parked) and its history; return whether it
        existed.

        ``missing_ok``: ``True`` ignores an unknown id (returns ``False``), ``False``
        raises :class:`~tocsin.TaskNotFoundError` for it, as ``cancel_schedule`` does
        everywhere else. Left out (this release only), an unknown id returns ``False``
        with a :class:`DeprecationWarning`; the next release raises.

        Raises:
            TaskNotFoundError: no task ``id`` and ``missing_ok=False``.
        """
        return await self._handle.tasks.cancel(id, missing_ok=missing_ok)

    async def list_schedules(self) -> list[TaskRecord]:
        """Every task of this actor, parked ones included (``state == "parked"``)."""
        return await self._handle.tasks.list()

    async def list_parked(self) -> list[TaskRecord]:
        """Tasks that failed ``max_retries + 1`` times and will not run again by themselves."""
        return await self._handle.tasks.list("parked")

    async def retry_parked(self, id: str) -> None:
        """Make a parked task pending again, due now, attempts reset.

        Raises:
            TaskNotFoundError: no parked task ``id``.
        """
        await self._handle.tasks.retry_parked(id, self._now())

    async def discard_parked(self, id: str) -> None:
        """Delete a parked task. Raises ``TaskNotFoundError`` if there is none."""
        await self._handle.tasks.discard_parked(id)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """Commit the storage writes and task changes made in the block together.

        Nothing is written if the block raises. Nested blocks join the outer one.
        """
        handle = self._handle
        writes = handle.writes
        if not writes.begin():
            yield
            return
        try:
            yield
        except BaseException:
            writes.rollback()
            raise
        ops = writes.take()
        if ops:
            await handle.commit(ops)

    # -- hooks -------------------------------------------------------------------------

    @_kinds.default_hook
    async def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> None:
        """Called for a due task whose method does not exist (default: nothing, and the
        task counts as delivered)."""

    async def receive(self, ctx: ReceiveContext) -> None:
        """Default: answer :class:`~tocsin.durable.Call` messages; ignore anything else.

        Override it for your own messages and ``await super().receive(ctx)`` to keep
        ``Call`` working.
        """
        message = ctx.message
        if isinstance(message, Call):
            method = self._call_target(message.method, ctx)
            if method is None:
                return
            result = method(message.payload)
            if hasattr(result, "__await__"):
                result = await result
            ctx.respond(result)

    def _call_target(self, name: object, ctx: ReceiveContext) -> Callable[..., Any] | None:
        """The bound method a ``Call`` names, or ``None`` after failing the ask.

        A name that is private, reserved or unknown is the caller's mistake (a typo):
        the ask fails with a typed error and this actor is left alone. Raising it from
        ``receive`` would reach the supervisor and restart the callee for the caller's
        typo.
        """
        error: Exception
        if not isinstance(name, str) or name.startswith("_"):
            error = PermissionError(f"method {name!r} is not callable by messages")
        elif name in _RESERVED:
            error = PermissionError(
                f"Call({name!r}): {name!r} is reserved: it is DurableActor's own API, "
                "not callable by messages; call it from a method of the actor"
            )
        else:
            method = getattr(type(self), name, None)
            if method is not None and callable(method):
                bound: Callable[..., Any] = getattr(self, name)
                return bound
            error = MethodNotFoundError(_no_method(type(self), name))
        if not ctx.respond_error(error):
            _log.warning("%s: a Call sent without ask was refused: %s", ctx.self, error)
        return None


def _no_method(cls: type, name: str) -> str:
    base = set(dir(DurableActor))
    mine = [n for n in dir(cls) if n not in base and not n.startswith("_")]
    close = difflib.get_close_matches(name, [n for n in mine if callable(getattr(cls, n))], n=3)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"Call({name!r}): {cls.__qualname__} has no callable method {name!r}{hint}"


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"DurableActor.{old} is deprecated: call {new} (the same verb on every surface); "
        f"{old} goes away in the next release",
        DeprecationWarning,
        stacklevel=3,
    )


#: DurableActor's own API is not callable through ``Call`` messages.
_RESERVED = frozenset(name for name in dir(DurableActor) if not name.startswith("_")) - {"kind"}
