# SPDX-License-Identifier: Apache-2.0
"""What one simulated node's faults do to its coordinator and store calls.

Each node of a :class:`~tocsin.testing.Simulation` reaches the one shared ``memory://``
coordinator and the one shared :class:`~tocsin.stores.MemoryStore` through its own
wrapper, so a fault can touch one node (a crash, a pause, a partition) or all of them (an
outage) without the backends knowing. The wrappers forward every call unchanged once the
gate lets it through: the backends' own atomicity (each memory call runs without awaiting
anything) is kept, because the gate is awaited before the call begins, never inside it.

Rejected: fault flags inside ``MemoryCoordinator`` / ``MemoryStore`` themselves. A flag
on a shared backend cannot tell which node calls; a wrapper per node can, and it serves
any coordinator or store, not only the memory ones.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, final

from .._codec import decode
from ..errors import CoordinatorUnavailableError, StoreError
from ..stores import DeleteState, Fence, PutState

if TYPE_CHECKING:
    from ..stores import Op, Store

__all__ = ["GatedCoordinator", "GatedStore", "NodeGate", "Outages"]


@final
class Outages:
    """The cluster-wide outages and latency in force (shared by every node's gate).

    Args:
        sleep: waits simulated seconds (the simulation's clock).
        draw: a uniform draw in ``[0, 1)`` from the simulation's seeded source.
    """

    __slots__ = ("_draw", "_sleep", "coordinator", "latency", "store")

    def __init__(
        self, sleep: Callable[[float], Awaitable[None]], draw: Callable[[], float]
    ) -> None:
        self.coordinator = False
        self.store = False
        self.latency = 0.0
        self._sleep = sleep
        self._draw = draw

    def set(self, *, coordinator: bool, store: bool, latency: float) -> None:
        """The outages in force from now on, and the most one leg of a call takes."""
        self.coordinator = coordinator
        self.store = store
        self.latency = latency

    async def travel(self) -> None:
        """One leg of a call (there or back) under the latency in force (at once without)."""
        if self.latency > 0:
            await self._sleep(self._draw() * self.latency)


@final
class NodeGate:
    """One node's state as its calls see it: up, crashed, paused or partitioned.

    A crashed node's calls fail; a paused node's calls wait until the pause ends (then
    run, late, as a process that was frozen does); a partitioned node's coordinator calls
    fail (it cannot reach it) while its store stays reachable, so a write it makes after
    its lease lapsed meets the store's fence.
    """

    __slots__ = ("_resume", "crashed", "name", "outages", "partitioned")

    def __init__(self, name: str, outages: Outages) -> None:
        self.name = name
        self.outages = outages
        self.crashed = False
        self.partitioned = False
        self._resume: asyncio.Future[None] | None = None

    @property
    def paused(self) -> bool:
        return self._resume is not None

    def crash(self) -> None:
        """Its calls fail from now on (until :meth:`revive`)."""
        self.crashed = True

    def revive(self) -> None:
        """Its calls go through again (a restarted node)."""
        self.crashed = False

    def cut_off(self, partitioned: bool) -> None:
        """Whether it is cut off from the coordinator (a partition)."""
        self.partitioned = partitioned

    def pause(self) -> None:
        if self._resume is None:
            self._resume = asyncio.get_running_loop().create_future()

    def unpause(self) -> None:
        resume, self._resume = self._resume, None
        if resume is not None and not resume.done():
            resume.set_result(None)

    async def wait_running(self) -> None:
        """Return once the node is not paused (at once when it is not)."""
        while self._resume is not None:
            await asyncio.shield(self._resume)

    async def coordinator_call(self, what: str) -> None:
        """Let a coordinator call through, or raise why it cannot reach the coordinator."""
        if self._resume is not None or self.outages.latency > 0:  # else nothing to await
            await self.wait_running()
            await self.outages.travel()
            await self.wait_running()
        if self.crashed or self.partitioned or self.outages.coordinator:
            raise CoordinatorUnavailableError(
                f"simulated: node {self.name!r} cannot reach the coordinator ({what})"
            )

    async def coordinator_answer(self, what: str) -> None:
        """The answer of a coordinator call that ran travels back: it may arrive late, or
        never (the caller then fails although the call took effect)."""
        if self._resume is not None or self.outages.latency > 0:
            await self.outages.travel()
            await self.wait_running()
        if self.crashed or self.partitioned:
            raise CoordinatorUnavailableError(
                f"simulated: node {self.name!r} lost the coordinator's answer ({what})"
            )

    async def store_call(self, what: str) -> None:
        """Let a store call through, or raise why it cannot reach the store."""
        if self._resume is not None or self.outages.latency > 0:
            await self.wait_running()
            await self.outages.travel()
            await self.wait_running()
        if self.crashed or self.outages.store:
            raise StoreError(f"simulated: node {self.name!r} cannot reach the store ({what})")

    async def store_answer(self, what: str) -> None:
        """As :meth:`coordinator_answer`, for the store."""
        if self._resume is not None or self.outages.latency > 0:
            await self.outages.travel()
            await self.wait_running()
        if self.crashed:
            raise StoreError(f"simulated: node {self.name!r} lost the store's answer ({what})")


#: ``tocsin.cluster._membership.PushesMembership``'s methods.
_PUSH_METHODS = ("on_change", "hold", "holder_renewing", "leases_nowait")

_UNGATED = frozenset({"open", "close", "url", "name", "check_changes", "watch"})


class _Gated:
    """Forwards every attribute of ``inner``; its coroutine methods wait on ``check``."""

    def __init__(
        self, inner: Any, check: Callable[[str], Any], answer: Callable[[str], Any]
    ) -> None:
        self._inner = inner
        self._check = check
        self._answer = answer

    def __getattr__(self, name: str) -> Any:
        if "_answer" not in self.__dict__:  # during __init__
            raise AttributeError(name)
        attribute = getattr(self._inner, name)
        if name in _UNGATED or not inspect.iscoroutinefunction(attribute):
            return attribute
        check, answer = self._check, self._answer

        async def call(*args: Any, **kwargs: Any) -> Any:
            await check(name)
            result = await attribute(*args, **kwargs)
            await answer(name)
            return result

        # Made once, kept on the instance: later lookups find it there without
        # ``__getattr__`` (a lease renewal is a hot path here).
        setattr(self, name, call)
        return call


@final
class GatedCoordinator(_Gated):
    """A node's view of the shared coordinator, through its gate (``cast`` it to
    :class:`~tocsin.cluster.Coordinator`: it forwards every method of the protocol)."""

    def __init__(self, inner: Any, gate: NodeGate) -> None:
        super().__init__(inner, gate.coordinator_call, gate.coordinator_answer)
        self.url: str = inner.url
        # A coordinator that pushes joins and leaves (memory://) keeps doing so through
        # the gate: its synchronous extras are bound here, on the instance, where a
        # protocol check finds them (Python 3.12's looks past ``__getattr__``). The node's
        # reads of the view that a push starts are coroutine calls, so they are gated.
        for name in _PUSH_METHODS:
            method = getattr(inner, name, None)
            if method is not None:
                setattr(self, name, method)


@final
class GatedStore(_Gated):
    """A node's view of the shared store, through its gate; every accepted batch's state
    writes are reported to ``on_write(kind, identity, key, value, epoch)``."""

    def __init__(
        self,
        inner: Store,
        gate: NodeGate,
        on_write: Callable[[str, str, str, Any, int], None],
    ) -> None:
        super().__init__(inner, gate.store_call, gate.store_answer)
        self.url: str = inner.url
        self._gate = gate
        self._on_write = on_write
        self._store = inner
        # The store's watchers are called by the store itself, gate or no gate: the
        # system then arms no periodic look (the durable runtime reads this statically).
        self.pushes_changes: bool = inspect.getattr_static(inner, "pushes_changes", False) is True

    async def apply(self, ops: Sequence[Op]) -> None:
        await self._gate.store_call("apply")
        await self._store.apply(ops)
        # Reached only when the store accepted the whole batch (it is atomic).
        epoch = next((op.epoch for op in ops if isinstance(op, Fence)), 0)
        for op in ops:
            if isinstance(op, PutState):
                self._on_write(op.kind, op.identity, op.key, decode(op.value), epoch)
            elif isinstance(op, DeleteState):
                self._on_write(op.kind, op.identity, op.key, None, epoch)
        await self._gate.store_answer("apply")
