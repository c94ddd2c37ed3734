# SPDX-License-Identifier: Apache-2.0
"""FenceGuard: run each instant of an at-least-once schedule once, in durable storage.

At-least-once delivery (``delivery="at_least_once"`` cluster cron, durable tasks, jobs)
may hand the same instant to a handler twice: a frozen winner that wakes up after it was
replaced finishes its run, and the new winner, holding a larger fence, runs it again.
The guard keeps, per schedule reference, the newest instant handled and the largest
fence seen, in the storage the handler's effects live in, and answers whether a delivery
is the first of its instant and not a zombie's.

Kept in the same :meth:`~tocsin.DurableActor.transaction` as the effects, the record and
the effects commit together: a run that fails records nothing, so its retry is still
"first"; a run that commits is never repeated.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol, final

from ..actor._spi import Tick

__all__ = ["FenceGuard"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


class _Storage(Protocol):
    async def get(self, key: str, default: Any = None) -> Any: ...
    async def put(self, key: str, value: Any) -> None: ...


@final
class FenceGuard:
    """Answers "is this the first delivery of its instant?" from durable storage.

    ``guard = FenceGuard(self.storage)`` in a :class:`~tocsin.DurableActor`, then
    ``if not await guard.first_time(tick): return`` before the work (``tick`` is
    ``ctx.tick`` in ``receive``, ``self.current_task`` in a task run), both inside one
    ``async with self.transaction():`` so that the record commits with the effects.

    A delivery is first when its ``instant`` is newer than the newest one recorded for
    its reference, and its ``fence`` (where it has one) is not smaller than the largest
    recorded: a zombie's late delivery carries a smaller fence. A first delivery is
    recorded (one storage key per reference, ``<prefix><reference>``).

    Args:
        storage: where to keep the record: a durable actor's ``storage`` (anything with
            async ``get(key, default)`` and ``put(key, value)``).
        prefix: the storage keys' prefix.
    """

    __slots__ = ("_prefix", "_storage")

    def __init__(self, storage: _Storage, *, prefix: str = "tocsin.fence:") -> None:
        if not isinstance(prefix, str):
            raise TypeError(f"`prefix` must be a str, got {prefix!r}")
        self._storage = storage
        self._prefix = prefix

    async def first_time(self, tick: Tick) -> bool:
        """Whether ``tick`` is the first delivery of its instant (then it is recorded).

        Raises:
            TypeError: ``tick`` is not a :class:`~tocsin.Tick` (``None`` outside a
                scheduled delivery: check ``ctx.tick is not None`` first).
        """
        if not isinstance(tick, Tick):
            raise TypeError(f"`tick` must be a tocsin.Tick (ctx.tick), got {tick!r}")
        key = self._prefix + tick.reference
        micros = (tick.instant - _EPOCH) // _MICROSECOND
        seen = await self._storage.get(key)
        if isinstance(seen, (list, tuple)) and len(seen) == 2:
            last, fence = seen
            if micros <= last:
                return False  # this instant (or a newer one) was handled already
            if tick.fence is not None and fence is not None and tick.fence < fence:
                return False  # a zombie: a newer owner was granted a larger fence
            if tick.fence is None:
                tick_fence = fence
            else:
                tick_fence = tick.fence if fence is None else max(fence, tick.fence)
        else:
            tick_fence = tick.fence
        await self._storage.put(key, [micros, tick_fence])
        return True
