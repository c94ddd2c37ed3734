"""One vocabulary: an actor's schedule, a durable task and a stored schedule, each paused
with a note, resumed, triggered and read back with the same verbs, on a ManualClock."""

import asyncio
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tocsin import Actor, ActorSystem, DurableActor, Interval, ManualClock, ReceiveContext, Schedule
from tocsin.jobs import JobContext, job


class Beeper(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


class Reports(DurableActor):
    kind = "examples.Reports"

    async def pre_start(self, ctx: Any) -> None:
        await self.every(3600, "hourly", id="hourly")

    async def hourly(self, payload: Any) -> None:
        pass


@job
async def refresh(ctx: JobContext) -> None:
    pass


def show(surface: str, outcomes: list[Any]) -> None:
    # Each outcome with its why: a pause's note, a manual run's detail.
    why = [f"{o.outcome} ({o.detail or o.note or '-'})" for o in outcomes]
    print(f"{surface}: {', '.join(why)}")
    assert [o.outcome for o in outcomes] == ["paused", "delivered"], outcomes


async def main() -> None:
    clock = ManualClock(wall=datetime(2030, 1, 7, 9, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{Path(tmp) / 'app.db'}"
        async with ActorSystem(clock=clock, store=store) as system:
            # In memory, owned by the system: the verbs carry the noun.
            await system.schedule(
                "beep", await system.spawn(Beeper, "beeper"), 60, reference="beep"
            )
            await system.pause_schedule("beep", note="noisy")
            await clock.advance(60)
            await system.resume_schedule("beep")
            await clock.advance(30)  # half a minute later: run it now
            await system.trigger_schedule("beep")
            show("actor schedule ", system.schedule_history("beep"))
            await system.cancel_schedule("beep")

            # A durable identity's tasks, from outside it: the same verbs, from the store.
            await system.durable(Reports, "acme")
            tasks = system.durable_tasks(Reports, "acme")
            await tasks.pause_schedule("hourly", note="quarter close")
            await clock.advance(3600)
            await tasks.resume_schedule("hourly")
            await clock.advance(30)
            await tasks.trigger_schedule("hourly")
            await clock.advance(1)
            show("durable task   ", await tasks.schedule_history("hourly"))
            await tasks.cancel_schedule("hourly")

            # Stored schedules: the noun is implied, and cancel is `remove`.
            await system.schedules.add(Schedule("refresh", Interval(300), refresh))
            await system.schedules.pause("refresh", note="vendor outage")
            await clock.advance(300)
            await system.schedules.resume("refresh")
            await clock.advance(30)
            await system.schedules.trigger("refresh")
            await clock.advance(1)
            show("stored schedule", await system.schedules.history("refresh"))
            assert await system.schedules.remove("refresh")


asyncio.run(main())
