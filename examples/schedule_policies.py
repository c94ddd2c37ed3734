# SPDX-License-Identifier: Apache-2.0
"""Schedule policies on a ManualClock: overlap, misfire, jitter, a calendar, ctx.tick.

Run it: ``python examples/schedule_policies.py``; docs/scheduling.md "Policies" shows
its output (tests/scheduling/test_policies_example.py keeps the two in step).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tocsin import (
    Actor,
    ActorSystem,
    Calendar,
    DSTPolicy,
    ManualClock,
    Misfire,
    Overlap,
    ReceiveContext,
)

START = datetime(2030, 12, 23, 8, 0, tzinfo=UTC)  # a Monday


class Report(Actor):
    """Takes 90 s of (simulated) time per report, and prints which instant it is for."""

    async def receive(self, ctx: ReceiveContext) -> None:
        tick = ctx.tick
        if tick is None:  # a plain message
            print(f"  plain message {ctx.message!r}: ctx.tick is None")
            return
        now = datetime.fromtimestamp(ctx.system.clock.wall(), UTC)
        print(f"  {tick.reference}: instant {tick.instant:%a %d %H:%M:%S}, ran {now:%H:%M:%S}")
        if ctx.message == "slow":
            await ctx.system.clock.sleep(90)  # simulated seconds on a ManualClock


async def main() -> None:
    clock = ManualClock(wall=START)
    async with ActorSystem("policies", clock=clock, timezone="UTC") as system:
        pid = await system.spawn(Report)

        print("overlap=Overlap.SKIP: a 90 s report every minute runs every other minute")
        await system.schedule("slow", pid, 60, reference="skip", overlap=Overlap.SKIP)
        await clock.advance(300)
        await system.cancel_schedule("skip")
        await clock.advance(90)

        print("misfire=Misfire.all(max=3, rate=1): after a 10-minute stall, 3 replayed")
        await system.schedule("fast", pid, 60, reference="all", misfire=Misfire.all(max=3, rate=1))
        await clock.jump(600)
        await clock.advance(5)
        await system.cancel_schedule("all")

        print("jitter=30: delivered up to 30 s after the instant, the instant unchanged")
        await system.schedule_cron("fast", pid, "0 0 * * * ?", reference="jitter", jitter=30)
        info = system.list_schedules()[0]
        print(f"  next_fire_at {info.next_fire_at:%H:%M:%S}")
        await clock.advance(3600)
        await system.cancel_schedule("jitter")

        print("exclude=Calendar.dates('2030-12-25'): no report on Christmas day")
        await system.schedule_cron(
            "fast",
            pid,
            "0 0 9 * * ?",
            reference="daily",
            exclude=Calendar.dates("2030-12-25"),
            dst=DSTPolicy.never_skip(),
        )
        await clock.advance(3 * 86400)
        pid.tell("hello")
        await clock.advance(0)


if __name__ == "__main__":
    asyncio.run(main())
