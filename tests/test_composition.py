# SPDX-License-Identifier: Apache-2.0
"""Issue 21: the facade composes on one stack, hooks are ``add_x(fn) -> remove`` pairs,
and the layers above the kernel read it through methods and snapshots, not privates.

- ``ActorSystem.start()`` pushes each service's undo on an ``AsyncExitStack``: a start
  that fails unwinds exactly what it had started, and ``stop()`` (the grace, then the
  same ``aclose()``) unwinds in the same order.
- ``Clock.attach`` / ``Clock.detach`` are public hooks a custom clock may override.
- ``Runtime.add_stop_listener`` / ``add_path_resolver`` / ``add_service`` /
  ``add_resolver`` and ``EventStream.add_task_tracker`` return their removers.
- ``target_of(pid)`` is the kernel's one reader of a PID's target; ``Scheduler.statistics()``
  is a frozen snapshot.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tocsin import Actor, ActorSystem, Clock, ManualClock, ReceiveContext
from tocsin.actor._spi import PID, Cell, target_of
from tocsin.clock import TimerHandle
from tocsin.durable import DurableActor
from tocsin.durable._spi import DurableStatistics, durable_of
from tocsin.scheduling._spi import Scheduler, SchedulerStatistics
from tocsin.system import SERVICES, OptionalService


class Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


class RecordingClock(Clock):
    """A custom clock overriding the public hooks (time from a ManualClock inside): it
    records what the system does with it."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log
        self.inner = ManualClock()

    def monotonic(self) -> float:
        return self.inner.monotonic()

    def wall(self) -> float:
        return self.inner.wall()

    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        return self.inner.call_at(deadline, callback)

    def attach(self, tracker: Any) -> None:
        self.log.append("clock attached")
        self.inner.attach(tracker)

    def detach(self, tracker: Any) -> None:
        self.log.append("clock detached")
        self.inner.detach(tracker)


def _console_service(log: list[str], fail_start: list[bool] | None = None) -> OptionalService:
    """A stand-in for the console (the ``console=`` option), recording its life; its
    start fails while ``fail_start`` holds True."""

    def check(value: object, token: str | None) -> None:
        pass

    async def start(
        system: ActorSystem, value: object, token: str | None
    ) -> Callable[[], Awaitable[None]]:
        assert system.running  # started last: the rest is up
        if fail_start and fail_start[0]:
            log.append("option failed")
            raise OSError("address in use")
        log.append("option started")

        async def close() -> None:
            # Closed first, before the grace: the runtime still runs.
            log.append(f"option closed (running: {system.running})")

        return close

    return OptionalService(check=check, start=start)


async def test_a_custom_clock_is_attached_at_start_and_detached_at_stop() -> None:
    log: list[str] = []
    clock = RecordingClock(log)
    system = ActorSystem(clock=clock)
    await system.start()
    assert log == ["clock attached"]
    await system.stop()
    assert log == ["clock attached", "clock detached"]


async def test_stop_closes_the_option_first_then_unwinds_the_start_in_reverse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    monkeypatch.setitem(SERVICES, "console", _console_service(log))
    clock = RecordingClock(log)
    system = ActorSystem(clock=clock, console="x")
    await system.start()
    await system.spawn(Sink, "a")
    runtime = system.runtime
    assert runtime is not None
    schedules = runtime.schedules
    assert isinstance(schedules, Scheduler)
    await system.schedule("tick", await system.actor_of("a"), 60.0, reference="r")
    await system.stop()
    assert log == [
        "clock attached",
        "option started",
        "option closed (running: True)",
        "clock detached",
    ]
    assert not runtime.running
    assert len(schedules) == 0  # the runtime's undo cancelled every schedule
    assert len(runtime.deadlines) == 0
    assert clock.inner.next_deadline() is None


async def test_a_start_failing_at_its_last_service_unwinds_everything_and_can_be_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    failing = [True]
    monkeypatch.setitem(SERVICES, "console", _console_service(log, failing))
    clock = RecordingClock(log)
    system = ActorSystem(clock=clock, console="x")
    with pytest.raises(OSError, match="address in use"):
        await system.start()
    assert log == ["clock attached", "option failed", "clock detached"]
    runtime = system.runtime
    assert runtime is not None
    assert not runtime.running
    assert len(runtime.deadlines) == 0
    assert len(runtime.stop_listeners) == 0  # the scheduler's listener was removed
    assert system.events._track is None  # the task tracker too

    log.clear()
    failing[0] = False
    await system.start()
    assert system.running
    await system.stop()
    assert log == [
        "clock attached",
        "option started",
        "option closed (running: True)",
        "clock detached",
    ]


async def test_a_failed_start_and_a_stop_leave_the_same_hooks_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(SERVICES, "console", _console_service([], [True]))
    failed = ActorSystem(clock=ManualClock(), console="x", store="memory://")
    with pytest.raises(OSError):
        await failed.start()
    stopped = ActorSystem(clock=ManualClock(), store="memory://")
    await stopped.start()
    await stopped.stop()
    for system in (failed, stopped):
        runtime = system.runtime
        assert runtime is not None
        assert runtime.stop_listeners == ()
        assert runtime.path_resolvers == ()
        assert dict(runtime.services) == {}


# -- hooks -------------------------------------------------------------------------------


