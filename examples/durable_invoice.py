"""A durable actor on SQLite: record intent and queue a task in one transaction; the task
fails twice and then succeeds; a ManualClock makes the retries instant."""

import asyncio
import random
import tempfile
from pathlib import Path
from typing import Any

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor, RetryPolicy


class Billing(DurableActor):
    kind = "billing"  # stored with every task: keep it stable across releases
    retry_policy = RetryPolicy(rng=random.Random(7))  # seeded jitter: reproducible delays

    async def invoice(self, order: str) -> str:
        async with self.transaction():  # both writes commit together, or neither
            await self.storage.put(f"order:{order}", "invoicing")
            task_id = await self.queue("send_invoice", {"order": order}, max_retries=5)
        return task_id

    async def send_invoice(self, payload: dict[str, Any]) -> None:
        attempts = await self.storage.get("attempts", 0) + 1
        await self.storage.put("attempts", attempts)
        print(f"{self.now():%H:%M:%S} attempt {attempts}")
        if attempts < 3:
            raise ConnectionError("provider down")  # retried after ~1 s, then ~2 s
        await self.storage.put(f"order:{payload['order']}", "invoiced")

    async def status(self, order: str) -> Any:
        return await self.storage.get(f"order:{order}")


async def main() -> None:
    clock = ManualClock(wall=1_767_225_600)  # 2026-01-01T00:00:00Z
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'billing.db'}"
        async with ActorSystem(clock=clock, store=url) as system:
            pid = await system.durable(Billing, "customer-7")
            await pid.ask(Call("invoice", "A-1001"))
            await clock.advance(5)  # the attempts and backoffs happen inside these 5 s
            print("status:", await pid.ask(Call("status", "A-1001")))


asyncio.run(main())
