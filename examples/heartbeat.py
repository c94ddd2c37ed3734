"""A heartbeat owned by an actor, driven by a ManualClock so the output is exact.

Shows: `schedule` with `replace=True` in `pre_start` (a restart never doubles the rate),
the default sender, pause/resume, fixed rate after a stall, listing, cancel, and metrics.
Run: python examples/heartbeat.py
"""

import asyncio
from datetime import UTC, datetime

from tocsin import PID, Actor, ActorSystem, Directive, ManualClock, ReceiveContext


class Monitor(Actor):
    """Receives the heartbeats and prints them with the simulated time."""

    async def receive(self, ctx: ReceiveContext) -> None:
        now = ctx.system.clock.monotonic()
        print(f"  t={now:5.1f}s  {ctx.message!r} from {ctx.sender.path}")


class Worker(Actor):
    """Sends a heartbeat to the monitor every 2 s; crashes on "crash"."""

    def __init__(self, monitor: PID) -> None:
        self.monitor = monitor

    async def pre_start(self, ctx: ReceiveContext) -> None:
        # pre_start runs again after every restart: replace=True re-registers the timer
        # instead of raising ScheduleAlreadyExistsError (or, without a reference,
        # adding a second timer that doubles the rate).
        await ctx.schedule("beat", self.monitor, 2, reference="worker-heartbeat", replace=True)

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "crash":
            raise RuntimeError("simulated failure")


async def main() -> None:
    clock = ManualClock(wall=datetime(2030, 1, 1, tzinfo=UTC))
    async with ActorSystem("demo", clock=clock) as system:
        monitor = await system.spawn(Monitor, "monitor")
        worker = await system.spawn(lambda: Worker(monitor), "worker", supervisor=Directive.RESTART)

        print("5 s of heartbeats (every 2 s, first one 2 s after pre_start):")
        await clock.advance(5)

        print("worker crashes at t=5 and restarts; still one heartbeat, re-armed at t=5:")
        worker.tell("crash")
        await clock.advance(4)

        [info] = system.list_schedules()
        print(
            f"listed: {info.reference} -> {info.target}, every {info.interval} s, "
            f"owner {info.owner}, ticks {info.ticks}, next {info.next_fire_at:%H:%M:%S} UTC"
        )

        print("paused at t=9 for 10 s; resumed, the next beat comes one full interval later:")
        await system.pause_schedule("worker-heartbeat")
        await clock.advance(10)
        await system.resume_schedule("worker-heartbeat")
        await clock.advance(2)

        print("the process stalls for 7 s: the overdue beats are coalesced into one:")
        await clock.jump(7)
        await clock.advance(2)

        await system.cancel_schedule("worker-heartbeat")
        await clock.advance(10)
        m = system.scheduler_metrics()
        print(
            f"cancelled; delivered={m.ticks_delivered} live={m.live_schedules} "
            f"lateness p99={m.lateness_p99:.1f}s"
        )


if __name__ == "__main__":
    asyncio.run(main())
