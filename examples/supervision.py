"""Supervision: restart with a limit, resume, and suspend/reinstate, driven by a ManualClock.

Three actors, one per directive a decider can return:
- "restarts": RESTART (the default) builds a fresh instance; past the limit it stops.
- "resumes": RESUME keeps the same instance and its state; the failed message is dropped.
- "suspends": SUSPEND closes the mailbox (messages become dead letters, asks fail with
  ActorSuspendedError) until `system.reinstate(pid)` reopens it, state intact.
Run: python examples/supervision.py
"""

import asyncio

from tocsin import (
    Actor,
    ActorReinstated,
    ActorRestarted,
    ActorStopped,
    ActorSuspended,
    ActorSuspendedError,
    ActorSystem,
    DeadLetter,
    Directive,
    ManualClock,
    ReceiveContext,
    Supervisor,
)


class Counter(Actor):
    """Counts the messages it handles; raises on "boom" (ValueError) and "bad" (KeyError)."""

    def __init__(self) -> None:
        self.seen = 0

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "boom":
            raise ValueError("boom")
        if ctx.message == "bad":
            raise KeyError("bad")
        self.seen += 1
        ctx.respond(self.seen)


def decide(error: BaseException) -> Directive:
    """Suspend on a KeyError (bad input: wait for an operator), restart on anything else."""
    return Directive.SUSPEND if isinstance(error, KeyError) else Directive.RESTART


def show(event: object) -> None:
    if isinstance(event, DeadLetter):
        print(f"  event: DeadLetter {event.message!r} ({event.reason})")
    else:
        print(f"  event: {type(event).__name__} {getattr(event, 'pid', '')}")


async def main() -> None:
    clock = ManualClock()
    async with ActorSystem(clock=clock) as system:
        system.events.subscribe(
            show, ActorRestarted, ActorSuspended, ActorReinstated, ActorStopped, DeadLetter
        )

        print("RESTART: a fresh instance each time; at most 2 restarts within 60 s")
        restarts = await system.spawn(
            Counter, "restarts", supervisor=Supervisor(decide, max_restarts=2, within=60)
        )
        print("  count:", await restarts.ask("hi"))
        restarts.tell("boom")
        await clock.advance(0)  # let the failure be handled
        after_restart = await restarts.ask("hi")
        print("  count after a restart (fresh state):", after_restart)
        assert after_restart == 1
        restarts.tell("boom")
        restarts.tell("boom")  # the third failure within 60 s: the actor stops
        await clock.advance(0)
        restarts.tell("anyone?")  # stopped: a dead letter

        print("RESUME: same instance, same state; the failing message is dropped")
        resumes = await system.spawn(Counter, "resumes", supervisor=Directive.RESUME)
        print("  count:", await resumes.ask("hi"))
        resumes.tell("boom")
        await clock.advance(0)
        after_resume = await resumes.ask("hi")
        print("  count after resume (state kept):", after_resume)
        assert after_resume == 2

        print("SUSPEND: the mailbox closes until reinstate")
        suspends = await system.spawn(Counter, "suspends", supervisor=Supervisor(decide))
        print("  count:", await suspends.ask("hi"))
        suspends.tell("bad")  # KeyError: the decider says SUSPEND
        await clock.advance(0)
        suspends.tell("while suspended")  # a dead letter (reason: suspended)
        try:
            await suspends.ask("hi")
        except ActorSuspendedError as exc:
            print("  ask while suspended:", type(exc).__name__)
        await system.reinstate(suspends)
        after_reinstate = await suspends.ask("hi")
        print("  count after reinstate (state kept):", after_reinstate)
        assert after_reinstate == 2

        print("dead letters:", system.dead_letters)
        assert system.dead_letters == 3  # 'anyone?', 'while suspended', the suspended ask


if __name__ == "__main__":
    asyncio.run(main())
