"""A wall-clock step the clock does not report is noticed by the system within 30 s."""

from __future__ import annotations

from datetime import UTC, datetime

from tocsin import Actor, ActorSystem, ManualClock, ReceiveContext
from tocsin._deadlines import WALL_CHECK_SECONDS


class Recorder(Actor):
    def __init__(self) -> None:
        self.seen: list[float] = []

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "seen":
            ctx.respond(self.seen)
        else:
            self.seen.append(ctx.system.clock.wall())


async def test_an_unreported_forward_step_fires_the_skipped_tick_once_within_the_check() -> None:
    clock = ManualClock(wall=datetime(2026, 1, 1, 11, 0, tzinfo=UTC))
    clock.reports_wall_jumps = False  # behave like a real clock: steps go unannounced
    async with ActorSystem(clock=clock, timezone="UTC") as system:
        pid = await system.spawn(Recorder, "rec")
        await system.schedule_cron("noon", pid, "0 0 12 * * ?", reference="noon")
        clock._wall_at_zero += 2 * 3600  # an NTP step to 13:00, not reported
        await clock.advance(WALL_CHECK_SECONDS)
        seen = await pid.ask("seen")
        assert len(seen) == 1  # the skipped noon tick, once, as soon as the step is seen
        info = system.list_schedules()[0]
        assert info.next_fire_at == datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


async def test_an_unreported_backward_step_never_fires_a_tick_twice() -> None:
    clock = ManualClock(wall=datetime(2026, 1, 1, 11, 59, 50, tzinfo=UTC))
    clock.reports_wall_jumps = False
    async with ActorSystem(clock=clock, timezone="UTC") as system:
        pid = await system.spawn(Recorder, "rec")
        await system.schedule_cron("noon", pid, "0 0 12 * * ?", reference="noon")
        await clock.advance(20)  # noon fires
        clock._wall_at_zero -= 3600  # back to 11:00:10, not reported
        await clock.advance(2 * 3600)
        assert len(await pid.ask("seen")) == 1
