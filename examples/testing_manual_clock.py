"""Testing timers without sleeping: a ManualClock drives ticks, passivation and asks."""

import asyncio

from tocsin import Actor, ActorSystem, AskTimeoutError, ManualClock, ReceiveContext


class Heartbeat(Actor):
    def __init__(self) -> None:
        self.beats = 0

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await ctx.schedule("beat", ctx.self, 10, reference="beat", replace=True)

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "beat":
            self.beats += 1
        elif ctx.message == "beats":
            ctx.respond(self.beats)
        # anything else: no reply


async def main() -> None:
    clock = ManualClock()
    async with ActorSystem(clock=clock) as system:
        pid = await system.spawn(Heartbeat, "heart")
        await clock.advance(35)  # deadlines fire at 10, 20, 30, each at its own time
        assert await pid.ask("beats") == 3
        await clock.jump(100)  # a stall: the overdue ticks coalesce into one
        assert await pid.ask("beats") == 4
        clock.autojump = True  # time jumps to the next deadline whenever all is idle
        try:
            await pid.ask("no reply", timeout=60)
        except AskTimeoutError:
            print("ask timed out after", clock.monotonic() - 135, "simulated seconds")
    print("ok")


asyncio.run(main())
