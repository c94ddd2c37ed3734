# SPDX-License-Identifier: Apache-2.0
"""A system with a schedule and a parked durable task, for the console tests."""

from __future__ import annotations

from typing import Any

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.durable import DurableActor

HOSTILE = "<script>alert('pwned')</script>"
#: Actor names cannot hold "/": an attribute-borne attack instead.
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
#: Methods that fail on their next run (cleared to let a retry succeed).
FAILING: set[str] = set()
RAN: list[str] = []


class Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


class QueueTask:
    def __init__(self, method: str, task_id: str, max_retries: int = 0) -> None:
        self.method = method
        self.task_id = task_id
        self.max_retries = max_retries


class Worker(DurableActor):
    kind = "ConsoleWorker"

    async def receive(self, ctx: ReceiveContext) -> None:
        message = ctx.message
        if isinstance(message, QueueTask):
            ctx.respond(
                await self.queue(
                    message.method, id=message.task_id, max_retries=message.max_retries
                )
            )

    async def charge(self, payload: Any) -> None:
        RAN.append("charge")
        if "charge" in FAILING:
            raise RuntimeError(f"card declined {HOSTILE}")

    async def ship(self, payload: Any) -> None:
        RAN.append("ship")
        if "ship" in FAILING:
            raise RuntimeError("no courier")


async def populate(system: ActorSystem) -> None:
    """A hostile-named actor with two schedules, and two parked tasks of Worker/order-1."""
    pid = await system.spawn(Sink, f"sink{HOSTILE_NAME}")
    await system.schedule("tick", pid, 1.0, reference=f"every-second{HOSTILE}")
    await system.schedule_cron("tick", pid, "0 30 9 ? * MON-FRI", reference="standup",
                               timezone="Europe/Paris")  # fmt: skip
    FAILING.update({"charge", "ship"})
    worker = await system.durable(Worker, "order-1")
    await worker.ask(QueueTask("charge", "t-charge"), timeout=10)
    await worker.ask(QueueTask("ship", "t-ship"), timeout=10)
