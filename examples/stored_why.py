"""Why didn't it run? One stored schedule's ledger: every instant and what became of it,
whichever node decided it (the same rows `tocsin schedules why ID --at TIME` reads)."""

import asyncio
import logging
from datetime import UTC, datetime

from tocsin import ActorSystem, Calendar, Cron, ManualClock, Schedule, TickNotDelivered
from tocsin.jobs import JobContext, job
from tocsin.stores import MemoryStore

FAIL_ON = {"2030-01-12"}  # the warehouse is down that night


@job
async def nightly_report(ctx: JobContext) -> None:
    day = f"{ctx.tick.instant:%Y-%m-%d}"  # type: ignore[union-attr]
    if day in FAIL_ON:
        raise RuntimeError("warehouse unreachable")


async def main() -> None:
    logging.getLogger("tocsin").setLevel(logging.CRITICAL)  # the failure below is on purpose
    clock = ManualClock(wall=datetime(2030, 1, 7, 12, tzinfo=UTC))  # a Monday
    spec = Schedule(
        "nightly-report",
        Cron("0 0 2 * * ?"),
        nightly_report,
        exclude=Calendar.dates("2030-01-11"),  # no report on the 11th
    )
    async with ActorSystem("node-1", clock=clock, store=MemoryStore(), schedules=[spec]) as system:
        system.events.subscribe(
            lambda e: print(f"  event: {e.instant:%a %d} {e.outcome} {e.detail or ''}"),
            TickNotDelivered,
        )
        await clock.advance(86_400)  # Tue 8th, 02:00: delivered
        await system.schedules.pause("nightly-report", note="db migration OPS-42")
        await clock.advance(86_400)  # Wed 9th: paused (the note is on the row)
        await system.schedules.resume("nightly-report")
        await clock.advance(3 * 86_400)  # Thu 10th: delivered; Fri 11th: excluded; Sat: failed
        print("ledger of 'nightly-report', oldest first:")
        for row in await system.schedules.history("nightly-report"):
            extra = row.note or row.detail or ""
            print(f"  {row.instant:%a %d %H:%M} {row.outcome:<9} v{row.version} {extra}")


asyncio.run(main())
