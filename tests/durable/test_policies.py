# SPDX-License-Identifier: Apache-2.0
"""Schedule policies on durable tasks (issue 22), on every store, driven by ManualClock:
misfire across downtime (a 6 h outage of an every-minute task), overlap while a run is in
flight, jitter, calendars, DST, ``current_task``, persistence and the errors at the call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorSystem,
    Calendar,
    DSTPolicy,
    InvalidIntervalError,
    ManualClock,
    Misfire,
    Overlap,
    Tick,
)
from tocsin.durable import Call, DurableActor, TaskRecord
from tocsin.triggers import jitter_offset

#: (identity, the run's Tick, wall time of the run)
RUNS: list[tuple[str, Tick, float]] = []
GATES: dict[str, asyncio.Event] = {}
FAILS: dict[str, int] = {}
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    GATES.clear()
    FAILS.clear()


class Job(DurableActor):
    kind = "PoliciesJob"

    async def tick(self, payload: Any) -> None:
        task = self.current_task
        assert task is not None
        RUNS.append((self.identity, task, self.now().timestamp()))
        gate = GATES.get(self.identity)
        if gate is not None:
            await gate.wait()
        if FAILS.get(self.identity, 0) > 0:
            FAILS[self.identity] -= 1
            raise RuntimeError("flaky")

    async def every_(self, options: dict[str, Any]) -> str:
        options = dict(options)
        interval = options.pop("interval")
        return await self.every(interval, "tick", **options)

    async def cron_(self, options: dict[str, Any]) -> str:
        options = dict(options)
        expression = options.pop("expression")
        return await self.cron(expression, "tick", **options)

    async def once_(self, options: dict[str, Any]) -> str:
        options = dict(options)
        delay = options.pop("delay")
        return await self.schedule(delay, "tick", **options)

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()

    async def outside(self, payload: Any) -> Tick | None:
        return self.current_task

    async def attempt(self, options: dict[str, Any]) -> str:
        method = getattr(self, options.pop("call"))
        try:
            await method(*options.pop("args"), "tick", **options)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "ok"


@asynccontextmanager
async def running(
    backend: Backend, start: datetime = START, *, timezone: str = "UTC"
) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=start)
    async with ActorSystem("policies", clock=clock, store=backend.make(), timezone=timezone) as s:
        yield s, clock


def instants() -> list[datetime]:
    return [tick.instant for _, tick, _ in RUNS]


def walls() -> list[float]:
    return [wall for _, _, wall in RUNS]


# -- misfire across a 6 h outage -----------------------------------------------------------


async def _outage(backend: Backend, misfire: Misfire, after: float) -> datetime:
    """An every-minute task runs once, the system is down for 6 h, then starts again on
    the same store and runs ``after`` seconds. Returns the restart time."""
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "j")
        await pid.ask(Call("every_", {"interval": 60, "id": "m", "misfire": misfire}))
        await clock.advance(90)  # runs at 12:01
    assert instants() == [START + timedelta(minutes=1)]
    RUNS.clear()
    restart = START + timedelta(hours=6, minutes=1, seconds=30)  # 12:01 + 6 h + 30 s
    async with running(backend, restart) as (system, clock):
        await clock.advance(after)
    return restart


async def test_once_after_a_six_hour_outage_runs_once(backend: Backend) -> None:
    restart = await _outage(backend, Misfire.once(), 20)
    assert len(RUNS) == 1
    # Coalesced: the run carries the first missed instant, the one it was due at.
    assert instants() == [START + timedelta(minutes=2)]
    assert walls() == [restart.timestamp()]


async def test_skip_after_a_six_hour_outage_runs_none_then_keeps_its_cadence(
    backend: Backend,
) -> None:
    restart = await _outage(backend, Misfire.skip(), 20)
    assert RUNS == []
    RUNS.clear()
    async with running(backend, restart + timedelta(seconds=20)) as (_system, clock):
        await clock.advance(60)
    # The next future instant of the old cadence (12:02 + whole minutes), on time.
    assert instants() == [START + timedelta(hours=6, minutes=2)]
    assert walls() == [(START + timedelta(hours=6, minutes=2)).timestamp()]


async def test_all_after_a_six_hour_outage_replays_100_at_most_10_a_second(
    backend: Backend,
) -> None:
    restart = await _outage(backend, Misfire.all(max=100, rate=10), 60)
    replayed = [tick for _, tick, _ in RUNS if tick.instant < restart]
    assert len(replayed) == 100  # of 360 missed: the most recent 100, oldest first
    assert [t.instant for t in replayed] == [
        START + timedelta(hours=6, minutes=1) - timedelta(minutes=99 - k) for k in range(100)
    ]
    times = walls()[:100]
    assert times[0] == restart.timestamp()
    for first, eleventh in zip(times, times[10:], strict=False):
        assert eleventh - first >= 1.0  # never more than 10 in any second
    # New instants are still on time: 12:02 + 6 h, at its own instant.
    live = [(tick.instant, wall) for _, tick, wall in RUNS if tick.instant >= restart]
    nxt = START + timedelta(hours=6, minutes=2)
    assert live == [(nxt, nxt.timestamp())]


async def test_grace_misses_a_run_later_than_grace(backend: Backend) -> None:
    # The most recent missed instant is 30 s old at the restart.
    await _outage(backend, Misfire.once(grace=10), 20)
    assert RUNS == []


async def test_grace_keeps_a_run_within_grace(backend: Backend) -> None:
    await _outage(backend, Misfire.once(grace=60), 20)
    assert instants() == [START + timedelta(minutes=2)]


async def test_all_with_grace_replays_only_the_instants_within_it(backend: Backend) -> None:
    restart = await _outage(backend, Misfire.all(max=100, grace=200), 5)
    # Missed instants no older than 200 s at the restart (12:01:30 + 6 h): 3 of them.
    assert [i for i in instants() if i < restart] == [
        START + timedelta(hours=6, minutes=m) for m in (-1, 0, 1)
    ]


async def test_passivation_past_instants_is_a_misfire_too(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "p")
        await pid.ask(Call("every_", {"interval": 60, "id": "m", "misfire": Misfire.skip()}))
        await clock.jump(3600)  # a stall: an hour of instants went by
        await clock.advance(1)
        assert RUNS == []  # skip: none of them
        await clock.advance(60)
    assert len(RUNS) == 1


# -- overlap: instants due while a run is in flight ----------------------------------------


async def _slow_run(backend: Backend, overlap: Overlap) -> None:
    """An every-minute task whose first run takes 3.5 minutes."""
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "s")
        GATES["s"] = gate = asyncio.Event()
        await pid.ask(Call("every_", {"interval": 60, "id": "m", "overlap": overlap}))
        await clock.advance(60)  # 12:01: the run starts and waits
        assert len(RUNS) == 1
        await clock.advance(210)  # 12:04:30: three instants came due meanwhile
        del GATES["s"]
        gate.set()
        await clock.advance(100)


async def test_buffer_one_runs_the_first_instant_that_came_then_skips_the_rest(
    backend: Backend,
) -> None:
    await _slow_run(backend, Overlap.BUFFER_ONE)
    minute = timedelta(minutes=1)
    t0 = START + timedelta(minutes=4, seconds=30)
    assert [(i - START) // minute for i in instants()] == [1, 2, 5]
    assert walls()[1] == t0.timestamp()  # right after the slow run


async def test_skip_runs_none_of_the_instants_that_came(backend: Backend) -> None:
    await _slow_run(backend, Overlap.SKIP)
    minute = timedelta(minutes=1)
    assert [(i - START) // minute for i in instants()] == [1, 5, 6]  # the cadence kept


async def test_limit_3_runs_two_of_the_instants_that_came(backend: Backend) -> None:
    await _slow_run(backend, Overlap.limit(3))
    minute = timedelta(minutes=1)
    assert [(i - START) // minute for i in instants()][:3] == [1, 2, 3]
    assert 4 not in [(i - START) // minute for i in instants()]


# -- current_task ----------------------------------------------------------------------------


async def test_current_task_is_the_run_in_progress(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "c")
        FAILS["c"] = 1
        await pid.ask(Call("once_", {"delay": 5, "id": "one"}))
        await clock.advance(5)
        await clock.advance(2)  # the retry (backoff <= 1 s)
        assert await pid.ask(Call("outside")) is None
    first, retry = (tick for _, tick, _ in RUNS)
    assert first == Tick("one", START + timedelta(seconds=5), attempt=1)
    assert retry == Tick("one", START + timedelta(seconds=5), attempt=2)


async def test_current_task_of_a_policy_task_keeps_its_instant_on_retry(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "r")
        FAILS["r"] = 1
        await pid.ask(Call("every_", {"interval": 60, "id": "m", "overlap": Overlap.SKIP}))
        await clock.advance(63)
    first, retry = (tick for _, tick, _ in RUNS[:2])
    assert first.instant == retry.instant == START + timedelta(minutes=1)
    assert (first.attempt, retry.attempt) == (1, 2)


# -- jitter, calendars, DST --------------------------------------------------------------------


async def test_jitter_is_the_hash_of_id_and_instant(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "j")
        await pid.ask(Call("every_", {"interval": 60, "id": "jit", "jitter": 30}))
        [task] = await pid.ask(Call("tasks"))
        first = START + timedelta(minutes=1)
        offset = jitter_offset("jit", first, 30, 60)
        assert 0 < offset < 30
        assert task.due == first + timedelta(seconds=offset)  # the list shows the jittered time
        await clock.advance(200)
    assert instants()[:2] == [first, first + timedelta(minutes=1)]  # nominal instants
    assert walls()[0] == pytest.approx((first + timedelta(seconds=offset)).timestamp())


async def test_cron_jitter_is_the_same_on_every_system(backend: Backend, tmp_path: Any) -> None:
    dues = []
    for name in ("a", "b"):
        async with running(backend) as (system, _clock):
            pid = await system.durable(Job, f"cj-{name}")
            options = {"expression": "0 0 * * * ?", "id": "hourly", "jitter": 600}
            await pid.ask(Call("cron_", options))
            [task] = await pid.ask(Call("tasks"))
            dues.append(task.due)
    top = START + timedelta(hours=1)
    assert dues == [top + timedelta(seconds=jitter_offset("hourly", top, 600, 3600))] * 2


async def test_a_christmas_calendar_skips_exactly_that_day(backend: Backend) -> None:
    start = datetime(2026, 12, 23, 12, tzinfo=UTC)
    async with running(backend, start) as (system, clock):
        pid = await system.durable(Job, "x")
        options = {
            "expression": "0 0 9 * * ?",
            "id": "daily",
            "timezone": "Europe/Paris",
            "exclude": Calendar.dates("2026-12-25"),
        }
        await pid.ask(Call("cron_", options))
        await clock.advance(4 * 86400)
    assert [i.astimezone(PARIS).date().isoformat() for i in instants()] == [
        "2026-12-24",
        "2026-12-26",
        "2026-12-27",
    ]


async def test_an_every_task_skips_excluded_instants(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "w")
        options = {"interval": 3600, "id": "h", "exclude": Calendar.daily("13:30", "15:30")}
        await pid.ask(Call("every_", options))
        await clock.advance(5 * 3600 + 1)
    assert [i.hour for i in instants()] == [13, 16, 17]


async def test_never_skip_runs_a_daily_0230_job_on_the_spring_forward_day(
    backend: Backend,
) -> None:
    async with running(backend, datetime(2024, 3, 29, 12, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Job, "d")
        options = {
            "expression": "0 30 2 * * ?",
            "id": "d",
            "timezone": "Europe/Paris",
            "dst": DSTPolicy.never_skip(),
        }
        await pid.ask(Call("cron_", options))
        await clock.advance(4 * 86400)
    assert [i.astimezone(PARIS).isoformat() for i in instants()] == [
        "2024-03-30T02:30:00+01:00",
        "2024-03-31T03:00:00+02:00",  # the gap: the first instant after it
        "2024-04-01T02:30:00+02:00",
        "2024-04-02T02:30:00+02:00",
    ]


# -- persistence and upserts -----------------------------------------------------------------


async def test_policies_survive_a_restart(persistent_backend: Backend) -> None:
    async with running(persistent_backend) as (system, clock):
        pid = await system.durable(Job, "k")
        options = {"interval": 60, "id": "m", "misfire": Misfire.skip(), "jitter": 5}
        await pid.ask(Call("every_", options))
    async with running(persistent_backend, START + timedelta(hours=1)) as (system, clock):
        await clock.advance(30)
        assert RUNS == []  # skip, stored with the task
        await clock.advance(60)
    assert len(RUNS) == 1


async def test_the_same_registration_keeps_the_due_time_a_changed_policy_replaces_it(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "u")
        options = {"interval": 60, "id": "m", "overlap": Overlap.SKIP}
        await pid.ask(Call("every_", options))
        await clock.advance(30)
        await pid.ask(Call("every_", options))
        [task] = await pid.ask(Call("tasks"))
        assert task.due == START + timedelta(minutes=1)
        await pid.ask(Call("every_", {**options, "overlap": Overlap.limit(2)}))
        [task] = await pid.ask(Call("tasks"))
        assert task.due == START + timedelta(minutes=1, seconds=30)


# -- errors at the call ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "args", "options", "expected"),
    [
        ("every", [60], {"overlap": "skip"}, "ValueError: `overlap`"),
        ("every", [60], {"misfire": "once"}, "ValueError: `misfire`"),
        ("every", [60], {"jitter": 60}, "ValueError: `jitter`"),
        ("every", [60], {"jitter": -1}, "ValueError: `jitter`"),
        ("every", [60], {"exclude": "2026-12-25"}, "ValueError: `exclude`"),
        ("cron", ["0 0 * * * ?"], {"dst": "next"}, "ValueError: `dst`"),
        ("every", [0], {"overlap": Overlap.SKIP}, "InvalidIntervalError"),
        ("schedule", [5], {"jitter": "x"}, "ValueError: `jitter`"),
    ],
)
async def test_bad_options_are_typed_errors_at_the_call(
    call: str, args: list[Any], options: dict[str, Any], expected: str
) -> None:
    async with ActorSystem("errors", clock=ManualClock(wall=START)) as system:
        pid = await system.durable(Job, "e")
        result = await pid.ask(Call("attempt", {"call": call, "args": args, **options}))
    assert result.startswith(expected)
    assert InvalidIntervalError.__name__ == "InvalidIntervalError"


async def test_cron_all_after_a_month_replays_the_most_recent_instants(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "month")
        options = {"expression": "0 * * * * ?", "id": "c", "misfire": Misfire.all(max=5)}
        await pid.ask(Call("cron_", options))
    restart = START + timedelta(days=30, seconds=30)
    async with running(backend, restart) as (system, clock):
        await clock.advance(5)
    minute = timedelta(minutes=1)
    top = START + timedelta(days=30)
    assert instants() == [top - k * minute for k in range(4, -1, -1)]


async def test_allow_hands_the_instants_that_came_to_the_misfire_policy(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Job, "a")
        GATES["a"] = gate = asyncio.Event()
        options = {
            "interval": 60,
            "id": "m",
            "overlap": Overlap.ALLOW,
            "misfire": Misfire.all(max=10),
        }
        await pid.ask(Call("every_", options))
        await clock.advance(60)  # 12:01: the run starts and waits
        await clock.advance(210)  # 12:02, 12:03 and 12:04 come due meanwhile
        del GATES["a"]
        gate.set()
        await clock.advance(60)
    minute = timedelta(minutes=1)
    # None skipped: each replayed with its own instant, then 12:05 on time.
    assert [(i - START) // minute for i in instants()] == [1, 2, 3, 4, 5]
    assert walls()[-1] == (START + 5 * minute).timestamp()
