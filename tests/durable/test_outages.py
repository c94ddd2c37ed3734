# SPDX-License-Identifier: Apache-2.0
"""Outages heal by themselves (issue 20, items 1-3), on a ManualClock: a store that fails
some calls, then recovers, never ends an alarm or the look-ahead poll; each re-arms after
a capped backoff, the outage is logged once, and no background task dies unobserved."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tocsin import ActorSystem, DeadLetter, ManualClock
from tocsin.durable import Call, DurableActor
from tocsin.durable._outage import RETRY_CAP, retry_delay
from tocsin.errors import StoreError
from tocsin.stores import DueActor, MemoryStore

T0 = 1_700_000_000.0
RUNS: list[tuple[str, str, float]] = []  # (identity, method, seconds since T0)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


@pytest.fixture(autouse=True)
def no_task_dies_unobserved(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Fails the test if any task's exception is never retrieved (or any other error
    reaches a loop's exception handler): a background loop died silently. Every loop's
    handler is replaced, so the report of a task collected after its loop closed counts."""
    seen: list[dict[str, Any]] = []

    def report(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        seen.append(context)

    monkeypatch.setattr(asyncio.BaseEventLoop, "call_exception_handler", report)
    yield seen
    gc.collect()  # a dropped task with an exception reports it when collected
    assert not seen, [c.get("message") for c in seen]


class FlakyStore:
    """A MemoryStore whose named calls fail (``StoreError``) the next ``times`` calls."""

    def __init__(self, inner: MemoryStore | None = None) -> None:
        self.inner = inner if inner is not None else MemoryStore()
        self.failing: set[str] = set()
        self.left = 0
        self.failed = 0

    def fail(self, *names: str, times: int) -> None:
        self.failing = set(names)
        self.left = times

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name not in self.failing:
            return method

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.left > 0:
                self.left -= 1
                self.failed += 1
                raise StoreError(f"injected failure of {name}")
            return await method(*args, **kwargs)

        return call


class Counter(DurableActor):
    kind = "outage-test.Counter"

    async def start_every(self, interval: float) -> str:
        return await self.every(interval, "tick", id="tick")

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "tick")

    async def tick(self, payload: Any) -> None:
        RUNS.append((self.identity, "tick", self.now().timestamp() - T0))


def ticks() -> list[float]:
    return [t for _, _, t in RUNS]


def outage_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "logged once per outage" in r.getMessage()]


async def test_retry_delay_doubles_from_a_tenth_of_a_second_up_to_the_cap() -> None:
    assert [retry_delay(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, RETRY_CAP, RETRY_CAP]
    assert retry_delay(1000) == RETRY_CAP
    assert retry_delay(3, cap=0.25) == 0.25


async def test_a_drain_whose_store_call_fails_keeps_the_alarm(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue 20, item 1: the identity's `every` stopped until the next look-ahead poll.
    store = FlakyStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("outage", clock=clock, store=store) as system:
        pid = await system.durable(Counter, "c")
        await pid.ask(Call("start_every", 10))
        await clock.advance(10)
        assert ticks() == [10.0]
        store.fail("due_work", times=6)  # 0.1 + 0.2 + 0.4 + 0.8 + 1 + 1 = 3.5 s down
        with caplog.at_level(logging.INFO, logger="tocsin.durable"):
            await clock.advance(10)  # t = 20: the drain fails, retried with backoff
            assert ticks() == [10.0]
            await clock.advance(3.4)
            assert ticks() == [10.0]  # still failing
            await clock.advance(0.1)  # t = 23.5: the 7th call answers: the tick runs
        assert ticks() == [10.0, 23.5]
        assert store.failed == 6
        assert len(outage_warnings(caplog)) == 1  # once per outage, with the cause
        assert "injected failure of due_work" in outage_warnings(caplog)[0]
        assert any("answers again" in r.getMessage() for r in caplog.records)
        await clock.advance(10)  # the schedule goes on
        assert ticks() == [10.0, 23.5, 30.0]  # back on the 10 s grid after the outage


async def test_a_drain_whose_commit_fails_runs_the_task_again_and_keeps_the_alarm() -> None:
    store = FlakyStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("outage", clock=clock, store=store) as system:
        pid = await system.durable(Counter, "c")
        await pid.ask(Call("later", 5))
        store.fail("apply", times=1)  # the completion (the task's delete) fails
        await clock.advance(5)
        assert ticks() == [5.0]
        await clock.advance(0.1)  # at least once: not marked done, so it runs again
        assert ticks() == pytest.approx([5.0, 5.1])
        await clock.advance(60)
        assert ticks() == pytest.approx([5.0, 5.1])  # and then it is done


async def test_reading_the_alarm_at_activation_fails_and_the_alarm_is_retried() -> None:
    inner = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("outage", clock=clock, store=inner) as system:
        pid = await system.durable(Counter, "c", passivate_after=1.0)
        await pid.ask(Call("later", 30))
    store = FlakyStore(inner)
    async with ActorSystem("outage", clock=clock, store=store) as system:
        store.fail("next_due", times=1)
        pid = await system.durable(Counter, "c")  # the activation's next_due fails
        await clock.advance(30)
        assert ticks() == [30.0]


async def test_a_failing_lookahead_poll_is_armed_again() -> None:
    # Issue 20, item 2: a failed poll was never re-armed: polling stopped for good, and
    # a passivated identity's tasks never ran ("Task exception was never retrieved").
    inner = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("outage", clock=clock, store=inner) as system:
        pid = await system.durable(Counter, "c", passivate_after=1.0)
        await pid.ask(Call("later", 400))  # beyond the look-ahead: in the store only
    store = FlakyStore(inner)
    async with ActorSystem("outage", clock=clock, store=store):
        store.fail("due_actors", times=3)
        await clock.advance(150)  # the periodic poll fails, then twice more
        await clock.advance(0.7)  # 0.1 + 0.2 + 0.4: the fourth poll arms the alarm
        assert store.failed == 3
        await clock.advance(400 - 150.7)
        assert ticks() == [400.0]


async def test_a_poll_asked_for_while_one_runs_runs_after_it() -> None:
    # A lease regained while a poll (made without a lease) was running must still poll.
    store = FlakyStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("outage", clock=clock, store=store) as system:
        pid = await system.durable(Counter, "c", passivate_after=1.0)
        await pid.ask(Call("later", 100))
        polls = 0
        gate = asyncio.Event()
        original = store.inner.due_actors

        async def slow_due_actors(before: float, limit: int) -> list[DueActor]:
            nonlocal polls
            polls += 1
            if polls == 1:
                await gate.wait()
            return await original(before, limit)

        store.inner.due_actors = slow_due_actors  # type: ignore[method-assign]
        store.failing = {"none"}
        from tocsin.durable._spi import durable_of

        runtime = durable_of(system._runtime)
        assert runtime is not None
        runtime.poll_soon()
        await asyncio.sleep(0)
        runtime.poll_soon()  # while the first one runs
        gate.set()
        await clock.advance(0)
        assert polls == 2


async def test_a_tell_of_a_call_from_outside_an_actor_adds_no_dead_letter() -> None:
    # Issue 20, item 8: each one added a `not_found` dead letter (its reply to NoSender).
    clock = ManualClock(wall=T0)
    async with ActorSystem("outage", clock=clock) as system:
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid = await system.durable(Counter, "c")
        pid.tell(Call("later", 5))
        await clock.advance(5)
        assert ticks() == [5.0]
        assert letters == []
        assert system.dead_letters == 0
