"""A durable cron task: a nightly report at 02:30 Paris time, registered in pre_start, on
SQLite. A ManualClock crosses the spring DST change (02:30 does not exist that night) and
a restart after two days of downtime (the missed nights run once, not twice)."""

import asyncio
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor, TaskRecord

PARIS = ZoneInfo("Europe/Paris")
RUNS: list[str] = []


class Reports(DurableActor):
    kind = "example-reports"

    async def pre_start(self, ctx: Any) -> None:
        # On every activation: an identical registration keeps its due time.
        await self.cron("0 30 2 * * ?", "nightly", id="nightly", timezone="Europe/Paris")

    async def nightly(self, payload: Any) -> None:
        ran = self.now().astimezone(PARIS).isoformat()
        RUNS.append(ran)
        print("nightly report at", ran)

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'reports.db'}"
        clock = ManualClock(wall=datetime(2026, 3, 27, 12, tzinfo=UTC))
        async with ActorSystem(clock=clock, store=url) as system:
            pid = await system.durable(Reports, "acme")
            [task] = await pid.ask(Call("tasks"))
            print("registered:", task.cron, task.timezone, "next", task.due.astimezone(PARIS))
            await clock.advance(4 * 86400)  # 28th, (29th: no 02:30 that night), 30th
        # The process is down for two days, then starts again on the same store.
        later = ManualClock(wall=datetime(2026, 4, 2, 12, tzinfo=UTC))
        async with ActorSystem(clock=later, store=url) as system:
            await later.advance(86400)  # the overdue task runs once, then the 3rd
    assert RUNS == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-30T02:30:00+02:00",
        "2026-03-31T02:30:00+02:00",
        "2026-04-02T14:00:00+02:00",  # after the restart: once for the missed nights
        "2026-04-03T02:30:00+02:00",
    ], RUNS


asyncio.run(main())
