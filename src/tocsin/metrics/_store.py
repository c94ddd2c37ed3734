# SPDX-License-Identifier: Apache-2.0
"""Store call latency: a wrapper that times every call of a durable store.

It is installed by the store source when metrics are attached to a system (so a system
nobody scrapes pays nothing), and records into per-operation ring buffers like the
scheduler's lateness: two clock reads and a list store per call, no bucket arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, final

from ..clock import Clock
from ..stores import DueActor, Op, Store, TaskRow, TaskState

__all__ = ["OPERATIONS", "TIMING_WINDOW", "TimedStore"]

#: Store calls timed, by method name (the ``op`` label).
OPERATIONS: Final = (
    "apply",
    "due_actors",
    "due_tasks",
    "find_tasks",
    "get_state",
    "get_task",
    "list_state",
    "list_tasks",
    "next_due",
)
#: Call durations kept per operation between two scrapes (a power of two).
TIMING_WINDOW: Final = 1024
_MASK: Final = TIMING_WINDOW - 1


@final
class _Timing:
    __slots__ = ("calls", "errors", "ring")

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.ring = [0.0] * TIMING_WINDOW


@final
class TimedStore:
    """A :class:`~tocsin.stores.Store` that forwards every call to ``inner`` and records
    how long it took (seconds, on ``clock``) and whether it raised.

    Guarantees: results, exceptions and ordering are exactly the inner store's; other
    attributes (``url``, ``path``, ...) are read through.

    Each method is written out (no shared ``_timed(coro)`` helper): a helper coroutine per
    call cost more than the timing itself (``bench/metrics.py``, TimedStore line).
    """

    def __init__(self, inner: Store, clock: Clock) -> None:
        self.inner = inner
        self.url = inner.url
        self._now = clock.monotonic
        self.timings: dict[str, _Timing] = {op: _Timing() for op in OPERATIONS}
        (self._apply, self._due_actors, self._due_tasks, self._find_tasks, self._get_state,
         self._get_task, self._list_state, self._list_tasks, self._next_due) = (
            self.timings[op] for op in OPERATIONS)  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _done(self, timing: _Timing, started: float) -> None:
        calls = timing.calls
        timing.ring[calls & _MASK] = self._now() - started
        timing.calls = calls + 1

    async def open(self, *, exclusive: bool = False) -> None:
        await self.inner.open(exclusive=exclusive)

    # Change notices (issue 15): forwarded untimed, they are not data calls.
    async def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        return await self.inner.watch(callback)

    def check_changes(self) -> None:
        self.inner.check_changes()

    async def announce(self) -> None:
        await self.inner.announce()

    async def close(self) -> None:
        await self.inner.close()

    async def swap_cluster(self, expected: str | None, new: str | None) -> str | None:
        return await self.inner.swap_cluster(expected, new)  # once per start: untimed

    async def apply(self, ops: Sequence[Op]) -> None:
        started = self._now()
        try:
            return await self.inner.apply(ops)
        except BaseException:
            self._apply.errors += 1
            raise
        finally:
            self._done(self._apply, started)

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None:
        started = self._now()
        try:
            return await self.inner.get_state(kind, identity, key)
        except BaseException:
            self._get_state.errors += 1
            raise
        finally:
            self._done(self._get_state, started)

    async def list_state(
        self, kind: str, identity: str, prefix: str = ""
    ) -> list[tuple[str, bytes]]:
        started = self._now()
        try:
            return await self.inner.list_state(kind, identity, prefix)
        except BaseException:
            self._list_state.errors += 1
            raise
        finally:
            self._done(self._list_state, started)

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None:
        started = self._now()
        try:
            return await self.inner.get_task(kind, identity, task_id)
        except BaseException:
            self._get_task.errors += 1
            raise
        finally:
            self._done(self._get_task, started)

    async def list_tasks(
        self, kind: str | None = None, identity: str | None = None, state: TaskState | None = None
    ) -> list[TaskRow]:
        started = self._now()
        try:
            return await self.inner.list_tasks(kind, identity, state)
        except BaseException:
            self._list_tasks.errors += 1
            raise
        finally:
            self._done(self._list_tasks, started)

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        started = self._now()
        try:
            return await self.inner.find_tasks(task_id)
        except BaseException:
            self._find_tasks.errors += 1
            raise
        finally:
            self._done(self._find_tasks, started)

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        started = self._now()
        try:
            return await self.inner.due_tasks(kind, identity, before, limit)
        except BaseException:
            self._due_tasks.errors += 1
            raise
        finally:
            self._done(self._due_tasks, started)

    async def next_due(self, kind: str, identity: str) -> float | None:
        started = self._now()
        try:
            return await self.inner.next_due(kind, identity)
        except BaseException:
            self._next_due.errors += 1
            raise
        finally:
            self._done(self._next_due, started)

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        started = self._now()
        try:
            return await self.inner.due_actors(before, limit)
        except BaseException:
            self._due_actors.errors += 1
            raise
        finally:
            self._done(self._due_actors, started)
