"""Supervision: restart with a limit, resume, and suspend/reinstate, driven by a ManualClock."""

import asyncio

from tocsin import (
    Actor,
    ActorRestarted,
    ActorStopped,
    ActorSystem,
    DeadLetter,
    Directive,
    ManualClock,
    ReceiveContext,
    Supervisor,
)


class Fragile(Actor):
    def __init__(self) -> None:
        self.seen = 0

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "boom":
            raise ValueError("boom")
        self.seen += 1
        ctx.respond(self.seen)


def decide(error: BaseException) -> Directive:
    return Directive.SUSPEND if isinstance(error, KeyError) else Directive.RESTART


async def main() -> None:
    clock = ManualClock()
    async with ActorSystem(clock=clock) as system:
        system.events.subscribe(
            lambda e: print(type(e).__name__, getattr(e, "reason", "")),
            ActorRestarted,
            ActorStopped,
            DeadLetter,
        )
        # At most 2 restarts within 60 s; the third failure stops the actor.
        pid = await system.spawn(Fragile, "fragile", supervisor=Supervisor(decide, max_restarts=2))
        print("first ask:", await pid.ask("hi"))
        for _ in range(3):
            pid.tell("boom")
        await clock.advance(0)  # let the failures be handled
        pid.tell("anyone?")  # stopped: a dead letter
        print("dead letters:", system.dead_letters)


asyncio.run(main())
