# SPDX-License-Identifier: Apache-2.0
"""Stopping a system: from inside an actor, and with a grace for a stuck handler.

Run: python examples/stopping.py
"""

from __future__ import annotations

import asyncio

from tocsin import Actor, ActorSystem, ManualClock, ReceiveContext


class Shutdown(Actor):
    """Stops the whole system when told "shutdown"."""

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "shutdown":
            await ctx.system.stop()  # begins the stop and returns at once
            print("shutdown: stop begun; this handler finishes first")
            ctx.respond("bye")


class Stuck(Actor):
    """A handler that never returns (a hung network call, say)."""

    async def receive(self, ctx: ReceiveContext) -> None:
        await asyncio.Event().wait()

    async def post_stop(self, ctx: ReceiveContext) -> None:
        print("stuck: post_stop still runs after the grace cancelled the handler")


async def main() -> None:
    # 1. From inside an actor: no deadlock; outside callers see the stop complete.
    system = ActorSystem("inside")
    await system.start()
    pid = await system.spawn(Shutdown, "shutdown")
    print("asked:", await pid.ask("shutdown"))
    await system.stop()  # waits for the stop the actor began
    print("inside: running =", system.running)

    # 2. A grace (ManualClock: no real waiting). Past it, running handlers are
    #    cancelled (logged at WARNING), post_stop runs, stop returns.
    clock = ManualClock()
    system = ActorSystem("grace", clock=clock, stop_timeout=10)
    await system.start()
    stuck = await system.spawn(Stuck, "stuck")
    stuck.tell("work")
    await clock.advance(0)
    stopping = asyncio.ensure_future(system.stop(timeout=5))
    await clock.advance(5)
    await stopping
    print("grace: running =", system.running)


if __name__ == "__main__":
    asyncio.run(main())
