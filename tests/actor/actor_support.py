"""Helpers shared by the actor runtime tests."""

from __future__ import annotations

from tocsin import Actor, ActorSystem, ManualClock, ReceiveContext


class Echo(Actor):
    """Answers every ask with its message; ``"fail"`` raises instead."""

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "fail":
            raise RuntimeError("fail")
        ctx.respond(ctx.message)


def new_system() -> tuple[ActorSystem, ManualClock]:
    """A system named ``test`` on a fresh ManualClock (wall time 0), not yet started."""
    clock = ManualClock(wall=0)
    return ActorSystem("test", clock=clock), clock
