# SPDX-License-Identifier: Apache-2.0
"""The built-in sources read what a running system counts, at scrape time (ManualClock)."""

from __future__ import annotations

import asyncio
from typing import Any

from tocsin import (
    Actor,
    ActorSystem,
    Directive,
    ManualClock,
    ReceiveContext,
    Remoting,
    Supervisor,
)
from tocsin._codec import encode
from tocsin.durable import DurableActor, RetryDecision, RetryPolicy
from tocsin.metrics import SYSTEM_SOURCES, HistogramValue, Metric, Metrics, Sample, TimedStore
from tocsin.stores import MemoryStore, TaskRow, UpsertTask

T0 = 1_700_000_000.0


def by_name(metrics: list[Metric]) -> dict[str, Metric]:
    return {m.name: m for m in metrics}


def value(metric: Metric, **labels: str) -> Any:
    want = tuple(sorted(labels.items()))
    for s in metric.samples:
        if tuple(sorted(s.labels)) == want:
            return s.value
    raise AssertionError(f"no sample {labels} in {metric}")


class Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "boom":
            raise RuntimeError("boom")


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


class Slow(Actor):
    gate: asyncio.Event

    async def receive(self, ctx: ReceiveContext) -> None:
        await Slow.gate.wait()


async def test_scheduler_metrics_count_ticks_kinds_and_lateness() -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock) as system:
        metrics = Metrics.of(system)
        pid = await system.spawn(Sink, "sink")
        await system.schedule("t", pid, 1.0, reference="every")
        await system.schedule_once("t", pid, 100.0, reference="later")
        await system.schedule_cron("t", pid, "0 0 12 * * ?", reference="noon", timezone="UTC")
        await system.pause_schedule("later")
        await clock.advance(3.0)
        await clock.jump(2.5)  # a stall: the next tick fires late
        m = by_name(metrics.collect())
        assert value(m["schedule.ticks_delivered"]) == 4
        assert value(m["schedules"], kind="interval", paused="false") == 1
        assert value(m["schedules"], kind="once", paused="true") == 1
        assert value(m["schedules"], kind="cron", paused="false") == 1
        lateness = value(m["schedule.lateness"])
        assert isinstance(lateness, HistogramValue)
        assert lateness.count == 4
        assert lateness.cumulative()[-2] == ("60.0", 4)
        assert lateness.sum >= 1.5  # the stalled tick was late by about 1.5 s
        again = by_name(metrics.collect())
        assert value(again["schedule.lateness"]).count == 4  # nothing fired: nothing added
        assert value(again["schedule.lateness"]).new == ()


async def test_before_start_every_family_is_reported_without_samples() -> None:
    system = ActorSystem(clock=ManualClock(wall=T0))
    metrics = Metrics.of(system)
    m = by_name(metrics.collect())
    for name in ("schedule.ticks_delivered", "schedule.lateness", "durable.task_runs",
                 "store.call_duration"):  # fmt: skip
        assert m[name].samples == (), name
    assert value(m["actors"]) == 0
    assert value(m["metrics.source_errors"]) == 0


async def test_actor_metrics_count_restarts_dead_letters_and_mailbox_high_water() -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock) as system:
        metrics = Metrics.of(system)
        pid = await system.spawn(Sink, "sink", supervisor=Supervisor(Directive.RESTART))
        pid.tell("boom")
        pid.tell("boom")
        await clock.advance(0)
        Slow.gate = asyncio.Event()
        slow = await system.spawn(Slow, "slow")
        for _ in range(5):
            slow.tell("x")
        await asyncio.sleep(0)  # the first turn starts and blocks on the gate
        m = by_name(metrics.collect())
        assert value(m["actor.restarts"]) == 2
        assert value(m["actors"]) == 2
        assert value(m["mailbox.high_water"]) == 5
        assert value(m["mailbox.depth"]) == 4  # one taken, blocked in receive
        assert value(m["mailbox.depth_max"]) == 4
        Slow.gate.set()
        await system.stop_actor(pid)
        pid.tell("to the dead")
        m = by_name(metrics.collect())
        assert value(m["dead_letters"]) == 1
        assert value(m["actors"]) == 1


class NoWait(RetryPolicy):
    """Retry after 1 s (no random backoff), park after ``max_retries``."""

    def decide(self, exception: BaseException, attempts: int, max_retries: int) -> Any:
        return None if attempts > max_retries else RetryDecision(1.0)


class Job(DurableActor):
    kind = "MetricsJob"
    retry_policy = NoWait()

    async def ok(self, payload: Any) -> None:
        await asyncio.sleep(0)

    async def fail(self, payload: Any) -> None:
        raise RuntimeError("always")


