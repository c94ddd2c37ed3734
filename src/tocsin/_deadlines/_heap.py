# SPDX-License-Identifier: Apache-2.0
"""The deadline heap: every deadline of a system, ordered, with lazy cancellation.

Prior art: asyncio's ``_run_once`` (``TimerHandle`` heap, cancelled handles counted and the
heap rebuilt once they are many), trio's ``Deadlines`` (lazy deletion), and the packed-int
keys measured in ``../shared/bench-baselines.md``.

The heap holds plain ``int`` keys: the deadline's IEEE-754 bits (which order like the
floats themselves) shifted left, then a push sequence number and the item's slot in a
table of items. The item keeps its exact float deadline and its current key.
Why not ``(deadline, seq, item)`` tuples: a tuple holding an object is tracked by the
cyclic garbage collector, and a heap of 100,000 re-armed schedules then spent most of its
CPU in full collections (bench/scheduler.py); ints are not tracked, compare in C, and
take less memory (one int of ~44 bytes against a 64-byte tuple, a float and an int).

The heap is intrusive: it reads and writes its items' ``heap_key`` / ``heap_deadline``
slots itself; they are the heap's, declared on :class:`Deadline` in this module and
written by nobody else (a subclass only sets them once, in its ``__init__``, when it
skips ``Deadline.__init__``). Public names, so the heap's own reads are not reaches
into another object's private state. A property in their place costs ~120
ns more per read and ~290 ns more per write on this machine under load (~30 ns for a slot),
three accesses per push and per pop: on every schedule made and every tick re-armed.

Cancelling frees the item's slot (O(1)) and leaves the int in the heap as a dead key;
dead heads are popped when they reach the top, or all dropped at once by
:meth:`DeadlineHeap.compact` when they outnumber the live ones.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from abc import ABC, abstractmethod
from typing import final

__all__ = ["COMPACT_DEAD_RATIO", "COMPACT_MIN_SIZE", "Deadline", "DeadlineHeap"]

#: Compaction never runs on heaps smaller than this (asyncio uses 100).
COMPACT_MIN_SIZE = 100
#: Compact once dead keys are more than this fraction of the heap (asyncio: 0.5): the
#: dead outnumber the live. The heap tests it in that form, ``dead > live`` on two ints
#: (a cancel makes the test every time; the float form, ``dead > size * 0.5``, was
#: ~1,500 instructions of a ~9,000-instruction cancel, bench/footprint.py `cancel`).
COMPACT_DEAD_RATIO = 0.5

#: A key is ``deadline bits << 64 | seq << 32 | slot``: the push sequence number keeps
#: items due at the same time in push order, and the slot indexes the item table.
_SLOT_BITS = 32
_SLOT_MASK = (1 << _SLOT_BITS) - 1
_SEQ_MASK = (1 << 32) - 1
_MAGNITUDE = (1 << 63) - 1
_pack_double = struct.Struct("<d").pack
# Struct.unpack rather than int.from_bytes: no keyword arguments to parse, ~0.25 µs less
# per key on the push path of every schedule and every re-armed tick.
_unpack_int64 = struct.Struct("<q").unpack


class Deadline(ABC):
    """Base class of anything that lives in a :class:`DeadlineHeap`.

    Subclasses implement :meth:`fire`. ``__slots__`` keep each pending deadline small:
    a system may hold a million of them. ``heap_key`` and ``heap_deadline`` belong to
    the heap (its key for the item, ``None`` when not pending; the exact deadline): read
    them, never write them.
    """

    __slots__ = ("heap_deadline", "heap_key")

    def __init__(self) -> None:
        self.heap_key: int | None = None
        self.heap_deadline = 0.0

    @property
    def armed(self) -> bool:
        """Whether this item is pending in a heap."""
        return self.heap_key is not None

    @abstractmethod
    def fire(self, now: float, deadline: float) -> None:
        """Called once the deadline is reached; ``now - deadline`` is the lateness."""


@final
class DeadlineHeap:
    """A min-heap of :class:`Deadline` items with O(1) lazy cancellation.

    ``len(heap)`` counts live items only; ``heap.size`` counts keys, dead ones included.
    Items due at the same deadline come out in push order.

    The item behind a key is found in a table by the key's slot bits (a list slot costs
    8 bytes where a dict entry costs ~45); a key is live iff the item in its slot still
    carries it. A cancelled item's slot is reused at once: its dead key no longer matches.
    """

    __slots__ = ("_dead", "_free", "_heap", "_items", "_live", "_seq")

    def __init__(self) -> None:
        self._heap: list[int] = []
        self._items: list[Deadline | None] = []
        self._free: list[int] = []
        self._live = 0
        self._seq = itertools.count()
        self._dead = 0

    def __len__(self) -> int:
        return self._live

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
        old = item.heap_key
        if old is not None:
            slot = old & _SLOT_MASK  # the item keeps its slot; the old key goes stale
        elif self._free:
            slot = self._free.pop()
            self._items[slot] = item
            self._live += 1
        else:
            slot = len(self._items)
            self._items.append(item)
            self._live += 1
        # The key orders like (deadline, seq): IEEE-754 bits are monotonic in the value for
        # non-negative floats; negative ones are mirrored below zero. Computed inline: this
        # runs once per schedule created and once per tick re-armed.
        bits: int = _unpack_int64(_pack_double(deadline))[0]
        if bits < 0:
            bits = -(bits & _MAGNITUDE)
        key = (bits << 64) | ((next(self._seq) & _SEQ_MASK) << _SLOT_BITS) | slot
        item.heap_key = key
        item.heap_deadline = deadline
        heapq.heappush(self._heap, key)
        if old is not None:
            self._dead += 1
            self._compact_if_mostly_dead()

    def cancel(self, item: Deadline) -> bool:
        """Disarm ``item``; return whether it was armed. Compacts past the thresholds."""
        key = item.heap_key
        if key is None:
            return False
        item.heap_key = None
        slot = key & _SLOT_MASK
        self._items[slot] = None
        self._free.append(slot)
        live = self._live = self._live - 1
        dead = self._dead = self._dead + 1
        # The compaction test inlined (the heap holds `live + dead` keys): cancel is as
        # hot as a push in timeout-style use.
        if dead > live and live + dead > COMPACT_MIN_SIZE:
            self.compact()
        return True

    def _compact_if_mostly_dead(self) -> None:
        dead = self._dead
        if dead > self._live and len(self._heap) > COMPACT_MIN_SIZE:
            self.compact()

    def clear(self) -> None:
        """Disarm every item and empty the heap (a later ``cancel`` of one is a no-op)."""
        for item in self._items:
            if item is not None:
                item.heap_key = None
        self._items = []
        self._free = []
        self._heap = []
        self._live = 0
        self._dead = 0

    def compact(self) -> None:
        """Drop every dead key and re-heapify (O(live))."""
        keys = [item.heap_key for item in self._items if item is not None]
        self._heap = keys  # type: ignore[assignment]  # live items always carry a key
        heapq.heapify(self._heap)
        self._dead = 0

    def _item(self, key: int) -> Deadline | None:
        item = self._items[key & _SLOT_MASK]
        return item if item is not None and item.heap_key == key else None

    def next_deadline(self) -> float | None:
        """The earliest live deadline, or ``None``."""
        heap = self._heap
        while heap:
            item = self._item(heap[0])
            if item is not None:
                return item.heap_deadline
            heapq.heappop(heap)
            self._dead -= 1
        return None

    def pop_due(self, now: float) -> tuple[float, Deadline] | None:
        """Remove and return ``(deadline, item)`` for the earliest live item due at ``now``."""
        deadlines, items = self.pop_batch(now, 1)
        return (deadlines[0], items[0]) if items else None

    def pop_batch(self, now: float, limit: int) -> tuple[list[float], list[Deadline]]:
        """Remove the live items due at ``now``, earliest first, at most ``limit`` of them:
        their deadlines and the items, as two lists of one length.

        One call per batch (the timer's, ``DeadlineService``), with no call and no tuple
        per item: it runs once per tick of every schedule."""
        heap = self._heap
        table = self._items
        free = self._free
        heappop = heapq.heappop
        deadlines: list[float] = []
        items: list[Deadline] = []
        room = limit
        while heap and room:
            key = heap[0]
            slot = key & _SLOT_MASK
            item = table[slot]
            if item is None or item.heap_key != key:  # a dead key (see `_item`)
                heappop(heap)
                self._dead -= 1
                continue
            deadline = item.heap_deadline
            if deadline > now:
                break
            heappop(heap)
            item.heap_key = None
            table[slot] = None
            free.append(slot)
            deadlines.append(deadline)
            items.append(item)
            room -= 1
        self._live -= len(items)
        return deadlines, items
