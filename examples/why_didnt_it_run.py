"""Why didn't it run? A schedule's history, its TickNotDelivered events, and its pause note."""

import asyncio
import logging
from datetime import UTC, datetime

from tocsin import Actor, ActorSystem, Directive, ManualClock, ReceiveContext, TickNotDelivered


class Report(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "fail":
            raise RuntimeError("disk full")  # its supervisor suspends it


async def main() -> None:
    logging.getLogger("tocsin").setLevel(logging.CRITICAL)  # the failure below is on purpose
    clock = ManualClock(wall=datetime(2030, 1, 7, 8, 59, 30, tzinfo=UTC))
    async with ActorSystem("node-1", clock=clock, timezone="UTC") as system:
        # Alarm on what did not run, as it happens (a log line, a page, a metric).
        system.events.subscribe(
            lambda e: print(f"  event: {e.reference} {e.instant:%H:%M} {e.outcome}"),
            TickNotDelivered,
        )
        pid = await system.spawn(Report, "report", supervisor=Directive.SUSPEND)
        await system.schedule_cron("run", pid, "0 * * * * ?", reference="report")
        await clock.advance(60)  # 09:00 delivered

        await system.pause_schedule("report", note="vendor API down, ticket OPS-42")
        [info] = system.list_schedules()
        print(f"paused by {info.paused_by} at {info.paused_at:%H:%M:%S}: {info.note}")
        await clock.advance(120)  # 09:01 and 09:02 come due while paused
        await system.resume_schedule("report")

        pid.tell("fail")  # the target is suspended: 09:03 is a dead letter
        await clock.advance(60)
        await system.reinstate(pid)
        await clock.advance(60)  # 09:04 delivered

        print("history of 'report', oldest first:")
        for entry in system.schedule_history("report"):
            detail = "" if entry.detail is None else f" ({entry.detail})"
            print(f"  {entry.instant:%H:%M} {entry.outcome}{detail} on {entry.node}")


asyncio.run(main())
