# SPDX-License-Identifier: Apache-2.0
"""ManualClock's idleness: time moves only when the event loop has nothing left to run.

Idle means every task is blocked on simulated time or on nothing, and no real I/O (a
store, coordinator or thread call marked with ``real_io``, a real ``asyncio.sleep``) is in
flight. The loop reports it (``tocsin._idle``): no real-time polling. The tests with a
helper thread use it to stand for a slow store call; they assert outcomes, never speed.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    ManualClock,
    ReceiveContext,
    SystemClock,
)
from tocsin._idle import watch
from tocsin.clock import OffsetClock, real_io

#: Real seconds a helper thread may take before a test gives up on it (a bound, not a
#: speed assertion: the outcome is what is checked).
THREAD_BOUND = 30.0


def slow_call(gate: threading.Event) -> Any:
    """A blocking call on a thread that ends when ``gate`` is set (by another thread)."""
    return asyncio.get_running_loop().run_in_executor(None, gate.wait, THREAD_BOUND)


def release_later(gate: threading.Event, started: threading.Event) -> threading.Thread:
    """Set ``gate`` from a plain thread once ``started`` is set and a moment has passed:
    the call stays in flight across several idle moments of the loop."""

    def run() -> None:
        started.wait(THREAD_BOUND)
        threading.Event().wait(0.2)  # the loop goes idle many times meanwhile
        gate.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


class SlowStore(Actor):
    """Each message: a 'store call' on a thread (marked real_io), then a log entry."""

    def __init__(self, log: list[str], gate: threading.Event, started: threading.Event):
        self.log = log
        self.gate = gate
        self.started = started

    async def receive(self, ctx: ReceiveContext) -> None:
        with real_io():
            self.started.set()
            await slow_call(self.gate)
        self.log.append(ctx.message)


async def test_advance_waits_for_a_slow_call_in_flight_however_long_it_takes() -> None:
    clock = ManualClock()
    log: list[str] = []
    gate, started = threading.Event(), threading.Event()
    async with ActorSystem(clock=clock) as system:
        pid = await system.spawn(lambda: SlowStore(log, gate, started), "slow")
        thread = release_later(gate, started)
        await system.schedule_once("tick", pid, 5)
        await clock.advance(10)
        # Not "tick may still be in flight": advance returned only once the call landed.
        assert log == ["tick"]
        thread.join(THREAD_BOUND)


async def test_autojump_never_jumps_while_real_io_is_in_flight() -> None:
    clock = ManualClock(autojump=True)
    fired: list[float] = []
    clock.call_at(86_400, lambda: fired.append(clock.monotonic()))
    gate, started = threading.Event(), threading.Event()
    thread = release_later(gate, started)
    with real_io():
        clock.autojump = True  # hooked on this loop now
        started.set()
        await slow_call(gate)
        assert clock.monotonic() == 0
        assert fired == []
    await clock.sleep(86_400)
    assert fired == [86_400]
    thread.join(THREAD_BOUND)


async def test_autojump_never_jumps_during_a_real_asyncio_sleep() -> None:
    # The trap: 0.5 s of real asyncio.sleep used to move an autojump clock 7.8 days.
    clock = ManualClock(autojump=True)
    ticks: list[float] = []

    def every_minute() -> None:
        ticks.append(clock.monotonic())
        clock.call_at(clock.monotonic() + 60, every_minute)

    clock.call_at(60, every_minute)
    clock.autojump = True
    await asyncio.sleep(0.05)
    assert clock.monotonic() == 0
    assert ticks == []
    await clock.sleep(150)  # simulated: exactly two and a half minutes
    assert clock.monotonic() == 150
    assert ticks == [60, 120]


async def test_settle_returns_while_an_actor_waits_on_simulated_time() -> None:
    # The actor is busy (in a message) but blocked on simulated time: that is idle.
    clock = ManualClock()
    woke: list[float] = []

    class Napper(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await clock.sleep(30)
            woke.append(clock.monotonic())

    async with ActorSystem(clock=clock) as system:
        pid = await system.spawn(Napper, "napper")
        pid.tell("nap")
        await clock.settle()
        assert woke == []
        await clock.advance(29.5)
        assert woke == []
        await clock.advance(0.5)
        assert woke == [30]


async def test_settle_runs_every_runnable_task_before_returning() -> None:
    done: list[int] = []

    async def chain(n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)
        done.append(n)

    tasks = [asyncio.create_task(chain(n)) for n in (1, 50, 500)]
    await ManualClock().settle()
    assert sorted(done) == [1, 50, 500]
    await asyncio.gather(*tasks)


async def test_clock_sleep_on_each_clock() -> None:
    manual = ManualClock(autojump=True)
    manual.autojump = True
    await manual.sleep(3600)
    assert manual.monotonic() == 3600
    await OffsetClock(manual, 30.0).sleep(60)
    assert manual.monotonic() == 3660
    system = SystemClock()
    before = system.monotonic()
    await system.sleep(0)
    assert system.monotonic() >= before


async def test_clock_sleep_without_autojump_waits_for_advance() -> None:
    clock = ManualClock()
    sleeper = asyncio.create_task(clock.sleep(10))
    await clock.advance(9)
    assert not sleeper.done()
    await clock.advance(1)
    assert sleeper.done()
    await sleeper


@pytest.mark.parametrize("clock", [ManualClock(), SystemClock()], ids=["manual", "system"])
@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (-1, ValueError, "`seconds` must be a finite number of seconds >= 0, got -1"),
        (float("nan"), ValueError, "got nan"),
        (float("inf"), ValueError, "got inf"),
        ("1", TypeError, "`seconds` must be a number of seconds, got '1'"),
        (True, TypeError, "got True"),
    ],
)
async def test_clock_sleep_rejects_bad_seconds_naming_them(
    clock: Any, bad: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        await clock.sleep(bad)


def test_a_loop_without_a_selector_is_refused_with_a_type_error() -> None:
    class NotSelectorLoop:
        pass

    with pytest.raises(TypeError, match="needs one of asyncio's selector event loops"):
        watch(NotSelectorLoop())  # type: ignore[arg-type]


async def test_real_io_outside_a_watched_loop_costs_nothing_and_counts_nothing() -> None:
    loop = asyncio.new_event_loop()
    try:
        with real_io():  # this test's loop is watched only if a clock used it
            pass
        loop_watch = watch(asyncio.get_running_loop())
        with real_io():
            assert loop_watch.in_flight == 1
        assert loop_watch.in_flight == 0
    finally:
        loop.close()


async def test_a_task_waiting_for_idleness_inside_an_advance_wakes_before_the_next_timer() -> None:
    # advance runs the work each timer makes one loop turn at a time; a settle() begun
    # by that work must still return at the idle moment that follows it, not later.
    clock = ManualClock()
    seen: list[float] = []
    tasks: list[asyncio.Task[None]] = []

    async def settle_then_note() -> None:
        await clock.settle()
        seen.append(clock.monotonic())

    clock.call_at(1, lambda: tasks.append(asyncio.ensure_future(settle_then_note())))
    clock.call_at(2, lambda: seen.append(clock.monotonic()))
    await clock.advance(5)
    await asyncio.gather(*tasks)
    assert seen == [1, 2]


async def test_advance_ends_with_the_error_a_timer_callback_raised_and_leaves_the_rest() -> None:
    clock = ManualClock()
    fired: list[float] = []

    def broken() -> None:
        raise RuntimeError("broken callback")

    clock.call_at(1, lambda: fired.append(clock.monotonic()))
    clock.call_at(2, broken)
    clock.call_at(3, lambda: fired.append(clock.monotonic()))
    with pytest.raises(RuntimeError, match="broken callback"):
        await clock.advance(5)
    assert fired == [1]
    assert clock.next_deadline() == 3
    await clock.advance(5)
    assert fired == [1, 3]


async def test_a_cancelled_advance_fires_nothing_more() -> None:
    clock = ManualClock()
    fired: list[float] = []
    advancing: list[asyncio.Task[None]] = []
    workers: list[asyncio.Task[None]] = []

    def work() -> None:
        # Work that keeps the loop busy for a few turns, then cancels the advance.
        async def busy() -> None:
            for _ in range(3):
                await asyncio.sleep(0)
            advancing[0].cancel()

        fired.append(clock.monotonic())
        workers.append(asyncio.ensure_future(busy()))

    clock.call_at(1, work)
    clock.call_at(2, lambda: fired.append(clock.monotonic()))
    advancing.append(asyncio.ensure_future(clock.advance(5)))
    with pytest.raises(asyncio.CancelledError):
        await advancing[0]
    await asyncio.gather(*workers)
    await clock.settle()
    await clock.settle()  # an idle moment at which a stray advance would fire the next
    assert fired == [1]
    assert clock.next_deadline() == 2


async def test_a_task_that_waits_for_idleness_over_and_over_does_not_hold_an_advance_back() -> None:
    # Each idle moment fires a timer, whoever else was woken at it.
    clock = ManualClock()
    seen: list[float] = []
    for second in range(1, 11):
        clock.call_at(second, lambda: None)

    async def settle_over_and_over() -> None:
        for _ in range(50):
            await clock.settle()
            seen.append(clock.monotonic())

    looping = asyncio.ensure_future(settle_over_and_over())
    await clock.advance(10)
    await looping
    assert seen[:12].count(10) >= 1  # time had moved to the end well before 50 rounds
