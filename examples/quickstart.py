"""The README example: an actor, an ask, and a repeating tick it owns."""

import asyncio

from tocsin import Actor, ActorSystem, ReceiveContext


class Counter(Actor):
    def __init__(self) -> None:
        self.ticks = 0

    async def pre_start(self, ctx: ReceiveContext) -> None:
        # Owned by this actor: cancelled when it stops; replace=True survives restarts.
        await ctx.schedule("tick", ctx.self, 0.1, reference="counter-tick", replace=True)

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "tick":
            self.ticks += 1
        elif ctx.message == "count":
            ctx.respond(self.ticks)


async def main() -> None:
    async with ActorSystem() as system:
        counter = await system.spawn(Counter, "counter")
        await asyncio.sleep(0.55)
        print("ticks so far:", await counter.ask("count"))


asyncio.run(main())
