# SPDX-License-Identifier: Apache-2.0
"""The built-in workload of a :class:`~tocsin.testing.Simulation` (``setup=None``), and
the two calls that put a user's own deliveries and acknowledgements in the record.

On every node, at every start (restarts included):

* a :class:`TickRecorder` actor, target of two every-second cron schedules of the same
  references on every node, one ``at_most_once`` and one ``at_least_once``: the cluster
  must deliver each instant of the first at most once and of the second at least once;
* the durable :class:`SimCounter` identities, which the simulation's driver asks from
  every node to increment a counter (each acknowledged increment must survive) and to
  queue durable tasks (each acknowledged one must run).

Extension point: once stored schedules exist (``system.schedules``, ``Interval``), add a
stored ``Interval`` here in :func:`builtin_setup` (declared with ``replace=True``, as the
cron schedules are, since every node runs it at each start), its expectation in
``Simulation._expectations`` and, in ``_sim_check``, the invariant that each of its
instants has exactly one ledger row (``system.schedules.history``, read at the end of
the run); nothing else changes.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Protocol, final

from ..actor._spi import Actor, Misfire, ReceiveContext
from ..durable import DurableActor

if TYPE_CHECKING:
    from ..system import ActorSystem

__all__ = [
    "AT_LEAST_ONCE",
    "AT_MOST_ONCE",
    "COUNTERS",
    "EVERY_SECOND",
    "SimCounter",
    "TickRecorder",
    "builtin_setup",
    "record_ack",
    "record_tick",
]

#: The built-in workload's cron references and expression.
AT_MOST_ONCE = "sim-every-second-at-most-once"
AT_LEAST_ONCE = "sim-every-second-at-least-once"
EVERY_SECOND = "* * * * * ?"
#: The durable counter identities the driver asks.
COUNTERS = ("counter-0", "counter-1", "counter-2")


class _Recorder(Protocol):
    """What a node's system reports to its simulation."""

    def tick(self, reference: str, instant: float, fence: int | None) -> None: ...

    def ack(self, identity: str, key: str, value: Any) -> None: ...


#: The running simulation's recorder of each node's system.
# Keyed by the system (a ``ctx.system`` is the same object, typed by its view).
_RECORDERS: weakref.WeakKeyDictionary[object, _Recorder] = weakref.WeakKeyDictionary()


def attach_recorder(system: ActorSystem, recorder: _Recorder) -> None:
    """Report what ``system`` records to ``recorder`` (the simulation does this)."""
    _RECORDERS[system] = recorder


def record_tick(ctx: ReceiveContext) -> None:
    """Record the scheduled tick being handled as a ``Delivery`` of its simulation.

    Call it first thing in ``receive`` of an actor your ``setup`` schedules. A message
    that is not a tick, or a system outside any simulation, records nothing.
    """
    tick = ctx.tick
    recorder = _RECORDERS.get(ctx.system)
    if tick is None or recorder is None:
        return
    recorder.tick(tick.reference, tick.instant.timestamp(), tick.fence)


def record_ack(system: object, identity: str, key: str, value: Any) -> None:
    """Record that a caller on ``system``'s node was told ``identity``'s ``key`` now holds
    ``value`` (an ``Ack``): ``check()`` then fails if that write is ever lost."""
    recorder = _RECORDERS.get(system)
    if recorder is not None:
        recorder.ack(identity, key, value)


#: Simulated seconds the built-in target spends on each tick after recording it: a
#: crash or pause in that window leaves an ``at_least_once`` claim undone, so another
#: node must deliver the instant again (with a larger fence).
TICK_WORK = 0.25


@final
class TickRecorder(Actor):
    """Records each tick it receives, then works on it for :data:`TICK_WORK` seconds
    (the built-in workload's cron target)."""

    async def receive(self, ctx: ReceiveContext) -> None:
        record_tick(ctx)
        await ctx.system.clock.sleep(TICK_WORK)


class SimCounter(DurableActor):
    """A durable counter whose value lives in its activation and in ``storage["count"]``.

    Kept in memory between asks on purpose: a second activation of one identity, or a
    write that slipped past the fence, shows as a lost acknowledged increment.
    """

    kind = "tocsin.testing.SimCounter"
    passivate_after = 20.0

    def __init__(self) -> None:
        super().__init__()
        self._count: int | None = None

    async def inc(self, payload: Any) -> int:
        if self._count is None:
            self._count = int(await self.storage.get("count", 0))
        count = self._count + 1
        await self.storage.put("count", count)
        self._count = count  # only once stored: a refused write leaves memory as it was
        return count

    async def enqueue(self, task_id: str) -> str:
        await self.queue("run_task", task_id, id=task_id)
        return task_id

    async def run_task(self, task_id: str) -> None:
        await self.storage.put(f"ran/{task_id}", True)


async def builtin_setup(system: ActorSystem) -> None:
    """The built-in workload on one node (see the module docstring)."""
    recorder = await system.spawn(TickRecorder, "sim-ticks")
    await system.schedule_cron("tick", recorder, EVERY_SECOND, reference=AT_MOST_ONCE, replace=True)
    await system.schedule_cron(
        "tick",
        recorder,
        EVERY_SECOND,
        reference=AT_LEAST_ONCE,
        replace=True,
        delivery="at_least_once",
        # Every instant, even those that came due while a slow claim was in flight or
        # the node was frozen: coalescing them (the default) is a documented loss.
        misfire=Misfire.all(max=100),
    )
