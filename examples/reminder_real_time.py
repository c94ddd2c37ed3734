"""Real time (SystemClock), short durations: a one-shot reminder, a repeating tick, a cancel.

Shows that a cancelled schedule's tick never reaches `receive`, and that a schedule made
through an actor's context dies with that actor. Runs in about half a second.
Run: python examples/reminder_real_time.py
"""

import asyncio

from tocsin import Actor, ActorSystem, ReceiveContext


class Kettle(Actor):
    def __init__(self) -> None:
        self.polls = 0

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "boil":
            # Owned by this actor: both are cancelled if it stops.
            await ctx.schedule("poll", ctx.self, 0.05, reference="kettle-poll")
            await ctx.schedule_once("whistle", ctx.self, 0.3, reference="kettle-whistle")
            print("kettle on")
        elif ctx.message == "poll":
            self.polls += 1
        elif ctx.message == "whistle":
            await ctx.cancel_schedule("kettle-poll")
            print(f"whistle! (polled {self.polls} times, polling cancelled)")
        elif ctx.message == "polls":
            ctx.respond(self.polls)


async def main() -> None:
    async with ActorSystem("kitchen") as system:
        kettle = await system.spawn(Kettle, "kettle")
        kettle.tell("boil")
        await asyncio.sleep(0.4)
        polls = await kettle.ask("polls")
        await asyncio.sleep(0.15)
        assert await kettle.ask("polls") == polls, "no poll after the cancel"
        print("schedules left:", [info.reference for info in system.list_schedules()])


if __name__ == "__main__":
    asyncio.run(main())
