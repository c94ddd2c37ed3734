# SPDX-License-Identifier: Apache-2.0
"""Drains across identities in batches (issue 32), on a ManualClock: the completions of
drains ending together are one store write; a drain reads its work once (``due_work``)
and arms its alarm from that and its own writes, without a ``next_due`` after its
commit; a batch the store refuses fails only its own drain (at least once)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from typing import Any

import pytest

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor
from tocsin.errors import StoreError
from tocsin.stores import MemoryStore, Op, UpsertTask

T0 = 1_700_000_000.0
RUNS: list[tuple[str, str, float]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Reminder(DurableActor):
    kind = "batched-test.Reminder"

    async def later(self, arg: list[Any]) -> str:
        delay, method = arg
        return await self.schedule(delay, method)

    def ping(self, _: object) -> None:
        RUNS.append((self.identity, "ping", self.now().timestamp() - T0))

    async def ping_and_add(self, _: object) -> None:
        RUNS.append((self.identity, "ping_and_add", self.now().timestamp() - T0))
        await self.schedule(1, "ping")  # written during the drain: its alarm stays

    def poisoned(self, _: object) -> None:
        RUNS.append((self.identity, "poisoned", self.now().timestamp() - T0))


class CountingStore:
    """A MemoryStore counting calls by name; ``refuse`` fails every ``apply`` whose batch
    deletes a task of that identity (a batch the store refuses)."""

    def __init__(self, inner: MemoryStore | None = None) -> None:
        self.inner = inner if inner is not None else MemoryStore()
        self.calls: dict[str, int] = {}
        self.batches: list[int] = []
        self.refuse: str | None = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if not callable(method):
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args, **kwargs)

        return counted

    async def apply(self, ops: Sequence[Op]) -> None:
        self.calls["apply"] = self.calls.get("apply", 0) + 1
        if self.refuse is not None and any(
            getattr(op, "identity", None) == self.refuse and not isinstance(op, UpsertTask)
            for op in ops
        ):
            raise StoreError(f"refused a batch with {self.refuse}")
        self.batches.append(len(ops))
        await self.inner.apply(ops)


class OldStore(CountingStore):
    """A store without the optional ``due_work`` (written against the older protocol)."""

    def __getattr__(self, name: str) -> Any:
        if name == "due_work":
            raise AttributeError(name)
        return super().__getattr__(name)


async def test_drains_ending_together_commit_in_one_write_and_read_no_next_due() -> None:
    store = CountingStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=store) as system:
        for i in range(20):
            pid = await system.durable(Reminder, f"r{i}")
            await pid.ask(Call("later", [5, "ping"]))
        store.calls.clear()
        store.batches.clear()
        await clock.advance(5)
        assert sorted(RUNS) == sorted((f"r{i}", "ping", 5.0) for i in range(20))
        assert store.calls.get("next_due", 0) == 0  # folded into each drain's one read
        assert store.calls["due_work"] == 20
        assert store.calls["apply"] < 20  # group commit: not one write per identity
        assert sum(store.batches) == 20  # every completion (a delete) written, once
        assert await store.inner.list_tasks() == []


async def test_the_alarm_comes_from_the_read_and_the_drains_own_writes() -> None:
    store = CountingStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=store) as system:
        pid = await system.durable(Reminder, "r")
        await pid.ask(Call("later", [5, "ping_and_add"]))
        await pid.ask(Call("later", [30, "ping"]))  # `later` of the first drain's read
        store.calls.clear()  # the activation read its alarm (next_due) once
        await clock.advance(5)
        await clock.advance(1)  # the task the drain added rings on time
        await clock.advance(24)  # and the one the drain's read saw after its window
        assert RUNS == [("r", "ping_and_add", 5.0), ("r", "ping", 6.0), ("r", "ping", 30.0)]
        # Only the drain whose task wrote a sooner task asked the store (next_due) again.
        assert store.calls["next_due"] == 1
        assert store.calls["due_work"] == 3


async def test_a_store_without_due_work_still_arms_from_next_due() -> None:
    store = OldStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=store) as system:
        pid = await system.durable(Reminder, "r")
        await pid.ask(Call("later", [5, "ping"]))
        await pid.ask(Call("later", [30, "ping"]))
        await clock.advance(5)
        await clock.advance(25)
        assert RUNS == [("r", "ping", 5.0), ("r", "ping", 30.0)]
        assert store.calls["next_due"] >= 2


async def test_a_refused_batch_fails_only_its_own_drain_which_runs_again() -> None:
    store = CountingStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=store) as system:
        for name in ("a", "bad", "c"):
            pid = await system.durable(Reminder, name)
            await pid.ask(Call("later", [5, "poisoned" if name == "bad" else "ping"]))
        store.refuse = "bad"
        await clock.advance(5)
        assert sorted(RUNS) == [("a", "ping", 5.0), ("bad", "poisoned", 5.0), ("c", "ping", 5.0)]
        # The others' completions were written alone after the group was refused.
        assert [r.identity for r in await store.inner.list_tasks()] == ["bad"]
        store.refuse = None
        await clock.advance(0.1)  # at least once: the refused drain's task runs again
        assert RUNS[-1][:2] == ("bad", "poisoned")
        assert RUNS[-1][2] == pytest.approx(5.1)
        assert await store.inner.list_tasks() == []


async def _store_with_reminders(count: int, delay: float) -> MemoryStore:
    """A store holding one reminder for each of ``count`` passivated identities."""
    inner = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner) as system:
        for i in range(count):
            pid = await system.durable(Reminder, f"r{i}", passivate_after=0.5)
            await pid.ask(Call("later", [delay, "ping"]))
        await clock.advance(1)  # every identity passivates
    return inner


async def test_identities_due_soon_wait_without_a_handle_in_under_1_kb_each() -> None:
    count = 2_000
    inner = await _store_with_reminders(count, 60)
    clock = ManualClock(wall=T0)
    system = ActorSystem("batched", clock=clock, store=inner)
    tracemalloc.start()
    try:
        await system.start()
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        durable = system._durable
        assert durable is not None
        assert durable.handles == {}  # nothing built until its time comes
        assert len(durable.held()) == count
        assert durable.identities() == (count, 0)
        assert kept / count < 1024, kept / count
        await clock.advance(59)
        assert RUNS == []
        await clock.advance(1)
        assert sorted(RUNS) == sorted((f"r{i}", "ping", 60.0) for i in range(count))
        assert len(durable.soon) == 0
        assert await inner.list_tasks() == []
    finally:
        await system.stop()


async def test_a_wall_step_rings_waiting_identities_at_their_new_time() -> None:
    inner = await _store_with_reminders(3, 60)
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner) as system:
        durable = system._durable
        assert durable is not None
        assert len(durable.soon) == 3
        clock.jump_wall(50)  # NTP step: the reminders are due in 10 s of monotonic time
        await clock.advance(9.9)
        assert RUNS == []
        await clock.advance(0.1)
        assert sorted(i for i, _, _ in RUNS) == ["r0", "r1", "r2"]


async def test_a_sooner_poll_moves_a_waiting_identity_forward_and_a_later_one_does_not() -> None:
    inner = await _store_with_reminders(1, 60)
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner) as system:
        durable = system._durable
        assert durable is not None
        key = (Reminder.kind, "r0")
        assert durable.soon.dues == {key: T0 + 60}
        durable.soon.arm(key, T0 + 90)
        assert durable.soon.dues == {key: T0 + 60}
        durable.soon.arm(key, T0 + 30)  # e.g. an outside change made it sooner
        await clock.advance(30)  # rings: the drain finds nothing due yet, arms for 60
        assert RUNS == []
        assert durable.held() == {key}
        assert len(durable.soon) == 0
        await clock.advance(30)
        assert RUNS == [("r0", "ping", 60.0)]
