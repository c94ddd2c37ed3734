# SPDX-License-Identifier: Apache-2.0
"""One armed timer in front of the deadline heap.

The service keeps a single clock timer armed at the earliest live deadline. Adding an
earlier deadline re-arms it; cancelling never does (a timer that fires with nothing due
just re-arms for the next live deadline), which keeps ``cancel`` O(1).

Each timer callback runs one *batch*: it first collects the due items (at most
:data:`MAX_FIRES_PER_TURN`), then fires them, so anything armed while the batch runs waits
for the next turn (asyncio ``_run_once``: ``ntodo = len(self._ready)``). The cap keeps a
million simultaneous deadlines from blocking the loop for seconds; the remainder fires on
the next loop iteration.
"""

from __future__ import annotations

import logging
from typing import final

from ..clock import Clock, TimerHandle
from ._heap import Deadline, DeadlineHeap

__all__ = ["MAX_FIRES_PER_TURN", "DeadlineService"]

#: Most deadlines fired by one timer callback before yielding to the event loop.
#: Small on purpose: a tick waits in its target's mailbox until the whole batch it was
#: fired in has fired, so the batch size bounds end-to-end lateness. With 4,096, 100,000
#: ticks/s into one actor had a p99 of 14 ms (a GC pause made one batch large, that batch
#: took long enough for the next to be as large); with 256, 2.4 ms (bench/scheduler.py,
#: "repeating"). A loop iteration costs ~10 µs, under 0.1 µs per deadline at 256.
MAX_FIRES_PER_TURN = 256

_log = logging.getLogger("tocsin.scheduling")

_FIRING = float("-inf")


@final
class DeadlineService:
    """The system's deadlines: one heap, one armed timer, one clock."""

    __slots__ = ("_armed_at", "_clock", "_handle", "_heap", "_running")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._heap = DeadlineHeap()
        self._handle: TimerHandle | None = None
        self._armed_at: float | None = None
        self._running = True

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def heap(self) -> DeadlineHeap:
        return self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, deadline: float, item: Deadline) -> None:
        """Arm ``item`` at ``deadline`` (monotonic seconds); re-arming moves it."""
        self._heap.push(deadline, item)
        armed_at = self._armed_at
        if armed_at is None or deadline < armed_at:
            self._arm(deadline)

    def remove(self, item: Deadline) -> bool:
        """Disarm ``item``; return whether it was pending."""
        return self._heap.cancel(item)

    def close(self) -> None:
        """Disarm the timer and forget every deadline."""
        self._running = False
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._armed_at = None
        # Disarm every item rather than drop the heap: an ask still awaiting its reply
        # removes its timeout after the close, and must find it disarmed (not count a
        # dead key in a heap that no longer holds it).
        self._heap.clear()

    def _arm(self, deadline: float) -> None:
        if not self._running:
            return
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = deadline
        self._handle = self._clock.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        # While the batch fires, items re-arm themselves (a repeating schedule, once per
        # tick): with the timer marked as armed at -inf, `add` only pushes, and the timer
        # is armed once, after the batch, instead of once per item re-armed.
        self._armed_at = _FIRING
        try:
            now = self._clock.monotonic()
            heap = self._heap
            deadlines, items = heap.pop_batch(now, MAX_FIRES_PER_TURN)
            for deadline, item in zip(deadlines, items, strict=True):
                try:
                    item.fire(now, deadline)
                except Exception:  # a broken item must not stop the others
                    _log.exception("deadline callback %r failed", item)
        finally:
            self._armed_at = None
        if not self._running:
            return
        nxt = heap.next_deadline()
        if nxt is not None:
            # `_arm` inlined (the handle is None here): one visit to the heap per batch.
            self._armed_at = nxt
            self._handle = self._clock.call_at(nxt, self._on_timer)

    def armed_at(self) -> float | None:
        """The deadline the clock timer is armed for, or ``None``."""
        return self._armed_at
