# SPDX-License-Identifier: Apache-2.0
"""Identities that are not in memory but have work due soon: their due times, compactly.

The look-ahead poll finds identities with tasks due within ``LOOKAHEAD``. One that has no
handle in memory (passivated, or never touched since the start) is not given one yet:
its ``(kind, identity)`` and due time wait here, in a dict and a heap of plain tuples
(about 250 bytes an identity, against about 1.3 KB for a handle with its alarm, PID,
storage and parts), under **one** deadline in the system's heap: the earliest. When it
rings, every identity whose time has come gets its handle, and the handle's alarm takes
over (the drain reads the store, as any alarm's does); the identities that come due
together are handed over in one call, so that the host starts them as a batch.

Guarantees: an identity waits here at most until its earliest known due time (a second
arm for a sooner time moves it forward; a later one changes nothing); an identity given
a handle meanwhile (a message activated it) still rings here, which arms that handle's
alarm (idempotent: the drain reads what is due). Nobody else writes this state.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Protocol, final

from .._deadlines import Deadline

if TYPE_CHECKING:
    from ..actor._spi import Runtime

__all__ = ["DueSoon", "SoonHost"]


class SoonHost(Protocol):
    """What the waiting identities use of the durable runtime (``DurableRuntime``)."""

    @property
    def runtime(self) -> Runtime: ...
    def ring_due(self, ready: list[tuple[tuple[str, str], float]]) -> None: ...


@final
class DueSoon(Deadline):
    """Identities with work due soon and no handle in memory (internal)."""

    __slots__ = ("dues", "heap", "host", "ringing")

    def __init__(self, host: SoonHost) -> None:
        super().__init__()
        self.host = host
        #: ``(kind, identity)`` -> its earliest known due time (wall epoch seconds).
        self.dues: dict[tuple[str, str], float] = {}
        #: ``(due, (kind, identity))``, earliest first; entries whose due time is no
        #: longer the identity's in ``dues`` are stale and skipped when they come out.
        self.heap: list[tuple[float, tuple[str, str]]] = []
        #: The wall time the deadline is set for (``None``: not in the system's heap).
        self.ringing: float | None = None

    def __len__(self) -> int:
        return len(self.dues)

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self.dues

    def arm(self, key: tuple[str, str], due: float) -> None:
        """Ring for ``key`` no later than ``due`` (wall epoch seconds)."""
        known = self.dues.get(key)
        if known is not None and known <= due:
            return
        self.dues[key] = due
        heapq.heappush(self.heap, (due, key))
        if self.ringing is None or due < self.ringing:
            self._set(due)

    def forget(self, key: tuple[str, str]) -> float | None:
        """Stop waiting for ``key`` (its handle now holds the alarm); its due time."""
        return self.dues.pop(key, None)

    def clear(self) -> None:
        """Forget every identity (the system stops, or this node lost its lease)."""
        self.dues.clear()
        self.heap.clear()
        self._unset()

    def rearm(self) -> None:
        """The wall clock stepped: convert the earliest due time again."""
        if self.ringing is not None:
            self._set(self.ringing)

    def fire(self, now: float, deadline: float) -> None:
        self.ringing = None
        host = self.host
        clock = host.runtime.clock
        wall = clock.wall()
        heap, dues = self.heap, self.dues
        ready: list[tuple[tuple[str, str], float]] = []
        while heap and heap[0][0] <= wall:
            due, key = heapq.heappop(heap)
            if dues.get(key) != due:
                continue  # stale: moved forward, or handed to a handle
            del dues[key]
            ready.append((key, due))
        if not dues:
            heap.clear()  # only stale entries were left
        elif heap:
            self._set(heap[0][0])
        if ready:
            # All at once: the host activates the identities that come due together in
            # batches (one start task for many), not one at a time.
            host.ring_due(ready)

    def _set(self, due: float) -> None:
        runtime = self.host.runtime
        deadlines = runtime.deadlines
        if self.ringing is not None:
            deadlines.remove(self)
        self.ringing = due
        clock = runtime.clock
        deadlines.add(clock.monotonic() + max(0.0, due - clock.wall()), self)

    def _unset(self) -> None:
        if self.ringing is not None:
            self.host.runtime.deadlines.remove(self)
            self.ringing = None
