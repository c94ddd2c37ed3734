# SPDX-License-Identifier: Apache-2.0
"""system.schedules end to end on one node: CRUD, pause state, upsert at start, firing
through store claims, the ledger. Driven by a ManualClock (never sleeping)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from tests.schedules import jobs_for_tests as jobs

from tocsin import (
    ActorSystem,
    Calendar,
    DurableActor,
    ManualClock,
    Misfire,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
)
from tocsin.schedules import Cron, Durable, Interval, Once, Schedule
from tocsin.stores import MemoryStore
from tocsin.triggers import Outcome

T0 = datetime(2026, 3, 2, 9, 0, 0, 250000, tzinfo=UTC).timestamp()  # a Monday


@pytest.fixture(autouse=True)
def _runs() -> Iterator[None]:
    jobs.RUNS.clear()
    yield
    jobs.RUNS.clear()


def system(store: object = None, **kw: object) -> tuple[ActorSystem, ManualClock]:
    clock = ManualClock(wall=T0)
    return ActorSystem("n1", clock=clock, store=store or MemoryStore(), **kw), clock  # type: ignore[arg-type]


RECORD = "tests.schedules.jobs_for_tests.record"


async def test_add_get_list_update_remove_and_versions() -> None:
    sys_, _clock = system()
    async with sys_:
        added = await sys_.schedules.add(Schedule("r", Interval(60), RECORD))
        assert added.version == 1
        # The default anchor is the add's time in whole seconds.
        anchor = datetime.fromtimestamp(int(T0), UTC)
        assert added.spec.trigger == Interval(60, anchor=anchor)
        assert added.next_fire_at == datetime.fromtimestamp(int(T0) + 60, UTC)
        with pytest.raises(ScheduleAlreadyExistsError, match="'r'"):
            await sys_.schedules.add(Schedule("r", Interval(30), RECORD))
        updated = await sys_.schedules.update("r", history=10)
        assert (updated.version, updated.spec.history) == (2, 10)
        assert updated.spec.trigger == Interval(60, anchor=anchor)  # kept
        paused = await sys_.schedules.pause("r", note="db migration OPS-42")
        assert (paused.version, paused.paused, paused.note, paused.paused_by) == (
            2,
            True,
            "db migration OPS-42",
            "n1",
        )
        assert paused.next_fire_at is None
        resumed = await sys_.schedules.resume("r")
        assert (resumed.version, resumed.paused, resumed.note) == (2, False, None)
        assert [s.id for s in await sys_.schedules.list()] == ["r"]
        assert await sys_.schedules.remove("r")
        for call in (
            sys_.schedules.get("r"),
            sys_.schedules.pause("r"),
            sys_.schedules.update("r", history=3),
            sys_.schedules.trigger("r"),
            sys_.schedules.remove("r"),
        ):
            with pytest.raises(ScheduleNotFoundError, match="'r'"):
                await call
        assert not await sys_.schedules.remove("r", missing_ok=True)


async def test_an_interval_fires_on_its_grid_once_per_instant_and_the_ledger_says_so() -> None:
    sys_, clock = system()
    async with sys_:
        await sys_.schedules.add(Schedule("r", Interval(10), RECORD, args=(1,)))
        await clock.advance(0.5)
        assert jobs.RUNS == []  # an add never fires at once
        await clock.advance(30)
        base = int(T0)
        assert [r[1] for r in jobs.RUNS] == [
            datetime.fromtimestamp(base + k * 10, UTC).isoformat() for k in (1, 2, 3)
        ]
        assert jobs.RUNS[0][4] == (1,)
        history = await sys_.schedules.history("r")
        assert [h.outcome for h in history] == [Outcome.DELIVERED] * 3
        assert all(h.node == "n1" and h.version == 1 and h.started is not None for h in history)
        assert (await sys_.schedules.get("r")).last_outcome == "delivered"


async def test_a_paused_schedule_records_paused_rows_with_the_note_and_resume_goes_on() -> None:
    sys_, clock = system()
    async with sys_:
        await sys_.schedules.add(Schedule("r", Interval(10), RECORD))
        await sys_.schedules.pause("r", note="OPS-42")
        await clock.advance(25)
        assert jobs.RUNS == []
        rows = await sys_.schedules.history("r")
        assert [(r.outcome, r.note, r.paused_by) for r in rows] == [
            (Outcome.PAUSED, "OPS-42", "n1")
        ] * 2
        await sys_.schedules.resume("r")
        assert jobs.RUNS == []  # resume never fires at once
        await clock.advance(10)
        assert len(jobs.RUNS) == 1


async def test_a_failing_job_is_recorded_failed_with_the_error_text() -> None:
    sys_, clock = system()
    async with sys_:
        await sys_.schedules.add(
            Schedule("x", Interval(5), "tests.schedules.jobs_for_tests.explode")
        )
        await clock.advance(6)
        [row] = await sys_.schedules.history("x")
        assert (row.outcome, row.detail) == (Outcome.FAILED, "RuntimeError: boom")
        assert row.started is not None


async def test_excluded_instants_are_recorded_and_next_fire_at_skips_them() -> None:
    sys_, clock = system()
    async with sys_:
        spec = Schedule("c", Cron("0 0 12 * * ?"), RECORD, exclude=Calendar.dates("2026-03-02"))
        info = await sys_.schedules.add(spec)
        assert info.next_fire_at == datetime(2026, 3, 3, 12, tzinfo=UTC)
        await clock.advance(3 * 3600 + 1)  # past Monday noon
        assert jobs.RUNS == []
        [row] = await sys_.schedules.history("c")
        assert row.outcome is Outcome.EXCLUDED


def test_a_calendar_leaving_no_instant_in_ten_years_is_refused_at_construction() -> None:
    every_day = Calendar.weekly("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
    with pytest.raises(ValueError, match="no instant in the next 10 years"):
        Schedule("c", Cron("0 0 12 * * ?"), RECORD, exclude=every_day)
    with pytest.raises(ValueError, match="no instant in the next 10 years"):
        Schedule("c", Cron("0 * * * * ?"), RECORD, exclude=every_day)


def test_args_with_a_durable_target_are_refused() -> None:
    with pytest.raises(ValueError, match="payload"):
        Schedule("d", Interval(5), Durable("Order", "o-1", "ship"), args=(1,))


async def test_once_fires_once_and_is_removed_but_its_ledger_row_stays() -> None:
    sys_, clock = system()
    async with sys_:
        info = await sys_.schedules.add(Schedule("o", Once(delay=30), RECORD))
        assert info.spec.trigger == Once(at=datetime.fromtimestamp(T0 + 30, UTC))
        await clock.advance(31)
        assert len(jobs.RUNS) == 1
        with pytest.raises(ScheduleNotFoundError):
            await sys_.schedules.get("o")
        [row] = await sys_.schedules.history("o")
        assert row.outcome is Outcome.DELIVERED


async def test_declared_schedules_are_upserted_at_start_keeping_pause_and_anchor(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    first = [Schedule("a", Interval(60), RECORD), Schedule("b", Cron("0 0 2 * * ?"), RECORD)]
    clock = ManualClock(wall=T0)
    async with ActorSystem("n1", clock=clock, store=url, schedules=first) as s1:
        a = await s1.schedules.get("a")
        await s1.schedules.pause("a", note="hold")
    await clock.advance(3600)
    # A deploy: "a" unchanged, "b" changed, "c" new; nothing removed.
    second = [
        Schedule("a", Interval(60), RECORD),
        Schedule("b", Cron("0 0 3 * * ?"), RECORD),
        Schedule("c", Interval(5), RECORD),
    ]
    async with ActorSystem("n1", clock=clock, store=url, schedules=second) as s2:
        got = {s.id: s for s in await s2.schedules.list()}
        assert (got["a"].version, got["a"].paused, got["a"].note) == (1, True, "hold")
        assert got["a"].spec.trigger == a.spec.trigger  # the anchor of the first add
        assert (got["b"].version, got["b"].spec.trigger) == (2, Cron("0 0 3 * * ?"))
        assert got["c"].version == 1
        plan = await s2.schedules.plan(first, prune=True)
        assert [(p.id, p.action, p.fields) for p in plan] == [
            ("a", "unchanged", ()),
            ("b", "changed", ("trigger",)),
            ("c", "removed", ()),
        ]


async def test_trigger_runs_now_even_when_paused_and_backfill_lists_or_runs_instants() -> None:
    sys_, clock = system()
    async with sys_:
        await sys_.schedules.add(Schedule("r", Interval(10), RECORD))
        await sys_.schedules.pause("r")
        await sys_.schedules.trigger("r")
        await clock.advance(0)
        assert [(r[2], r[3]) for r in jobs.RUNS] == [(True, False)]
        start = datetime.fromtimestamp(int(T0) - 30, UTC)
        end = datetime.fromtimestamp(int(T0), UTC)
        listed = await sys_.schedules.backfill("r", start, end, dry_run=True)
        assert (len(listed), len(jobs.RUNS)) == (3, 1)
        await sys_.schedules.backfill("r", start, end)
        await clock.advance(0)
        assert [r[3] for r in jobs.RUNS[1:]] == [True, True, True]
        # Same keys again: claims still kept, nothing runs twice.
        await sys_.schedules.backfill("r", start, end)
        await clock.advance(0)
        assert len(jobs.RUNS) == 4


class Counter(DurableActor):
    kind = "schedules.Counter"
    seen: ClassVar[list[tuple[str, Any, str | None]]] = []

    async def bump(self, payload: Any) -> None:
        task = self.current_task
        Counter.seen.append((self.identity, payload, None if task is None else task.reference))


async def test_a_durable_target_is_called_as_a_task_with_its_payload() -> None:
    Counter.seen.clear()
    sys_, clock = system()
    async with sys_:
        spec = Schedule("d", Interval(10), Durable(Counter, "c-1", "bump", {"n": 1}))
        await sys_.schedules.add(spec)
        await clock.advance(21)
        assert [(i, p) for i, p, _ in Counter.seen] == [("c-1", {"n": 1})] * 2
        rows = await sys_.schedules.history("d")
        assert [r.outcome for r in rows] == [Outcome.DELIVERED] * 2


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'app.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


async def test_on_a_real_store_schedules_fire_survive_a_restart_and_keep_their_ledger(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    declared = [Schedule("r", Interval(10), RECORD)]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as s1:
        await clock.advance(21)
        await s1.schedules.pause("r", note="maintenance")
        await clock.advance(10)
    assert len(jobs.RUNS) == 2
    async with ActorSystem("n2", clock=clock, store=store_url, schedules=declared) as s2:
        info = await s2.schedules.get("r")
        assert (info.version, info.paused, info.note, info.paused_by) == (
            1,
            True,
            "maintenance",
            "n1",
        )
        await s2.schedules.resume("r")
        await clock.advance(10)
        rows = await s2.schedules.history("r")
        assert [(r.outcome, r.node) for r in rows] == [
            (Outcome.DELIVERED, "n1"),
            (Outcome.DELIVERED, "n1"),
            (Outcome.PAUSED, "n1"),
            (Outcome.DELIVERED, "n2"),
        ]
        assert rows[2].note == "maintenance"
    assert len(jobs.RUNS) == 3


@pytest.mark.parametrize(
    ("misfire", "runs", "rows"),
    [
        (Misfire.once(), 1, [("coalesced", "58"), ("delivered", None)]),
        (
            Misfire.skip(),
            0,
            [("missed", "59 instants came due while no node ran it (Misfire.skip)")],
        ),
        (
            Misfire.all(max=3),
            3,
            # The 56 older than the replayed three are missed, as on every tier (they
            # were not coalesced into any run).
            [
                (
                    "missed",
                    "56 instants came due while no node ran it, "
                    "older than the 3 replayed (Misfire.all)",
                ),
                ("delivered", None),
                ("delivered", None),
                ("delivered", None),
            ],
        ),
        (Misfire.once(grace=30), 0, [("coalesced", "58"), ("missed", None)]),
    ],
    ids=["once", "skip", "all", "grace"],
)
async def test_instants_due_while_every_node_was_down_follow_the_misfire_policy_at_start(
    misfire: Misfire, runs: int, rows: list[tuple[str, str | None]]
) -> None:
    store = MemoryStore()
    clock = ManualClock(wall=T0)
    declared = [Schedule("r", Interval(60), RECORD, misfire=misfire)]
    async with ActorSystem("n1", clock=clock, store=store, schedules=declared):
        await clock.advance(61)  # one instant delivered
    jobs.RUNS.clear()
    await clock.advance(3600 - 30)  # the whole system is down for an hour (59 instants)
    async with ActorSystem("n2", clock=clock, store=store, schedules=declared) as system:
        await clock.advance(0)
        history = await system.schedules.history("r")
        got = [(str(h.outcome), h.detail) for h in history[1:]]
        assert got == rows
        assert len(jobs.RUNS) == runs


async def test_an_update_restating_the_same_interval_keeps_its_anchor_and_a_new_one_moves_it() -> (
    None
):
    sys_, clock = system()
    async with sys_:
        first = await sys_.schedules.add(Schedule("r", Interval(60), RECORD))
        await clock.advance(7.5)
        same = await sys_.schedules.update("r", trigger=Interval(60))
        assert (same.spec.trigger, same.version) == (first.spec.trigger, 1)  # no change
        moved = await sys_.schedules.update("r", trigger=Interval(30))
        assert moved.spec.trigger == Interval(30, anchor=datetime.fromtimestamp(int(T0 + 7.5), UTC))
        assert moved.version == 2


async def test_a_client_steers_stored_schedules_and_a_worker_runs_its_trigger(
    tmp_path: Path,
) -> None:
    from tocsin import Client

    url = f"sqlite:///{tmp_path / 'app.db'}"
    clock = ManualClock(wall=T0)
    declared = [Schedule("r", Interval(60), RECORD)]
    async with ActorSystem("worker", clock=clock, store=url, schedules=declared):
        async with Client(url, clock=clock) as client:
            info = await client.schedules.pause("r", note="from the web app")
            assert (info.paused, info.paused_by) == (True, "client")
            await client.schedules.trigger("r")  # a request: the worker claims it
        # On a real clock the worker sees the change within a second (SQLite's change
        # watch); on a ManualClock that watch is off, so the backstop look finds it.
        await clock.advance(61)
        assert [(run[0], run[2]) for run in jobs.RUNS] == [("r", True)]


async def test_a_pause_note_is_bounded_like_every_pause_note() -> None:
    sys_, _clock = system()
    async with sys_:
        await sys_.schedules.add(Schedule("r", Interval(60), RECORD))
        with pytest.raises(ValueError, match="4,096 bytes"):
            await sys_.schedules.pause("r", note="x" * 5000)
        with pytest.raises(TypeError, match="`note`"):
            await sys_.schedules.pause("r", note=42)  # type: ignore[arg-type]
        assert not (await sys_.schedules.get("r")).paused


async def test_a_dst_gap_before_the_first_fire_leaves_a_dst_gap_row() -> None:
    from tocsin import DSTPolicy

    clock = ManualClock(wall=datetime(2030, 3, 30, 12, tzinfo=UTC).timestamp())
    spec = Schedule(
        "paris",
        Cron("0 30 2 * * ?", timezone="Europe/Paris", dst=DSTPolicy(gap="skip")),
        RECORD,
    )
    async with ActorSystem("n1", clock=clock, store=MemoryStore(), schedules=[spec]) as sys_:
        await clock.advance(2 * 86_400)  # Sunday 31st 02:30 does not exist in Paris
        rows = [(r.instant, r.outcome) for r in await sys_.schedules.history("paris")]
        assert rows == [
            (datetime(2030, 3, 31, 1, tzinfo=UTC), Outcome.DST_GAP),  # 03:00, after the gap
            (datetime(2030, 4, 1, 0, 30, tzinfo=UTC), Outcome.DELIVERED),
        ]
        assert len(jobs.RUNS) == 1


async def test_a_job_no_module_of_this_process_registered_waits_and_is_never_imported() -> None:
    sys_, clock = system()
    async with sys_:
        await sys_.schedules.add(Schedule("x", Interval(5), "os.system"))  # a name, not a job
        await clock.advance(6)
        [row] = await sys_.schedules.history("x")
        # Queued as a durable run (a worker that imported it would run it), never run
        # here: the row says why, and the run waits in the store.
        assert row.outcome is Outcome.DELIVERED
        assert row.started is None
        assert "'os.system' is registered by no module" in str(row.detail)
        [waiting] = await sys_.jobs.list("os.system")
        assert (waiting.id, waiting.state) == ("x@2026-03-02T09:00:05.000Z", "pending")


async def test_misfire_all_replays_the_overdue_instants_at_most_rate_a_second() -> None:
    store = MemoryStore()
    clock = ManualClock(wall=T0)
    declared = [Schedule("r", Interval(60), RECORD, misfire=Misfire.all(max=3, rate=0.5))]
    async with ActorSystem("n1", clock=clock, store=store, schedules=declared):
        await clock.advance(61)
    jobs.RUNS.clear()
    await clock.advance(600)  # down for ten minutes
    async with ActorSystem("n2", clock=clock, store=store, schedules=declared):
        await clock.advance(0)
        assert len(jobs.RUNS) == 1  # the oldest of the three at once
        await clock.advance(2)
        assert len(jobs.RUNS) == 2
        await clock.advance(2)
        instants = [run[1] for run in jobs.RUNS]
        assert instants == sorted(instants)
        assert len(instants) == 3


async def test_next_fire_at_is_the_first_instant_after_a_long_excluded_window() -> None:
    # Every minute, 00:00-06:30 excluded each night: the first delivered instant after
    # midnight is 06:30, the engine's answer (the walk crosses 390 excluded minutes).
    midnight = datetime(2026, 3, 3, tzinfo=UTC)
    clock = ManualClock(wall=midnight.timestamp())
    night = Calendar.daily("00:00", "06:30")
    async with ActorSystem("n1", clock=clock, store=MemoryStore()) as sys_:
        info = await sys_.schedules.add(Schedule("m", Cron("0 * * * * ?"), RECORD, exclude=night))
        assert info.next_fire_at == datetime(2026, 3, 3, 6, 30, tzinfo=UTC)
        listed = await sys_.schedules.backfill("m", midnight, info.next_fire_at, dry_run=True)
        assert listed == []  # every instant of the range is excluded


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'app.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    return f"{dsn}{'&' if '?' in dsn else '?'}schema=t_{uuid.uuid4().hex[:16]}"


async def test_a_trigger_at_the_millisecond_of_a_decided_instant_still_runs(
    any_store: object,
) -> None:
    sys_, clock = system(any_store)
    async with sys_:
        await sys_.schedules.add(Schedule("r", Interval(10), RECORD))
        await clock.advance(10 - 0.25)  # exactly the first instant: it fires and is decided
        instant = datetime.fromtimestamp(int(T0) + 10, UTC)
        assert [(r[1], r[2]) for r in jobs.RUNS] == [(instant.isoformat(), False)]
        assert await sys_.schedules.trigger("r") == instant  # now: the same millisecond
        await clock.advance(0)
        # The manual run is claimed, run and recorded apart from the tick of its instant.
        assert [(r[1], r[2]) for r in jobs.RUNS] == [
            (instant.isoformat(), False),
            (instant.isoformat(), True),
        ]
        history = await sys_.schedules.history("r")
        assert [(h.instant, h.outcome, h.manual) for h in history] == [
            (instant, Outcome.DELIVERED, False),
            (instant, Outcome.DELIVERED, True),
        ]
        assert all(h.started is not None for h in history)
        # The next regular instant is unchanged.
        await clock.advance(10)
        assert [r[2] for r in jobs.RUNS] == [False, True, False]


async def test_a_durable_targets_manual_run_at_a_decided_instant_is_a_task_of_its_own() -> None:
    Counter.seen.clear()
    sys_, clock = system()
    async with sys_:
        spec = Schedule("d", Interval(10), Durable(Counter, "c-1", "bump", {"n": 1}))
        await sys_.schedules.add(spec)
        await clock.advance(10 - 0.25)  # exactly the first instant
        await sys_.schedules.trigger("d")  # the same instant, by hand
        await clock.advance(0)
        assert len(Counter.seen) == 2  # two task rows, not one replacing the other
        rows = await sys_.schedules.history("d")
        assert [(r.outcome, r.manual) for r in rows] == [
            (Outcome.DELIVERED, False),
            (Outcome.DELIVERED, True),
        ]
