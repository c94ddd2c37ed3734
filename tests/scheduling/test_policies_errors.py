# SPDX-License-Identifier: Apache-2.0
"""Schedule policies: every bad value is a typed error at the call, naming the option;
the defaults make no policy at all; ``ScheduleInfo`` shows what was given."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tests.scheduling.scheduling_support import Log, recorder, running_system

from tocsin import Actor, Calendar, DSTPolicy, InvalidIntervalError, Misfire, Overlap


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("overlap", "skip"),
        ("overlap", None),
        ("overlap", 1),
        ("misfire", "once"),
        ("misfire", None),
        ("exclude", "2026-12-25"),
        ("exclude", ["2026-12-25"]),
    ],
)
@pytest.mark.parametrize("call", ["schedule", "schedule_cron"])
async def test_a_bad_policy_value_is_a_value_error_naming_the_option(
    call: str, option: str, value: Any
) -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        arg: Any = 10 if call == "schedule" else "0 * * * * ?"
        with pytest.raises(ValueError, match=f"`{option}`"):
            await getattr(system, call)("t", pid, arg, **{option: value})
        assert system.list_schedules() == []


@pytest.mark.parametrize("value", ["gap=next", {"gap": "next"}, "never_skip"])
async def test_a_bad_dst_is_a_value_error_naming_dst(value: Any) -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(ValueError, match="`dst`"):
            await system.schedule_cron("t", pid, "0 * * * * ?", dst=value)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), "5", True, 1e-9])
@pytest.mark.parametrize("call", ["schedule", "schedule_cron"])
async def test_bad_jitter_seconds_are_invalid_interval_errors(call: str, value: Any) -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        arg: Any = 10 if call == "schedule" else "0 * * * * ?"
        with pytest.raises(InvalidIntervalError, match="jitter"):
            await getattr(system, call)("t", pid, arg, jitter=value)


@pytest.mark.parametrize("jitter", [10, 11, timedelta(seconds=10)])
async def test_interval_jitter_not_shorter_than_the_interval_is_a_value_error(
    jitter: Any,
) -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(ValueError, match=r"`jitter`.*shorter than"):
            await system.schedule("t", pid, 10, jitter=jitter)


async def test_cron_jitter_longer_than_the_gap_is_accepted_and_capped() -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_cron("t", pid, "* * * * * ?", reference="c", jitter=3600)
        assert system.list_schedules()[0].jitter == 3600


def test_policy_constructors_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="limit"):
        Overlap.limit(0)
    with pytest.raises(ValueError, match="max"):
        Misfire.all(max=0)
    with pytest.raises(ValueError, match="rate"):
        Misfire.all(rate=0)
    with pytest.raises(InvalidIntervalError, match="grace"):
        Misfire.once(grace=-1)
    with pytest.raises(ValueError, match="gap"):
        DSTPolicy(gap="later")  # type: ignore[arg-type]


async def test_a_one_shot_takes_overlap_and_misfire_only() -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_once(
            "t", pid, 5, reference="o", overlap=Overlap.SKIP, misfire=Misfire.once(grace=1)
        )
        with pytest.raises(TypeError):
            await system.schedule_once("t", pid, 5, jitter=1)  # type: ignore[call-arg]
        with pytest.raises(ValueError, match="`overlap`"):
            await system.schedule_once("t", pid, 5, overlap="skip")  # type: ignore[arg-type]


async def test_schedule_info_shows_the_policies_and_defaults_for_none() -> None:
    christmas = Calendar.dates("2030-12-25")
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("t", pid, 60, reference="plain")
        await system.schedule(
            "t",
            pid,
            60,
            reference="rich",
            overlap=Overlap.limit(3),
            misfire=Misfire.all(max=5, rate=2),
            jitter=timedelta(seconds=30),
            exclude=christmas,
        )
        await system.schedule_cron(
            "t", pid, "0 30 2 * * ?", reference="dst", dst=DSTPolicy.never_skip()
        )
        info = {i.reference: i for i in system.list_schedules()}
        plain = info["plain"]
        assert (plain.overlap, plain.misfire, plain.jitter, plain.dst, plain.exclude) == (
            Overlap.ALLOW,
            Misfire.once(),
            None,
            None,
            None,
        )
        assert (plain.note, plain.paused_at, plain.paused_by) == (None, None, None)
        rich = info["rich"]
        assert rich.overlap == Overlap.limit(3)
        assert rich.misfire == Misfire.all(max=5, rate=2)
        assert rich.jitter == 30.0
        assert rich.exclude == christmas
        assert info["dst"].dst == DSTPolicy.never_skip()


async def test_explicit_defaults_make_no_policy() -> None:
    async with running_system() as (system, _):
        pid = await system.spawn(recorder(Log()))
        await system.schedule(
            "t",
            pid,
            60,
            reference="d",
            overlap=Overlap.ALLOW,
            misfire=Misfire.once(),
            jitter=0,
        )
        assert system.list_schedules()[0].misfire == Misfire.once()


async def test_a_calendar_that_leaves_no_instant_in_ten_years_is_a_value_error_at_the_call() -> (
    None
):
    from tocsin import ActorSystem, Calendar, ManualClock

    every_day = Calendar.weekly("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
    async with ActorSystem("never", clock=ManualClock()) as system:
        pid = await system.spawn(_Quiet)
        with pytest.raises(ValueError, match="schedule 'daily' would never fire"):
            await system.schedule("t", pid, 86400, reference="daily", exclude=every_day)
        with pytest.raises(ValueError, match="cron schedule 'nightly' would never fire"):
            await system.schedule_cron(
                "t", pid, "0 0 2 * * ?", reference="nightly", exclude=every_day
            )
        assert system.list_schedules() == []  # nothing was made


async def test_next_fire_at_is_the_next_instant_the_calendar_keeps() -> None:
    from datetime import UTC, datetime

    from tocsin import ActorSystem, Calendar, ManualClock

    friday = datetime(2030, 1, 4, 12, 0, tzinfo=UTC)
    async with ActorSystem("kept", clock=ManualClock(wall=friday.timestamp())) as system:
        pid = await system.spawn(_Quiet)
        weekend = Calendar.weekly("SAT", "SUN")
        await system.schedule_cron(
            "t", pid, "0 0 12 * * ?", reference="noon", timezone="UTC", exclude=weekend
        )
        [info] = system.list_schedules()
        assert info.next_fire_at == datetime(2030, 1, 7, 12, 0, tzinfo=UTC)  # Monday


class _Quiet(Actor):
    async def receive(self, ctx: Any) -> None:
        pass
