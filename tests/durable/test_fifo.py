"""Tasks due at the same time run in the order they were made."""

from __future__ import annotations

from typing import Any

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor

RUNS: list[int] = []


class Fifo(DurableActor):
    kind = "fifo-test"

    async def enqueue(self, count: int) -> None:
        for i in range(count):
            await self.queue("work", i)

    async def work(self, payload: Any) -> None:
        RUNS.append(payload)


async def test_queued_tasks_run_first_in_first_out_when_the_clock_does_not_move() -> None:
    RUNS.clear()
    clock = ManualClock(wall=1_800_000_000)
    async with ActorSystem(clock=clock, store="memory://") as system:
        pid = await system.durable(Fifo, "f-1")
        await pid.ask(Call("enqueue", 50))
        await clock.advance(1)
        assert list(range(50)) == RUNS
