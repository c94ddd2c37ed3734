# SPDX-License-Identifier: Apache-2.0
"""DeadlineService: one armed timer, one batch per timer callback, MAX_FIRES_PER_TURN."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from tocsin._deadlines import MAX_FIRES_PER_TURN, Deadline, DeadlineService
from tocsin.clock import Clock, ManualClock, TimerHandle


class StubTimer:
    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class StubClock(Clock):
    """A clock whose timers fire only when the test says so (one callback = one turn)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.timers: list[StubTimer] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.now

    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        timer = StubTimer(deadline, callback)
        self.timers.append(timer)
        return timer

    def armed(self) -> list[StubTimer]:
        return [t for t in self.timers if not t.cancelled]

    def run_turn(self) -> None:
        """Fire the one armed timer (it must be due)."""
        (timer,) = self.armed()
        assert timer.deadline <= self.now
        timer.cancelled = True  # one-shot
        timer.callback()


class Recorded(Deadline):
    __slots__ = ("log", "name", "on_fire")

    def __init__(
        self,
        name: str,
        log: list[tuple[str, float, float]],
        on_fire: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__()
        self.name = name
        self.log = log
        self.on_fire = on_fire

    def fire(self, now: float, deadline: float) -> None:
        self.log.append((self.name, now, deadline))
        self.on_fire()


def test_many_deadlines_share_one_armed_timer_at_the_earliest() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    for i, when in enumerate([5.0, 3.0, 9.0, 4.0]):
        service.add(when, Recorded(str(i), log))
    armed = clock.armed()
    assert len(armed) == 1
    assert armed[0].deadline == 3.0
    assert service.armed_at() == 3.0
    assert len(service) == 4


def test_adding_a_later_deadline_does_not_re_arm_an_earlier_one_does() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    service.add(5.0, Recorded("a", log))
    service.add(7.0, Recorded("b", log))
    assert len(clock.timers) == 1
    service.add(2.0, Recorded("c", log))
    assert len(clock.timers) == 2
    assert [t.deadline for t in clock.armed()] == [2.0]


def test_removing_never_re_arms_and_an_empty_firing_re_arms_for_the_next_live_deadline() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    first, second = Recorded("first", log), Recorded("second", log)
    service.add(1.0, first)
    service.add(4.0, second)
    assert service.remove(first)
    assert not service.remove(first)
    assert [t.deadline for t in clock.armed()] == [1.0]
    clock.now = 1.0
    clock.run_turn()
    assert log == []
    assert [t.deadline for t in clock.armed()] == [4.0]
    clock.now = 4.5
    clock.run_turn()
    assert log == [("second", 4.5, 4.0)]  # fired late: now and deadline both reported
    assert clock.armed() == []
    assert service.armed_at() is None


def test_a_turn_fires_one_batch_and_deadlines_armed_during_it_wait_for_the_next_turn() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    follow_up = Recorded("follow-up", log)
    service.add(1.0, Recorded("a", log, lambda: service.add(1.0, follow_up)))
    service.add(1.0, Recorded("b", log))
    clock.now = 1.0
    clock.run_turn()
    assert [name for name, _, _ in log] == ["a", "b"]
    assert [t.deadline for t in clock.armed()] == [1.0]
    clock.run_turn()
    assert [name for name, _, _ in log] == ["a", "b", "follow-up"]


def test_an_item_re_arming_itself_while_firing_is_fired_again_only_when_due() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    item = Recorded("tick", log)
    item.on_fire = lambda: service.add(clock.now + 2.0, item)
    service.add(2.0, item)
    for now in (2.0, 4.0, 6.0):
        clock.now = now
        clock.run_turn()
    assert [(n, d) for _, n, d in log] == [(2.0, 2.0), (4.0, 4.0), (6.0, 6.0)]
    assert [t.deadline for t in clock.armed()] == [8.0]


def test_at_most_max_fires_per_turn_then_the_rest_on_the_next_turn() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    extra = 10
    for i in range(MAX_FIRES_PER_TURN + extra):
        service.add(float(i % 3), Recorded(str(i), log))
    clock.now = 5.0
    clock.run_turn()
    assert len(log) == MAX_FIRES_PER_TURN
    (timer,) = clock.armed()
    assert timer.deadline <= clock.now  # due at once: the next loop turn fires the rest
    clock.run_turn()
    assert len(log) == MAX_FIRES_PER_TURN + extra
    assert [d for _, _, d in log] == sorted(d for _, _, d in log)
    assert clock.armed() == []


def test_a_failing_item_is_logged_and_the_rest_of_the_batch_fires(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []

    def boom() -> None:
        raise RuntimeError("broken deadline")

    service.add(1.0, Recorded("bad", log, boom))
    service.add(1.0, Recorded("good", log))
    clock.now = 1.0
    with caplog.at_level(logging.ERROR, logger="tocsin.scheduling"):
        clock.run_turn()
    assert [name for name, _, _ in log] == ["bad", "good"]
    assert "broken deadline" in caplog.text


def test_close_disarms_the_timer_and_every_item() -> None:
    clock = StubClock()
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    items = [Recorded(str(i), log) for i in range(3)]
    for i, item in enumerate(items):
        service.add(float(i + 1), item)
    service.close()
    assert clock.armed() == []
    assert service.armed_at() is None
    assert len(service) == 0
    assert not any(item.armed for item in items)
    assert not service.remove(items[0])  # e.g. an ask removing its timeout after a stop
    assert len(service) == 0
    service.add(1.0, Recorded("after close", log))
    assert clock.armed() == []


async def test_on_a_manual_clock_advance_fires_each_item_at_its_own_time() -> None:
    clock = ManualClock(wall=0)
    service = DeadlineService(clock)
    log: list[tuple[str, float, float]] = []
    for name, when in [("c", 3.0), ("a", 1.0), ("b", 2.0)]:
        service.add(when, Recorded(name, log))
    await clock.advance(2.5)
    assert log == [("a", 1.0, 1.0), ("b", 2.0, 2.0)]
    await clock.jump(10)
    assert log[-1] == ("c", 12.5, 3.0)