async def test_each_runtime_hook_returns_a_remover_that_is_idempotent() -> None:
    async with ActorSystem(clock=ManualClock()) as system:
        runtime = system.runtime
        assert runtime is not None
        stopped: list[str] = []

        def listener(cell: Cell) -> None:
            stopped.append(cell.pid.path)

        def resolver(path: str) -> PID | None:
            return None

        before = runtime.stop_listeners
        remove_listener = runtime.add_stop_listener(listener)
        remove_resolver = runtime.add_path_resolver(resolver)
        remove_service = runtime.add_service("probe", resolver)
        assert runtime.stop_listeners == (*before, listener)
        assert resolver in runtime.path_resolvers
        assert runtime.services["probe"] is resolver

        pid = await system.spawn(Sink, "a")
        await system.stop_actor(pid)
        assert stopped == ["/user/a"]

        for remove in (remove_listener, remove_resolver, remove_service):
            remove()
            remove()  # a second call is a no-op
        assert runtime.stop_listeners == before
        assert len(runtime.path_resolvers) == 0
        assert "probe" not in runtime.services
        await system.stop_actor(await system.spawn(Sink, "b"))
        assert stopped == ["/user/a"]


async def test_a_service_name_has_one_holder() -> None:
    async with ActorSystem(clock=ManualClock()) as system:
        runtime = system.runtime
        assert runtime is not None
        first, second = object(), object()
        remove = runtime.add_service("probe", first)
        with pytest.raises(ValueError, match="'probe' is already registered"):
            runtime.add_service("probe", second)
        runtime.add_service("probe", first)  # the same one again: no error
        with pytest.raises(TypeError):
            runtime.services["probe"] = second  # type: ignore[index]
        remove()
        runtime.add_service("probe", second)()
        assert "probe" not in runtime.services


async def test_a_listener_removed_while_listeners_run_does_not_skip_the_next() -> None:
    """The hooks are tuples, replaced whole: removing one mid-call cannot skip another."""
    async with ActorSystem(clock=ManualClock()) as system:
        runtime = system.runtime
        assert runtime is not None
        calls: list[str] = []
        removers: list[Callable[[], None]] = []

        def first(cell: Cell) -> None:
            calls.append("first")
            removers[0]()

        def second(cell: Cell) -> None:
            calls.append("second")

        removers.append(runtime.add_stop_listener(first))
        runtime.add_stop_listener(second)
        await system.stop_actor(await system.spawn(Sink, "a"))
        await system.stop_actor(await system.spawn(Sink, "b"))
        assert calls == ["first", "second", "second"]


async def test_the_task_tracker_hook_counts_async_handlers_until_removed() -> None:
    async with ActorSystem(clock=ManualClock()) as system:
        tracked: list[asyncio.Task[Any]] = []
        remove = system.events.add_task_tracker(tracked.append)

        async def handler(event: object) -> None:
            pass

        system.events.subscribe(handler, str)
        system.events.publish("one")
        assert len(tracked) == 1
        remove()
        system.events.publish("two")
        assert len(tracked) == 1
        await asyncio.sleep(0)


# -- reads through methods ---------------------------------------------------------------


async def test_target_of_is_what_a_pid_sends_to_and_refuses_anything_else() -> None:
    async with ActorSystem(clock=ManualClock()) as system:
        pid = await system.spawn(Sink, "a")
        target = target_of(pid)
        assert target.alive()
        assert target is target_of(await system.actor_of("a"))
        with pytest.raises(TypeError, match=r"expected a PID .* got 'a'"):
            target_of("a")  # type: ignore[arg-type]


async def test_scheduler_statistics_is_a_frozen_snapshot() -> None:
    clock = ManualClock()
    async with ActorSystem(clock=clock) as system:
        pid = await system.spawn(Sink, "a")
        await system.schedule("tick", pid, 1.0, reference="every")
        await system.schedule_once("once", pid, 100.0, reference="later")
        await system.pause_schedule("later")
        await clock.advance(2.0)
        runtime = system.runtime
        assert runtime is not None
        scheduler = runtime.schedules
        assert isinstance(scheduler, Scheduler)
        stats = scheduler.statistics()
        assert isinstance(stats, SchedulerStatistics)
        assert stats.fired == 2
        assert dict(stats.by_kind) == {("interval", False): 1, ("once", True): 1}
        assert set(stats.last_lateness) == {"every"}
        assert stats.lateness[:2] == (0.0, 0.0)  # ManualClock fires each on time
        with pytest.raises(dataclasses.FrozenInstanceError):
            stats.fired = 0  # type: ignore[misc]
        await clock.advance(1.0)
        assert stats.fired == 2  # a snapshot: later ticks do not move it
        assert scheduler.statistics().fired == 3


class Counted(DurableActor):
    kind = "CompositionCounted"

    async def work(self, payload: Any) -> None:
        pass


async def test_durable_statistics_is_a_frozen_snapshot_and_timing_is_switched_on() -> None:
    clock = ManualClock()
    async with ActorSystem(clock=clock, store="memory://") as system:
        await system.durable(Counted, "a")
        durable = durable_of(system.runtime)
        assert durable is not None
        before = durable.statistics()
        assert isinstance(before, DurableStatistics)
        assert (before.identities_known, before.identities_active) == (1, 1)
        assert not before.timed
        assert before.runs == 0
        durable.time_runs()
        assert durable.statistics().timed
        with pytest.raises(dataclasses.FrozenInstanceError):
            before.runs = 1  # type: ignore[misc]
        assert before.timed is False  # a snapshot: switching timing on did not move it
        assert len(durable.statistics().durations) == len(durable.counters.durations)