async def test_durable_metrics_count_runs_retries_parks_and_time_store_calls() -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock, store=MemoryStore()) as system:
        metrics = Metrics.of(system)
        metrics.collect()  # attaching and first scrape: store calls are timed from here
        pid = await system.durable(Job, "j1")
        assert pid is not None
        await pid.ask(_Queue("ok"), timeout=5)
        await pid.ask(_Queue("fail", max_retries=1), timeout=5)
        for _ in range(4):
            await clock.advance(1.0)
        m = by_name(metrics.collect())
        assert value(m["durable.task_runs"], outcome="ok") == 1
        assert value(m["durable.task_runs"], outcome="failed") == 2
        assert value(m["durable.task_retries"]) == 1
        assert value(m["durable.task_parks"]) == 1
        runs = value(m["durable.task_run_duration"])
        assert runs.count == 3
        assert value(m["durable.identities_active"]) == 1
        apply = value(m["store.call_duration"], op="apply")
        assert apply.count >= 3  # the two queue writes and the completions
        assert value(m["store.call_errors"], op="apply") == 0


async def test_runs_are_counted_always_and_timed_only_once_metrics_are_read() -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock, store=MemoryStore()) as system:
        pid = await system.durable(Job, "j1")
        await pid.ask(_Queue("ok"), timeout=5)
        await clock.advance(1.0)
        metrics = Metrics.of(system)
        m = by_name(metrics.collect())  # the first read switches run timing on
        assert value(m["durable.task_runs"], outcome="ok") == 1
        assert value(m["durable.task_run_duration"]).count == 0  # ran before anyone read
        await pid.ask(_Queue("ok"), timeout=5)
        await clock.advance(1.0)
        m = by_name(metrics.collect())
        assert value(m["durable.task_runs"], outcome="ok") == 2
        assert value(m["durable.task_run_duration"]).count == 1


class _Queue:
    """Asks a Job to queue a task (through its own API, inside its turn)."""

    def __init__(self, method: str, max_retries: int = 5) -> None:
        self.method = method
        self.max_retries = max_retries


async def _job_receive(self: Job, ctx: ReceiveContext) -> None:
    message = ctx.message
    if isinstance(message, _Queue):
        ctx.respond(await self.queue(message.method, max_retries=message.max_retries))


Job.receive = _job_receive  # type: ignore[method-assign, assignment]


async def test_timed_store_forwards_results_and_errors_unchanged() -> None:
    clock = ManualClock(wall=T0)
    inner = MemoryStore()
    store = TimedStore(inner, clock)
    await store.open()
    assert await store.list_tasks() == []
    assert await store.next_due("k", "i") is None
    assert store.timings["list_tasks"].calls == 1
    assert store.url == inner.url
    await store.close()


async def test_a_failing_source_is_counted_and_the_others_still_read() -> None:
    def broken() -> list[Metric]:
        raise RuntimeError("broken source")

    def fine() -> list[Metric]:
        from tocsin.metrics import MetricKind

        return [Metric("x", MetricKind.GAUGE, "x", "", (Sample(1),))]

    metrics = Metrics([broken, fine])
    m = by_name(metrics.collect())
    assert value(m["x"]) == 1
    assert value(m["metrics.source_errors"]) == 1


def test_remote_and_cluster_add_a_source_in_one_line() -> None:
    assert len(SYSTEM_SOURCES) == 6  # scheduler, actors, durable, store, remote, cluster


async def test_durable_runs_of_a_vanished_method_are_counted_as_dropped() -> None:
    clock = ManualClock(wall=T0)
    store = MemoryStore()
    async with ActorSystem(clock=clock, store=store) as system:
        metrics = Metrics.of(system)
        await store.apply([UpsertTask(TaskRow(
            kind=Job.kind, identity="x", id="gone", name="renamed_by_a_deploy",
            payload=encode(None), due=T0 - 1, every=None, attempts=0, max_retries=5,
            created_at=T0 - 10,
        ))])  # fmt: skip
        await system.durable(Job, "x")
        await clock.advance(1.0)
        m = by_name(metrics.collect())
        assert value(m["durable.task_runs"], outcome="dropped") == 1
        assert value(m["durable.task_runs"], outcome="failed") == 0
        assert value(m["durable.task_runs"], outcome="ok") == 0
        assert value(m["durable.task_retries"]) == 0
        assert await store.get_task(Job.kind, "x", "gone") is None


async def test_remote_counters_of_two_real_nodes_and_empty_families_without_remoting() -> None:
    secret = b"0123456789abcdef0123"
    a = ActorSystem("a", remoting=Remoting(listen="tcp://127.0.0.1:0", secret=secret))
    b = ActorSystem("b", remoting=Remoting(listen="tcp://127.0.0.1:0", secret=secret))
    async with a, b:
        await b.spawn(Echo, "echo")
        pid = await a.actor_of(b.address + "/user/echo")
        assert await pid.ask("hi", timeout=10) == "hi"
        m = by_name(Metrics.of(a).collect())
        assert value(m["remote.frames_sent"]) >= 1
        assert value(m["remote.sent"]) > 0
        assert value(m["remote.connections"]) >= 1
        assert value(m["remote.auth_failures"]) == 0
        assert m["remote.sent"].prometheus_name == "tocsin_remote_sent_bytes"
    plain = by_name(Metrics.of(ActorSystem()).collect())
    assert plain["remote.frames_sent"].samples == ()
