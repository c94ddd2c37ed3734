# SPDX-License-Identifier: Apache-2.0
"""Running one durable task: dispatch, and the time budget of a run that suspends.

The budget is a deadline on the system's shared heap (so a ``ManualClock`` drives it),
working the way ``asyncio.timeout`` does: on expiry the turn's task is cancelled, and that
one cancellation is taken back where the run is awaited.

A budget only matters while the run is suspended: synchronous code cannot be interrupted
by a cancellation anyway. So an ``async def`` body is first stepped by hand, once; if it
finishes without suspending (common: it only touches memory, or a store whose small calls
complete at once), no deadline is pushed and cancelled for it. If it suspends, the budget
is armed (counted from the start of the run) and the rest of the body is awaited through
:func:`_resume`, which passes every suspension and every ``throw`` through unchanged, as
``await`` itself would.

Why keep this trampoline rather than a plain ``await`` under an always-armed budget
(issue 9 asked for the figure): on ``bench/durable.py`` run/preloaded (10,000 async
tasks, 1 identity), side by side with the plain-await variant in one run
(``bench/_compare_trees.py``, 5 interleaved repetitions, load 4-6 on the 2-core VM),
the trampoline ran 79.5k tasks/s against 53.9k (median), child CPU 0.438 s against
0.468 s; on the e2e paths it saved 1-11% CPU. The saving is the heap push and cancel of
a budget deadline per run, which most runs (no suspension) do not need.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import types
from collections.abc import Awaitable, Generator
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from .._codec import decode
from .._deadlines import Deadline
from ..errors import TaskTimeoutError
from ..stores import TaskRow
from ._current import IDLE, CurrentRun
from ._records import running_record

if TYPE_CHECKING:
    from datetime import datetime

    from ..actor._spi import Cell, ReceiveContext, Runtime
    from ._plan import Cursor
    from ._retry import Retry

__all__ = ["DROPPED", "INTERRUPTED", "Budget", "RunHost", "TaskActor", "run_task"]

_log = logging.getLogger("tocsin.durable")


class TaskActor(Protocol):
    """What a task run (and the drain) uses of the actor: ``DurableActor`` is one. A
    protocol, so this module and ``_drain.py`` do not import the actor class (issue 21:
    they sat in durable's import cycle through it)."""

    @property
    def task_timeout(self) -> float: ...
    @property
    def retry_policy(self) -> Retry: ...
    def now(self) -> datetime: ...
    def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> Awaitable[None]: ...


class RunStop(Protocol):
    """What a task run reads of the durable runtime."""

    @property
    def stopping(self) -> bool: ...


class RunHost(Protocol):
    """What a task run uses of its identity's handle (``DurableHandle`` is the one):
    the kernel's clock and heap, the stop flag, and the run in progress (the one owner
    of the budget field)."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def durable(self) -> RunStop: ...

    #: The run in progress (:data:`~._current.IDLE` while none): set by the run only.
    current: CurrentRun

    def handles_unknown_tasks(self, actor: TaskActor) -> bool: ...


class _Interrupted(Exception):
    """The run was cut short by ``system.stop()``: neither a success nor a failure."""


#: What :func:`run_task` returns for a stored task whose method no longer exists (a
#: deploy renamed it) on a class that does not override ``on_task``: it is deleted, with
#: a WARNING naming it, instead of being "delivered" to a no-op forever.
DROPPED: Final = _Interrupted("method vanished")

#: What :func:`run_task` returns for a run cut short by the system stopping. The task is
#: not completed and no attempt is recorded; it runs again on the next start (at least
#: once), so a stop never waits out a hung task's budget.
INTERRUPTED: Final = _Interrupted("interrupted by system stop")


async def run_task(
    cell: Cell,
    actor: TaskActor,
    row: TaskRow,
    handle: RunHost,
    instant: float,
    cursor: Cursor | None = None,
) -> BaseException | None:
    """Run one task under its time budget, for its nominal ``instant`` (``cursor``: the
    row's policy cursor, if it has one); return its error, ``None`` on success, or
    :data:`INTERRUPTED`. ``handle.current`` names the run while the actor's code runs
    (``running``) and its budget while the run is suspended (``suspended``).

    The run sees a clean context (the cell cleared it for this turn): ``ctx.message`` is
    the task as a :class:`~tocsin.TaskRecord`, ``ctx.sender`` is ``NoSender``, and no
    ask is pending, so ``ctx.respond`` cannot answer someone else's ask.
    """
    ctx = cell.ctx
    try:
        payload = decode(row.payload)
    except Exception as exc:  # an undecodable payload is a failed run, as below
        return exc
    # The run in progress from here (no code of the actor ran before) to its end: the
    # run, not its caller, names it, so the run's writes of it come back to back.
    # Its own record, made here and dropped at its end (the identity holds the shared
    # IDLE between runs: nothing of its own for the cyclic GC to visit).
    current = CurrentRun()
    current.running(row, instant, cursor)
    handle.current = current
    try:
        try:
            method = getattr(type(actor), row.name, None)
            if method is None or not callable(method):
                if not handle.handles_unknown_tasks(actor):
                    _log.warning(
                        "durable task %s/%s %s names method %r, which %s does not have "
                        "(renamed or removed?); the task is dropped. Override on_task to "
                        "handle such tasks instead",
                        row.kind,
                        row.identity,
                        row.id,
                        row.name,
                        type(actor).__qualname__,
                    )
                    return DROPPED
                # Built only here: a task method gets the payload, not the context, and a
                # TaskRecord (two datetimes, a frozen dataclass) costs ~2 µs per run.
                ctx.message = running_record(row, payload)
                call: Any = actor.on_task(row.name, payload, ctx)
            else:
                call = getattr(actor, row.name)(payload)
        except Exception as exc:
            # A sync method fails here, not in the awaited task: it must count as a
            # failed run too, or it would abort the whole drain (losing the completions
            # of the tasks before it and the alarm re-arm).
            return exc
        if not inspect.isawaitable(call):
            return None
        runtime = handle.runtime
        started = runtime.clock.monotonic()
        rest: Any = call
        if type(call) is types.CoroutineType:
            try:
                first = call.send(None)
            except StopIteration:
                return None  # finished without suspending: nothing to time
            except Exception as exc:
                return exc
            rest = _resume(call, first)
        if handle.durable.stopping:
            # The system began stopping while the first step ran: do not wait for the rest.
            if type(rest) is types.CoroutineType:
                rest.close()  # runs the body's `finally` blocks
            return INTERRUPTED
        task = asyncio.current_task()
        assert task is not None
        budget = row.timeout if row.timeout is not None else actor.task_timeout
        timer = Budget(task)
        deadlines = runtime.deadlines
        deadlines.add(started + budget, timer)
        current.suspended(timer)
        try:
            await rest
        except asyncio.CancelledError:
            # Catching CancelledError is right only for our own cancel; any other re-raises.
            if timer.cause is not None and task.uncancel() == 0:
                cause, timer.cause = timer.cause, None
                if cause == "stop":
                    return INTERRUPTED
                return TaskTimeoutError(f"task {row.id!r} ({row.name}) exceeded {budget} s")
            raise
        except Exception as exc:
            return exc
        finally:
            current.suspended(None)
            deadlines.remove(timer)
            if timer.cause is not None:  # fired as the run finished: withdraw the late cancel
                task.uncancel()
        return None
    finally:
        current.running(None)
        handle.current = IDLE


@types.coroutine
def _resume(coro: types.CoroutineType[Any, Any, Any], first: Any) -> Generator[Any, Any, Any]:
    """Await ``coro`` from its first suspension on (it already yielded ``first``): what
    ``yield from`` does, for a coroutine whose first step was taken by hand."""
    pending = first
    while True:
        thrown: BaseException | None = None
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation (or any throw) goes to the body
            thrown = exc
        # Thrown outside the `except` block: inside it, the exception would still be
        # "being handled" while the body runs, leaking into its sys.exc_info() and into
        # the __context__ of its later exceptions, which a native await does not do.
        try:
            pending = coro.send(sent) if thrown is None else coro.throw(thrown)
        except StopIteration as stop:
            return stop.value
        finally:
            thrown = None


@final
class Budget(Deadline):
    """A suspended run's time budget: cancels the run when it expires, or when the system
    stops (:meth:`interrupt`)."""

    __slots__ = ("cause", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        super().__init__()
        self.task = task
        #: Why this budget cancelled the run: "timeout", "stop", or None (it did not).
        self.cause: str | None = None

    def fire(self, now: float, deadline: float) -> None:
        self._cancel("timeout")

    def interrupt(self) -> None:
        self._cancel("stop")

    def _cancel(self, cause: str) -> None:
        if self.cause is None and not self.task.done():
            self.cause = cause
            self.task.cancel()
