# SPDX-License-Identifier: Apache-2.0
"""The deadline heap: every deadline of a system, ordered, with lazy cancellation.

Prior art: asyncio's ``_run_once`` (``TimerHandle`` heap, cancelled handles counted and the
heap rebuilt once they are many), trio's ``Deadlines`` (lazy deletion), and the packed-int
keys measured in ``../shared/bench-baselines.md``.

The heap holds plain ``int`` keys: the deadline's IEEE-754 bits (which order like the
floats themselves) shifted left, with a push sequence number in the low bits. A dict maps
each live key to its :class:`Deadline` item, and the item keeps its exact float deadline.
Why not ``(deadline, seq, item)`` tuples: a tuple holding an object is tracked by the
cyclic garbage collector, and a heap of 100,000 re-armed schedules then spent most of its
CPU in full collections (bench/scheduler.py); ints are not tracked, compare in C, and
take less memory (one int of ~44 bytes against a 64-byte tuple, a float and an int).

Cancelling drops the key from the dict (O(1)) and leaves the int in the heap as a dead
key; dead heads are popped when they reach the top, or all dropped at once by
:meth:`DeadlineHeap.compact` when they outnumber the live ones.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from typing import final

__all__ = ["COMPACT_DEAD_RATIO", "COMPACT_MIN_SIZE", "Deadline", "DeadlineHeap"]

#: Compaction never runs on heaps smaller than this (asyncio uses 100).
COMPACT_MIN_SIZE = 100
#: Compact once dead keys are more than this fraction of the heap (asyncio: 0.5).
COMPACT_DEAD_RATIO = 0.5

#: Low bits of a key holding the push sequence number (ties keep push order).
_SEQ_BITS = 40
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_MAGNITUDE = (1 << 63) - 1
_pack_double = struct.Struct("<d").pack


def _key(deadline: float, seq: int) -> int:
    """An int ordering like ``(deadline, seq)``: IEEE-754 bits are monotonic in the value
    for non-negative floats; negative ones are mirrored below zero."""
    bits = int.from_bytes(_pack_double(deadline), "little", signed=True)
    if bits < 0:
        bits = -(bits & _MAGNITUDE)
    return (bits << _SEQ_BITS) | (seq & _SEQ_MASK)


class Deadline:
    """Base class of anything that lives in a :class:`DeadlineHeap`.

    Subclasses implement :meth:`fire`. ``__slots__`` keep each pending deadline small:
    a system may hold a million of them.
    """

    __slots__ = ("_heap_deadline", "_heap_key")

    def __init__(self) -> None:
        self._heap_key: int | None = None
        self._heap_deadline = 0.0

    @property
    def armed(self) -> bool:
        """Whether this item is pending in a heap."""
        return self._heap_key is not None

    def fire(self, now: float, deadline: float) -> None:
        """Called once the deadline is reached; ``now - deadline`` is the lateness."""
        raise NotImplementedError  # pragma: no cover - abstract


@final
class DeadlineHeap:
    """A min-heap of :class:`Deadline` items with O(1) lazy cancellation.

    ``len(heap)`` counts live items only; ``heap.size`` counts keys, dead ones included.
    Items due at the same deadline come out in push order.
    """

    __slots__ = ("_dead", "_heap", "_live", "_seq")

    def __init__(self) -> None:
        self._heap: list[int] = []
        self._live: dict[int, Deadline] = {}
        self._seq = itertools.count()
        self._dead = 0

    def __len__(self) -> int:
        return len(self._live)

    @property
    def size(self) -> int:
        """Keys in the heap, dead ones included."""
        return len(self._heap)

    @property
    def dead(self) -> int:
        """Cancelled keys still in the heap."""
        return self._dead

    def push(self, deadline: float, item: Deadline) -> None:
        """Arm ``item`` at ``deadline`` (replacing any earlier arming of the same item).

        Re-arming leaves a dead key behind, so it compacts past the thresholds too: an
        item re-armed over and over (a busy actor's idle deadline) must not grow the heap.
        """
        live = self._live
        old = item._heap_key
        if old is not None:
            del live[old]
        key = _key(deadline, next(self._seq))
        item._heap_key = key
        item._heap_deadline = deadline
        live[key] = item
        heapq.heappush(self._heap, key)
        if old is not None:
            self._dead += 1
            self._compact_if_mostly_dead()

    def cancel(self, item: Deadline) -> bool:
        """Disarm ``item``; return whether it was armed. Compacts past the thresholds."""
        key = item._heap_key
        if key is None:
            return False
        item._heap_key = None
        del self._live[key]
        self._dead += 1
        self._compact_if_mostly_dead()
        return True

    def _compact_if_mostly_dead(self) -> None:
        size = len(self._heap)
        if size > COMPACT_MIN_SIZE and self._dead > size * COMPACT_DEAD_RATIO:
            self.compact()

    def clear(self) -> None:
        """Disarm every item and empty the heap (a later ``cancel`` of one is a no-op)."""
        for item in self._live.values():
            item._heap_key = None
        self._live = {}
        self._heap = []
        self._dead = 0

    def compact(self) -> None:
        """Drop every dead key and re-heapify (O(live))."""
        self._heap = list(self._live)
        heapq.heapify(self._heap)
        self._dead = 0

    def next_deadline(self) -> float | None:
        """The earliest live deadline, or ``None``."""
        heap, live = self._heap, self._live
        while heap:
            item = live.get(heap[0])
            if item is not None:
                return item._heap_deadline
            heapq.heappop(heap)
            self._dead -= 1
        return None

    def pop_due(self, now: float) -> tuple[float, Deadline] | None:
        """Remove and return ``(deadline, item)`` for the earliest live item due at ``now``."""
        heap, live = self._heap, self._live
        while heap:
            key = heap[0]
            item = live.get(key)
            if item is None:
                heapq.heappop(heap)
                self._dead -= 1
                continue
            deadline = item._heap_deadline
            if deadline > now:
                return None
            heapq.heappop(heap)
            del live[key]
            item._heap_key = None
            return deadline, item
        return None
