# SPDX-License-Identifier: Apache-2.0
"""Store call latency: a wrapper that times every call of a durable store.

It is installed by the store source when metrics are attached to a system (so a system
nobody scrapes pays nothing), and records into per-operation ring buffers like the
scheduler's lateness: two clock reads and a list store per call, no bucket arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    """

    def __init__(self, inner: Store, clock: Clock) -> None:
        self.inner = inner
        self.url = inner.url
        self._clock = clock
        self.timings: dict[str, _Timing] = {op: _Timing() for op in OPERATIONS}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _timed(self, op: str, call: Any) -> Any:
        monotonic = self._clock.monotonic
        timing = self.timings[op]
        started = monotonic()
        try:
            return await call
        except BaseException:
            timing.errors += 1
            raise
        finally:
            calls = timing.calls
            timing.ring[calls & _MASK] = monotonic() - started
            timing.calls = calls + 1

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    async def apply(self, ops: Sequence[Op]) -> None:
        await self._timed("apply", self.inner.apply(ops))

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None:
        result: bytes | None = await self._timed(
            "get_state", self.inner.get_state(kind, identity, key)
        )
        return result

    async def list_state(
        self, kind: str, identity: str, prefix: str = ""
    ) -> list[tuple[str, bytes]]:
        result: list[tuple[str, bytes]] = await self._timed(
            "list_state", self.inner.list_state(kind, identity, prefix)
        )
        return result

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None:
        result: TaskRow | None = await self._timed(
            "get_task", self.inner.get_task(kind, identity, task_id)
        )
        return result

    async def list_tasks(
        self,
        kind: str | None = None,
        identity: str | None = None,
        state: TaskState | None = None,
    ) -> list[TaskRow]:
        result: list[TaskRow] = await self._timed(
            "list_tasks", self.inner.list_tasks(kind, identity, state)
        )
        return result

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        result: list[TaskRow] = await self._timed("find_tasks", self.inner.find_tasks(task_id))
        return result

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        result: list[TaskRow] = await self._timed(
            "due_tasks", self.inner.due_tasks(kind, identity, before, limit)
        )
        return result

    async def next_due(self, kind: str, identity: str) -> float | None:
        result: float | None = await self._timed("next_due", self.inner.next_due(kind, identity))
        return result

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        result: list[DueActor] = await self._timed(
            "due_actors", self.inner.due_actors(before, limit)
        )
        return result
