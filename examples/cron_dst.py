"""A daily cron job across a DST change, and wall-clock jumps, on a ManualClock.

Shows: `schedule_cron` in a time zone, fire times that stay at 09:00 local across the
spring-forward night (23 real hours apart), a backward wall jump that does not fire the
same tick twice, and a forward jump that fires the skipped tick once.
Run: python examples/cron_dst.py
"""

import asyncio
from datetime import datetime
from zoneinfo import ZoneInfo

from tocsin import Actor, ActorSystem, ManualClock, ReceiveContext

PARIS = ZoneInfo("Europe/Paris")


class Reporter(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        wall = datetime.fromtimestamp(ctx.system.clock.wall(), PARIS)
        print(f"  {ctx.message} at {wall:%a %d %b %H:%M %Z}")


async def main() -> None:
    # Two days before the 31 March 2030 change (02:00 CET -> 03:00 CEST).
    clock = ManualClock(wall=datetime(2030, 3, 29, tzinfo=PARIS))
    async with ActorSystem("reports", clock=clock, timezone="Europe/Paris") as system:
        reporter = await system.spawn(Reporter, "reporter")
        await system.schedule_cron("daily report", reporter, "0 0 9 * * ?", reference="daily")
        [info] = system.list_schedules()
        print(f"{info.reference}: {info.cron!r} in {info.timezone}, next {info.next_fire_at} (UTC)")

        print("four days, across the spring-forward night:")
        await clock.advance(4 * 24 * 3600)

        print("Tuesday: the 09:00 report, then at 09:00:30 an NTP step sets the clock back 1 h:")
        tuesday = datetime(2030, 4, 2, 9, 0, 30, tzinfo=PARIS).timestamp()
        await clock.advance(tuesday - clock.wall())
        clock.jump_wall(-3600)  # wall 08:00:30: 09:00 comes round again
        await clock.advance(2 * 3600)  # wall 10:00:30
        print("  (09:00 was not reported twice)")

        print("the wall clock jumps 2 days forward; the skipped reports fire once, not twice:")
        clock.jump_wall(2 * 24 * 3600)  # Thursday 10:00:30
        await clock.advance(0)
        await clock.advance(24 * 3600)  # and Friday's report is back on time


if __name__ == "__main__":
    asyncio.run(main())
