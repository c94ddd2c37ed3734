# SPDX-License-Identifier: Apache-2.0
"""The deadline heap: every deadline of a system, ordered, with lazy cancellation.

Prior art: asyncio's ``_run_once`` (``TimerHandle`` heap, cancelled handles counted and the
heap rebuilt once they are many) and trio's ``Deadlines`` (lazy deletion, rebuild when the
heap exceeds ``2 * live + 1000``).

Items are :class:`Deadline` objects. The heap holds ``(deadline, seq, item)`` tuples, so
ordering is compared in C (float, then a unique int) and never falls back to Python
``__lt__``. An item is live in the heap iff ``item._heap_seq`` equals the ``seq`` of its
tuple: cancelling sets it to ``-1`` (O(1)), re-arming pushes a fresh tuple and makes the old
one stale. Stale tuples are popped when they reach the head, or dropped all at once by
:meth:`DeadlineHeap.compact` when they outnumber the live ones.
"""

from __future__ import annotations

import heapq
import itertools
from typing import final

__all__ = ["COMPACT_DEAD_RATIO", "COMPACT_MIN_SIZE", "Deadline", "DeadlineHeap"]

#: Compaction never runs on heaps smaller than this (asyncio uses 100).
COMPACT_MIN_SIZE = 100
#: Compact once dead tuples are more than this fraction of the heap (asyncio: 0.5).
COMPACT_DEAD_RATIO = 0.5

_NOT_ARMED = -1


class Deadline:
    """Base class of anything that lives in a :class:`DeadlineHeap`.

    Subclasses implement :meth:`fire`. ``__slots__`` keep each pending deadline small:
    a system may hold a million of them.
    """

    __slots__ = ("_heap_seq",)

    def __init__(self) -> None:
        self._heap_seq = _NOT_ARMED

    @property
    def armed(self) -> bool:
        """Whether this item is pending in a heap."""
        return self._heap_seq != _NOT_ARMED

    def fire(self, now: float, deadline: float) -> None:
        """Called once the deadline is reached; ``now - deadline`` is the lateness."""
        raise NotImplementedError  # pragma: no cover - abstract


@final
class DeadlineHeap:
    """A min-heap of :class:`Deadline` items with O(1) lazy cancellation.

    ``len(heap)`` counts live items only; ``heap.size`` counts tuples, dead ones included.
    """

    __slots__ = ("_dead", "_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._dead = 0

    def __len__(self) -> int:
        return len(self._heap) - self._dead

    @property
    def size(self) -> int:
        """Tuples in the heap, dead ones included."""
        return len(self._heap)

    @property
    def dead(self) -> int:
        """Cancelled tuples still in the heap."""
        return self._dead

    def push(self, deadline: float, item: Deadline) -> None:
        """Arm ``item`` at ``deadline`` (replacing any earlier arming of the same item).

        Re-arming leaves a dead tuple behind, so it compacts past the thresholds too: an
        item re-armed over and over (a busy actor's idle deadline) must not grow the heap.
        """
        rearmed = item._heap_seq != _NOT_ARMED
        seq = next(self._seq)
        item._heap_seq = seq
        heapq.heappush(self._heap, (deadline, seq, item))
        if rearmed:
            self._dead += 1
            self._compact_if_mostly_dead()

    def cancel(self, item: Deadline) -> bool:
        """Disarm ``item``; return whether it was armed. Compacts past the thresholds."""
        if item._heap_seq == _NOT_ARMED:
            return False
        item._heap_seq = _NOT_ARMED
        self._dead += 1
        self._compact_if_mostly_dead()
        return True

    def _compact_if_mostly_dead(self) -> None:
        size = len(self._heap)
        if size > COMPACT_MIN_SIZE and self._dead > size * COMPACT_DEAD_RATIO:
            self.compact()

    def clear(self) -> None:
        """Disarm every item and empty the heap (a later ``cancel`` of one is a no-op)."""
        for _, _, item in self._heap:
            item._heap_seq = _NOT_ARMED
        self._heap = []
        self._dead = 0

    def compact(self) -> None:
        """Drop every dead tuple and re-heapify (O(live))."""
        self._heap = [entry for entry in self._heap if entry[2]._heap_seq == entry[1]]
        heapq.heapify(self._heap)
        self._dead = 0

    def next_deadline(self) -> float | None:
        """The earliest live deadline, or ``None``."""
        heap = self._heap
        while heap:
            deadline, seq, item = heap[0]
            if item._heap_seq == seq:
                return deadline
            heapq.heappop(heap)
            self._dead -= 1
        return None

    def pop_due(self, now: float) -> tuple[float, Deadline] | None:
        """Remove and return ``(deadline, item)`` for the earliest live item due at ``now``."""
        heap = self._heap
        while heap:
            deadline, seq, item = heap[0]
            if item._heap_seq != seq:
                heapq.heappop(heap)
                self._dead -= 1
                continue
            if deadline > now:
                return None
            heapq.heappop(heap)
            item._heap_seq = _NOT_ARMED
            return deadline, item
        return None
