"""Testing actors with the pytest plugin: no sleeps, no pytest-asyncio, no setup code.

Run: pytest examples/testing_pytest_plugin.py  (or python examples/testing_pytest_plugin.py)
"""

import asyncio

import pytest

from tocsin import Actor, ActorSystem, AskTimeoutError, ManualClock, ReceiveContext
from tocsin.testing import SystemMonitor


class Reminder(Actor):
    """Says "remind" to itself 30 s after "arm"; counts the reminders; crashes on "boom"."""

    def __init__(self) -> None:
        self.reminded = 0

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "arm":
            await ctx.schedule_once("remind", ctx.self, 30, reference="remind", replace=True)
        elif ctx.message == "remind":
            self.reminded += 1
        elif ctx.message == "count":
            ctx.respond(self.reminded)
        elif ctx.message == "boom":
            raise ValueError("boom")
        # anything else: no reply


async def test_reminder_fires_after_30_simulated_seconds(
    tocsin_system: ActorSystem, tocsin_clock: ManualClock
) -> None:
    pid = await tocsin_system.spawn(Reminder, "reminder")
    pid.tell("arm")
    await tocsin_clock.advance(29.9)
    assert await pid.ask("count") == 0
    await tocsin_clock.advance(0.1)
    assert await pid.ask("count") == 1


async def test_an_ask_times_out_on_the_manual_clock(
    tocsin_system: ActorSystem, tocsin_clock: ManualClock
) -> None:
    pid = await tocsin_system.spawn(Reminder)
    reply = asyncio.ensure_future(pid.ask("no reply", timeout=5))
    await tocsin_clock.advance(5)  # the timeout is 5 s on tocsin_clock, not real time
    with pytest.raises(AskTimeoutError):
        await reply


@pytest.mark.tocsin(autojump=True)
async def test_with_autojump_a_test_simply_awaits(tocsin_system: ActorSystem) -> None:
    pid = await tocsin_system.spawn(Reminder)
    with pytest.raises(AskTimeoutError):
        await pid.ask("no reply", timeout=5)  # time jumps to the timeout once all is idle


async def test_a_crash_the_test_causes_on_purpose_is_declared(
    tocsin_system: ActorSystem, tocsin_monitor: SystemMonitor, tocsin_clock: ManualClock
) -> None:
    tocsin_monitor.expect_crashes(ValueError, count=1)  # without this line the test fails
    pid = await tocsin_system.spawn(Reminder)
    pid.tell("boom")
    await tocsin_clock.advance(0)
    assert await pid.ask("count") == 0  # restarted: a fresh instance


if __name__ == "__main__":
    # Run as a script, this file imported tocsin before pytest could mark it for assert
    # rewriting; that warning is about this way of starting pytest, not about the tests.
    quiet = "ignore::pytest.PytestAssertRewriteWarning"
    raise SystemExit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", "-W", quiet]))
