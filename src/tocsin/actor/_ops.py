# SPDX-License-Identifier: Apache-2.0
"""Ops hook (issue 14): the one place :mod:`tocsin.metrics` and :mod:`tocsin.console` read
the runtime's internals.

Everything here is read at scrape time (or on a console refresh), never on a hot path:
counters are plain ints the runtime already keeps, and this module only looks at them.

Why a module of functions in ``actor/`` rather than methods on ``ActorSystem``: the kernel
refactor (issue 9) moves ``ActorSystem`` to ``tocsin/system.py`` while this work is in
flight; one new file merges cleanly where edits to the class would not. It reads the
scheduler and the durable runtime by duck typing, so the actor layer still imports
neither. After the refactor this file belongs beside ``system.py`` (the facade composes
those layers), with the same functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._system import ActorSystem

__all__ = [
    "ActorStat",
    "actor_stats",
    "durable_counters",
    "durable_identities",
    "durable_store",
    "lateness_ring",
    "schedule_counts",
    "wake_durable",
    "wrap_store",
]


@dataclass(frozen=True, slots=True)
class ActorStat:
    """One live actor: its path, state, mailbox depth now and the deepest seen (messages)."""

    path: str
    state: str
    mailbox: int
    mailbox_high: int


def actor_stats(system: ActorSystem) -> list[ActorStat]:
    """A snapshot of every live actor, sorted by path (empty when the system is stopped)."""
    # The mailbox deque holds message and sender alternately: two entries per message.
    return [
        ActorStat(path, cell.state.name.lower(), len(cell.mailbox or ()) // 2, cell.depth_high // 2)
        for path, cell in sorted(system._registry.items())
    ]


def lateness_ring(system: ActorSystem) -> tuple[int, list[float]]:
    """``(ticks fired so far, the lateness ring buffer)``: tick ``i``'s lateness is at
    ``ring[i % len(ring)]`` while fewer than ``len(ring)`` ticks fired after it.

    The ring is the scheduler's own list (not a copy): read it before yielding to the loop.
    """
    scheduler: Any = system._scheduler  # None before the first start
    if scheduler is None:
        return 0, []
    return scheduler._fired, scheduler._lateness


def schedule_counts(system: ActorSystem) -> dict[tuple[str, bool], int]:
    """Live schedules by ``(kind, paused)``; one pass over the records, no snapshots built."""
    scheduler: Any = system._scheduler  # None before the first start
    counts: dict[tuple[str, bool], int] = {}
    if scheduler is None or not system.running:
        return counts
    for record in scheduler._refs.values():
        key = (str(record.kind), bool(record.paused))
        counts[key] = counts.get(key, 0) + 1
    return counts


def durable_counters(system: ActorSystem) -> Any | None:
    """The durable runtime's ``RunCounters`` (``tocsin.durable._ops``), or None without one."""
    runtime = system._durable
    return None if runtime is None else runtime.counters


def durable_identities(system: ActorSystem) -> tuple[int, int]:
    """``(identities known in memory, identities active now)``."""
    runtime = system._durable
    if runtime is None:
        return 0, 0
    handles = runtime.handles.values()
    return len(handles), sum(1 for h in handles if h.cell is not None)


def durable_store(system: ActorSystem) -> Any | None:
    """The store the durable runtime uses, or None when no durable actor ran yet."""
    runtime = system._durable
    return None if runtime is None else runtime.store


def wrap_store(system: ActorSystem, wrap: Callable[[Any], Any]) -> bool:
    """Replace the durable store by ``wrap(store)`` for the runtime and every known
    identity (store call timing is switched on this way only when someone reads it).

    Returns False (and changes nothing) without a durable runtime.
    """
    runtime = system._durable
    if runtime is None:
        return False
    wrapped = wrap(runtime.store)
    runtime.store = wrapped
    for handle in runtime.handles.values():
        handle.store = wrapped
    return True


def wake_durable(system: ActorSystem, kind: str, identity: str, due: float) -> None:
    """Make identity ``kind/identity`` run its tasks due by ``due`` (wall epoch seconds)
    without waiting for the periodic store poll: after a retry written to the store.

    A known identity gets its alarm armed; an unknown one is found by an immediate store
    poll (which resolves its class by ``kind``, as recovery does). No-op when stopped.
    """
    runtime = system._durable
    if runtime is None or not system.running or runtime.stopping:
        return
    handle = runtime.handles.get((kind, identity))
    if handle is not None:
        handle.arm(due)
    else:
        runtime._start_poll()
