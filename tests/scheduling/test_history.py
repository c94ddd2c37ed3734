# SPDX-License-Identifier: Apache-2.0
"""`schedule_history`: the bounded ring of what became of each instant, the
`TickNotDelivered` events and the per-outcome counts (issue 23), on a ManualClock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.scheduling.scheduling_support import EPOCH, Log, recorder, running_system

from tocsin import (
    ActorSystem,
    Directive,
    ManualClock,
    Outcome,
    ScheduleNotFoundError,
    TickNotDelivered,
    TickOutcome,
)
from tocsin.scheduling._spi import Scheduler


def _at(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


def _counts(system: ActorSystem) -> list[tuple[str, Outcome, int]]:
    runtime = system.runtime
    assert runtime is not None
    scheduler = runtime.schedules
    assert isinstance(scheduler, Scheduler)
    return list(scheduler.history.counts())


async def test_delivered_ticks_are_in_the_ring_oldest_first_with_instant_and_time() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 1, reference="hb")
        assert system.schedule_history("hb") == []
        await clock.advance(3)
        history = system.schedule_history("hb")
        assert [(h.instant, h.at, h.outcome, h.detail) for h in history] == [
            (_at(1), _at(1), Outcome.DELIVERED, None),
            (_at(2), _at(2), Outcome.DELIVERED, None),
            (_at(3), _at(3), Outcome.DELIVERED, None),
        ]
        assert all(h.reference == "hb" and h.node == "test" for h in history)
        assert all(type(h) is TickOutcome for h in history)


async def test_a_late_tick_carries_its_instant_and_the_time_it_was_delivered() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 10, reference="r")
        await clock.jump(12.5)  # a stall: the tick due at 10 fires at 12.5
        [entry] = system.schedule_history("r")
        assert (entry.instant, entry.at) == (_at(10), _at(12.5))


async def test_the_ring_keeps_the_most_recent_history_entries() -> None:
    clock = ManualClock(wall=EPOCH)
    async with ActorSystem("test", clock=clock, timezone="UTC", history=3) as system:
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 1, reference="r")
        for n in range(1, 9):
            await clock.advance(1)
            history = system.schedule_history("r")
            expected = [_at(k) for k in range(max(1, n - 2), n + 1)]
            assert [h.instant for h in history] == expected


async def test_the_default_ring_holds_64() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 1, reference="r")
        await clock.advance(100)
        history = system.schedule_history("r")
        assert [h.instant for h in history] == [_at(k) for k in range(37, 101)]


async def test_cron_ticks_are_recorded_with_their_nominal_instant() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_cron("tick", pid, "*/10 * * * * ?", reference="c")
        await clock.advance(30)
        history = system.schedule_history("c")
        assert [(h.instant, h.at, h.outcome) for h in history] == [
            (_at(t), _at(t), Outcome.DELIVERED) for t in (10, 20, 30)
        ]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "64", None, 65_537])
def test_history_must_be_an_int_from_1(bad: object) -> None:
    with pytest.raises(ValueError, match="history"):
        ActorSystem(history=bad)  # type: ignore[arg-type]


async def test_an_unknown_reference_has_no_history() -> None:
    async with running_system() as (system, _):
        with pytest.raises(ScheduleNotFoundError):
            system.schedule_history("nope")
        with pytest.raises(TypeError):
            system.schedule_history(3)  # type: ignore[arg-type]


async def test_history_through_a_context_is_the_systems() -> None:
    from tocsin import Actor, ReceiveContext

    seen: list[list[TickOutcome]] = []

    class Reader(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            seen.append(ctx.schedule_history("r"))

    async with running_system() as (system, clock):
        pid = await system.spawn(Reader)
        await system.schedule("tick", pid, 1, reference="r")
        await clock.advance(2)
        assert [len(h) for h in seen] == [1, 2]


async def test_a_tick_to_a_suspended_target_is_a_dead_letter_everywhere() -> None:
    async with running_system() as (system, clock):
        events: list[TickNotDelivered] = []
        system.events.subscribe(events.append, TickNotDelivered)
        target = await system.spawn(recorder(Log()), supervisor=Directive.SUSPEND)
        await system.schedule("tick", target, 1, reference="r")
        await clock.advance(1.5)
        target.tell(("fail", RuntimeError("boom")))
        await clock.advance(1)
        history = system.schedule_history("r")
        assert [(h.instant, h.outcome, h.detail) for h in history] == [
            (_at(1), Outcome.DELIVERED, None),
            (_at(2), Outcome.DEAD_LETTER, "suspended"),
        ]
        assert events == [TickNotDelivered("r", _at(2), Outcome.DEAD_LETTER, "suspended", "test")]
        assert _counts(system) == [("r", Outcome.DEAD_LETTER, 1)]


async def test_instants_that_came_due_while_paused_are_recorded_as_paused() -> None:
    async with running_system() as (system, clock):
        events: list[TickNotDelivered] = []
        system.events.subscribe(events.append, TickNotDelivered)
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 1, reference="r")
        await clock.advance(1)
        await system.pause_schedule("r", note="db migration")
        await clock.advance(3.5)  # 2, 3 and 4 come due while paused
        await system.resume_schedule("r")
        history = system.schedule_history("r")
        assert [(h.instant, h.outcome) for h in history] == [
            (_at(1), Outcome.DELIVERED),
            (_at(2), Outcome.PAUSED),
            (_at(3), Outcome.PAUSED),
            (_at(4), Outcome.PAUSED),
        ]
        assert all(h.at == _at(4.5) for h in history[1:])
        assert [e.instant for e in events] == [_at(2), _at(3), _at(4)]
        assert _counts(system) == [("r", Outcome.PAUSED, 3)]


async def test_cron_instants_that_came_due_while_paused_are_recorded_as_paused() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_cron("tick", pid, "0 * * * * ?", reference="c")
        await system.pause_schedule("c")
        await clock.advance(180)
        await system.resume_schedule("c")
        await clock.advance(60)
        history = system.schedule_history("c")
        assert [(h.instant, h.outcome) for h in history] == [
            (_at(60), Outcome.PAUSED),
            (_at(120), Outcome.PAUSED),
            (_at(180), Outcome.PAUSED),
            (_at(240), Outcome.DELIVERED),
        ]


async def test_a_long_pause_records_only_the_most_recent_instants() -> None:
    clock = ManualClock(wall=EPOCH)
    async with ActorSystem("test", clock=clock, timezone="UTC", history=4) as system:
        pid = await system.spawn(recorder(Log()))
        await system.schedule_cron("tick", pid, "* * * * * ?", reference="c")
        await system.schedule("tick", pid, 1, reference="i")
        await system.pause_schedule("c")
        await system.pause_schedule("i")
        await clock.jump(86_400)  # a day of every-second instants
        await system.resume_schedule("c")
        await system.resume_schedule("i")
        for reference in ("c", "i"):
            history = system.schedule_history(reference)
            assert [h.instant for h in history] == [_at(86_400 - k) for k in (3, 2, 1, 0)]
            assert {h.outcome for h in history} == {Outcome.PAUSED}


async def test_pause_note_paused_at_and_paused_by_show_while_paused() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 1, reference="r")
        [info] = system.list_schedules()
        assert (info.note, info.paused_at, info.paused_by) == (None, None, None)
        await clock.advance(0.5)
        await system.pause_schedule("r", note="waiting for the vendor")
        await clock.advance(1)
        await system.pause_schedule("r", note="another")  # a no-op: the first note stays
        [info] = system.list_schedules()
        assert (info.paused, info.note, info.paused_at, info.paused_by) == (
            True,
            "waiting for the vendor",
            _at(0.5),
            "test",
        )
        assert info.paused_at is not None
        assert info.paused_at.tzinfo is UTC
        await system.resume_schedule("r")
        [info] = system.list_schedules()
        assert (info.note, info.paused_at, info.paused_by) == (None, None, None)
        with pytest.raises(TypeError, match="note"):
            await system.pause_schedule("r", note=3)  # type: ignore[arg-type]
