# SPDX-License-Identifier: Apache-2.0
"""A cron tick visits the timer once, however long the batch it fires in takes; schedules
of one expression share their next-fire answers without changing any of them."""

from __future__ import annotations

from typing import Any

from tests.scheduling.scheduling_support import EPOCH, Log, recorder

from tocsin import ActorSystem
from tocsin.clock import ManualClock
from tocsin.scheduling._cron import CronState
from tocsin.scheduling._spi import Scheduler

#: Seconds each wall-clock read takes on :class:`BusyClock`.
READ_COST = 0.002


# ManualClock is final for users; this test double only makes its wall reads take time.
class BusyClock(ManualClock):  # type: ignore[misc]
    """A ManualClock on which time passes while the system works: every wall read moves
    monotonic (and wall) time on by :data:`READ_COST`, so a timer batch that fires many
    schedules ends well after it began."""

    def wall(self) -> float:
        seen = super().wall()
        self._now += READ_COST  # the test clock's own time, moved by a read
        return seen


def _fired(system: ActorSystem) -> int:
    runtime = system.runtime
    assert runtime is not None
    scheduler = runtime.schedules
    assert isinstance(scheduler, Scheduler)
    return scheduler.statistics().fired


async def test_a_cron_tick_fired_late_in_a_long_batch_visits_the_timer_once() -> None:
    clock = BusyClock(wall=EPOCH)
    log = Log()
    count = 50  # 50 wall reads a batch: the last record fires ~0.1 s after the batch began
    async with ActorSystem("busy", clock=clock) as system:
        pid = await system.spawn(recorder(log), "r")
        for i in range(count):
            await system.schedule_cron(i, pid, "* * * * * ?", reference=f"c{i}")
        before = _fired(system)
        await clock.advance(3.0)
        fired = _fired(system) - before
    # Each record fired once per instant: none armed early by the batch's length (which
    # fires it before its wall instant, to be armed again: two visits for one tick).
    assert len(log.received) % count == 0
    assert fired == len(log.received)
    assert len(log.received) >= 2 * count


def _state(text: str, zone: str = "UTC") -> CronState:
    return CronState.create(text, zone, EPOCH.timestamp())


def test_schedules_of_one_expression_share_their_answers_and_not_another_s() -> None:
    first, second, other = _state("0/5 * * * * ?"), _state("0/5 * * * * ?"), _state("0/7 * * * * ?")
    zoned = _state("0/5 * * * * ?", "Europe/Paris")
    assert first.shared is second.shared
    assert first.shared is not other.shared
    assert first.shared is not zoned.shared
    at = EPOCH.timestamp()
    answers: list[Any] = [s.following(at) for s in (first, second, other, zoned)]
    assert answers == [at + 5, at + 5, at + 7, at + 5]
    assert first.shared == {at: at + 5}
    # The answer read from the shared set is the one computed on its own.
    alone = first.expr.next_after(EPOCH.replace(second=1))
    assert alone is not None
    assert second.following(at + 1) == alone.timestamp() == at + 5
