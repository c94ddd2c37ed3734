"""Schedules as data: declared in code, stored with a version, paused by an operator,
kept across a deploy, one ledger row per instant."""

import asyncio
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from tocsin import (
    ActorSystem,
    Cron,
    Durable,
    DurableActor,
    Interval,
    ManualClock,
    Overlap,
    Schedule,
)
from tocsin.jobs import JobContext, job


@job
async def refresh_prices(ctx: JobContext, source: str) -> None:
    print(f"  refresh from {source} for {ctx.tick.instant:%H:%M}")  # type: ignore[union-attr]


class Ledger(DurableActor):
    kind = "examples.Ledger"

    async def close_day(self, payload: dict[str, str]) -> None:
        print(f"  {self.identity}: close the day ({payload['why']})")


SCHEDULES = [
    # Every 5 minutes on a grid anchored at midnight UTC (without `anchor`: the first
    # add's time, in whole seconds, kept across deploys).
    Schedule(
        "refresh",
        Interval(300, anchor=datetime(2030, 1, 1, tzinfo=UTC)),
        refresh_prices,
        args=("vendor-a",),
    ),
    Schedule(
        "close-day",
        Cron("0 0 18 * * ?", timezone="Europe/Paris"),
        Durable(Ledger, "eu", "close_day", {"why": "end of the trading day"}),
        overlap=Overlap.SKIP,
    ),
]


async def main() -> None:
    clock = ManualClock(wall=datetime(2030, 1, 7, 16, 58, 30, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{Path(tmp) / 'app.db'}"
        # First deploy: the declared schedules are stored (version 1).
        async with ActorSystem("node-1", clock=clock, store=store, schedules=SCHEDULES) as system:
            await clock.advance(90)  # 17:00 UTC: "refresh" runs, and "close-day" (18:00 Paris)
            info = await system.schedules.pause("refresh", note="vendor outage OPS-42")
            print(f"paused {info.id} v{info.version} by {info.paused_by}: {info.note}")
            await clock.advance(600)  # 17:05 and 17:10 come due while paused
        # Second deploy: the same declarations; the pause is kept, nothing is re-added.
        async with ActorSystem("node-2", clock=clock, store=store, schedules=SCHEDULES) as system:
            for stored in await system.schedules.list():
                state = f"paused ({stored.note})" if stored.paused else "active"
                nxt = "-" if stored.next_fire_at is None else f"{stored.next_fire_at:%a %H:%M} UTC"
                print(f"{stored.id} v{stored.version} {state}, next {nxt}")
            await system.schedules.resume("refresh")
            await clock.advance(600)  # 17:15 and 17:20: refresh goes on from now
            print("ledger of 'refresh', oldest first:")
            for row in await system.schedules.history("refresh"):
                why = f" ({row.note}, by {row.paused_by})" if row.note else ""
                print(f"  {row.instant:%H:%M} {row.outcome} on {row.node}{why}")


asyncio.run(main())
