# SPDX-License-Identifier: Apache-2.0
"""DeadlineHeap: agrees with a sorted-list model; compacts exactly past the named thresholds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from tocsin._deadlines import COMPACT_DEAD_RATIO, COMPACT_MIN_SIZE, Deadline, DeadlineHeap


class Item(Deadline):
    __slots__ = ("name",)

    def __init__(self, name: int) -> None:
        super().__init__()
        self.name = name

    def fire(self, now: float, deadline: float) -> None:
        """Never fired: these tests drive the heap directly."""

    def __repr__(self) -> str:
        return f"Item({self.name})"


def past_thresholds(size: int, dead: int) -> bool:
    return size > COMPACT_MIN_SIZE and dead > size * COMPACT_DEAD_RATIO


deadlines = st.floats(min_value=0, max_value=1000, allow_nan=False) | st.integers(0, 20).map(float)


class HeapAgreesWithSortedList(RuleBasedStateMachine):
    """The model: a list of ``(deadline, push_order, item)`` for the live items, kept sorted."""

    items = Bundle("items")

    @initialize()
    def setup(self) -> None:
        self.heap = DeadlineHeap()
        self.model: list[tuple[float, int, Item]] = []
        self.order = 0
        self.names = 0

    def _model_push(self, deadline: float, item: Item) -> None:
        self.model = [entry for entry in self.model if entry[2] is not item]
        self.order += 1
        self.model.append((deadline, self.order, item))
        self.model.sort(key=lambda entry: (entry[0], entry[1]))

    @rule(target=items, deadline=deadlines)
    def push_new(self, deadline: float) -> Item:
        self.names += 1
        item = Item(self.names)
        self.heap.push(deadline, item)
        self._model_push(deadline, item)
        return item

    @rule(target=items, n=st.integers(1, 60), base=deadlines)
    def push_many(self, n: int, base: float) -> Item:
        item = Item(-1)
        for i in range(n):
            self.names += 1
            item = Item(self.names)
            self.heap.push(base + i % 7, item)
            self._model_push(base + i % 7, item)
        return item

    @rule(item=items, deadline=deadlines)
    def repush(self, item: Item, deadline: float) -> None:
        self.heap.push(deadline, item)
        self._model_push(deadline, item)

    @rule(item=items)
    def cancel(self, item: Item) -> None:
        was_live = any(entry[2] is item for entry in self.model)
        assert self.heap.cancel(item) is was_live
        self.model = [entry for entry in self.model if entry[2] is not item]

    @rule(item=consumes(items))
    def cancel_and_forget(self, item: Item) -> None:
        self.cancel(item)

    @rule(now=deadlines)
    def pop_due(self, now: float) -> None:
        popped = self.heap.pop_due(now)
        if self.model and self.model[0][0] <= now:
            deadline, _, item = self.model.pop(0)
            assert popped == (deadline, item)
            assert not item.armed
        else:
            assert popped is None

    @rule(now=deadlines)
    def pop_all_due(self, now: float) -> None:
        got = []
        while (due := self.heap.pop_due(now)) is not None:
            got.append(due)
        expected = [(d, item) for d, _, item in self.model if d <= now]
        self.model = [entry for entry in self.model if entry[0] > now]
        assert got == expected

    @rule(now=deadlines, limit=st.integers(1, 8))
    def pop_batch(self, now: float, limit: int) -> None:
        deadlines, items = self.heap.pop_batch(now, limit)
        due = [(d, item) for d, _, item in self.model if d <= now][:limit]
        assert list(zip(deadlines, items, strict=True)) == due
        popped = {id(item) for _, item in due}
        self.model = [entry for entry in self.model if id(entry[2]) not in popped]
        assert all(not item.armed for item in items)

    @rule()
    def compact(self) -> None:
        self.heap.compact()
        assert self.heap.dead == 0
        assert self.heap.size == len(self.model)

    @invariant()
    def agrees(self) -> None:
        assert len(self.heap) == len(self.model)
        assert self.heap.dead >= 0
        assert self.heap.size == len(self.model) + self.heap.dead
        expected = self.model[0][0] if self.model else None
        assert self.heap.next_deadline() == expected
        for _, _, item in self.model:
            assert item.armed

    @invariant()
    def never_left_past_the_thresholds(self) -> None:
        assert not past_thresholds(self.heap.size, self.heap.dead)


TestHeapAgreesWithSortedList = HeapAgreesWithSortedList.TestCase
TestHeapAgreesWithSortedList.settings = settings(max_examples=100, stateful_step_count=50)


def fill(n: int) -> tuple[DeadlineHeap, list[Item]]:
    heap = DeadlineHeap()
    items = [Item(i) for i in range(n)]
    for i, item in enumerate(items):
        heap.push(float(i), item)
    return heap, items


def test_thresholds_are_the_named_module_constants() -> None:
    assert COMPACT_MIN_SIZE == 100
    assert COMPACT_DEAD_RATIO == 0.5


def test_cancel_compacts_exactly_when_dead_pass_the_ratio_of_a_heap_past_min_size() -> None:
    size = COMPACT_MIN_SIZE + 1
    heap, items = fill(size)
    limit = math.floor(size * COMPACT_DEAD_RATIO)  # the most dead tuples that stay
    for item in items[:limit]:
        heap.cancel(item)
    assert (heap.size, heap.dead) == (size, limit)
    heap.cancel(items[limit])  # one more: now past the ratio
    assert (heap.size, heap.dead) == (size - limit - 1, 0)
    assert len(heap) == size - limit - 1


def test_a_heap_at_min_size_never_compacts() -> None:
    heap, items = fill(COMPACT_MIN_SIZE)
    for item in items[:-1]:
        heap.cancel(item)
    assert heap.size == COMPACT_MIN_SIZE
    assert heap.dead == COMPACT_MIN_SIZE - 1
    assert len(heap) == 1
    assert heap.next_deadline() == float(COMPACT_MIN_SIZE - 1)
    assert heap.dead == 0  # dead heads were popped on the way


def test_re_arming_one_item_repeatedly_does_not_grow_the_heap_without_bound() -> None:
    heap, _ = fill(10)
    busy = Item(-1)
    for i in range(10_000):
        heap.push(1e6 + i, busy)  # never reaches the head: only compaction bounds it
    assert len(heap) == 11
    assert heap.size <= 2 * (COMPACT_MIN_SIZE + 1)


@given(st.lists(deadlines, min_size=1, max_size=200))
def test_pop_due_returns_items_in_deadline_then_push_order(values: list[float]) -> None:
    heap = DeadlineHeap()
    items = [Item(i) for i in range(len(values))]
    for value, item in zip(values, items, strict=True):
        heap.push(value, item)
    popped = []
    while (due := heap.pop_due(math.inf)) is not None:
        popped.append(due)
    assert popped == sorted(zip(values, items, strict=True), key=lambda p: (p[0], p[1].name))


def test_cancel_of_an_unarmed_item_is_a_no_op() -> None:
    heap = DeadlineHeap()
    item = Item(0)
    assert not heap.cancel(item)
    heap.push(1.0, item)
    assert heap.cancel(item)
    assert not heap.cancel(item)
    assert (len(heap), heap.size, heap.dead) == (0, 1, 1)
    assert heap.pop_due(10) is None
    assert (heap.size, heap.dead) == (0, 0)


def test_clear_disarms_every_item() -> None:
    heap, items = fill(5)
    heap.cancel(items[0])
    heap.push(9.0, items[1])
    heap.clear()
    assert (len(heap), heap.size, heap.dead) == (0, 0, 0)
    assert not any(item.armed for item in items)
    assert not heap.cancel(items[2])
    assert heap.dead == 0


def test_deadline_base_class_fire_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Deadline()  # type: ignore[abstract]
