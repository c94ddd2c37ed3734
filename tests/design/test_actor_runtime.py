# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Actor runtime (`tocsin.actor`)" as executable statements: one small test per
sentence that names a public name, a signature, a default, an error type or a behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.metadata
import inspect
import threading
from datetime import timedelta
from typing import Any

import pytest
from tests.design.design_support import (
    EMPTY,
    KW,
    PK,
    Recorder,
    manual,
    messages,
    params,
    recorder,
    shape,
)

import tocsin
from tocsin import (
    PID,
    Actor,
    ActorNotFoundError,
    ActorPassivated,
    ActorReinstated,
    ActorRestarted,
    ActorStarted,
    ActorStartError,
    ActorStopped,
    ActorSuspended,
    ActorSystem,
    ActorSystemNotStartedError,
    AskTimeoutError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    Directive,
    ManualClock,
    NoSender,
    ReceiveContext,
    Supervisor,
)


def test_actor_system_signature() -> None:
    p = params(ActorSystem)
    assert next(iter(p)) == "name"
    assert p["name"].default == "tocsin"
    assert p["name"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name, default in [("clock", None), ("store", None), ("stop_timeout", 10.0)]:
        assert p[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert p[name].default == default, name
    assert p["remoting"].default is None
    assert p["mailbox_bound"].kind is inspect.Parameter.KEYWORD_ONLY
    assert p["mailbox_bound"].default is None


def test_stop_signature_timeout_defaults_to_none() -> None:
    assert shape(ActorSystem.stop) == [("timeout", PK, None)]


def test_spawn_signature() -> None:
    assert [(n, k) for n, k, _ in shape(ActorSystem.spawn)] == [
        ("factory", PK),
        ("name", PK),
        ("supervisor", KW),
        ("passivate_after", KW),
        ("mailbox_bound", KW),
    ]
    p = params(ActorSystem.spawn)
    assert p["name"].default is None
    assert p["passivate_after"].default is None
    assert p["mailbox_bound"].default is None  # DESIGN.md "Remoting": Backpressure
    assert p["supervisor"].default is not EMPTY


def test_stop_actor_actor_of_reinstate_durable_are_coroutines() -> None:
    for name in ["start", "stop", "spawn", "stop_actor", "actor_of", "reinstate", "durable"]:
        assert inspect.iscoroutinefunction(getattr(ActorSystem, name)), name


async def test_async_with_starts_and_stops() -> None:
    system = ActorSystem(clock=ManualClock(wall=0))
    async with system as entered:
        assert entered is system
        assert system.running
    assert not system.running


async def test_calls_before_start_raise_not_started() -> None:
    system = ActorSystem(clock=ManualClock(wall=0))
    with pytest.raises(ActorSystemNotStartedError):
        await system.spawn(Recorder)
    with pytest.raises(ActorSystemNotStartedError):
        system.list_schedules()


async def test_failed_start_leaves_nothing_running_and_can_be_retried(tmp_path: Any) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory is needed")
    system = ActorSystem(clock=ManualClock(wall=0), store=f"sqlite:///{blocker}/tasks.db")
    with pytest.raises(Exception):  # noqa: B017 - any error: the contract is "retry it"
        await system.start()
    assert not system.running
    blocker.unlink()
    blocker.mkdir()
    await system.start()
    try:
        assert system.running
    finally:
        await system.stop()


async def test_stop_from_inside_an_actor_begins_the_stop_and_returns() -> None:
    returned: list[bool] = []

    class Stopper(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await ctx.system.stop()
            returned.append(True)

    clock = ManualClock(wall=0)
    system = ActorSystem(clock=clock)
    await system.start()
    pid = await system.spawn(Stopper)
    pid.tell("stop")
    await clock.advance(0)
    await system.stop()
    assert returned == [True]
    assert not system.running


async def test_stop_cancels_handlers_still_running_after_the_grace() -> None:
    stopped: list[str] = []

    class Hang(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await asyncio.Event().wait()

        async def post_stop(self, ctx: ReceiveContext) -> None:
            stopped.append("post_stop")

    clock = ManualClock(wall=0, autojump=True)
    system = ActorSystem(clock=clock, stop_timeout=5)
    await system.start()
    pid = await system.spawn(Hang)
    pid.tell("hang")
    await asyncio.sleep(0)
    await system.stop(timeout=2)
    assert stopped == ["post_stop"]
    assert clock.monotonic() == pytest.approx(2.0)


async def test_system_used_from_another_loop_raises_runtime_error() -> None:
    async with manual() as (system, _):
        errors: list[BaseException] = []

        def other_thread() -> None:
            async def use() -> None:
                await system.spawn(Recorder)

            try:
                asyncio.run(use())
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=other_thread)
        thread.start()
        await asyncio.to_thread(thread.join, 30)
        assert len(errors) == 1
        assert isinstance(errors[0], RuntimeError)


async def test_spawn_a_class_is_a_factory_and_restart_builds_a_fresh_instance() -> None:
    instances: list[int] = []

    class Counted(Actor):
        def __init__(self) -> None:
            instances.append(id(self))

        async def receive(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("boom")

    async with manual() as (system, clock):
        pid = await system.spawn(Counted)
        assert isinstance(pid, PID)
        pid.tell("x")
        await clock.advance(0)
        assert len(instances) == 2
        assert instances[0] != instances[1] or len(set(instances)) == 2


async def test_spawn_raises_actor_start_error_caused_by_pre_start() -> None:
    class Broken(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            raise KeyError("nope")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    async with manual() as (system, _):
        with pytest.raises(ActorStartError) as info:
            await system.spawn(Broken, "broken", supervisor=Directive.STOP)
        assert isinstance(info.value.__cause__, KeyError)
        # the name is free again
        await system.spawn(Recorder, "broken")


async def test_spawn_with_default_supervisor_raises_actor_start_error_too() -> None:
    class Broken(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            raise KeyError("always")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    async with manual() as (system, _):
        with pytest.raises(ActorStartError) as info:
            await system.spawn(Broken)
        assert isinstance(info.value.__cause__, KeyError)


async def test_escalate_from_a_top_level_actor_stops_it() -> None:
    async with manual() as (system, clock):
        stopped: list[Any] = []
        system.events.subscribe(stopped.append, ActorStopped)
        pid, _ = await recorder(system, supervisor=Directive.ESCALATE)
        pid.tell("fail")
        await clock.advance(0)
        assert [e.pid for e in stopped] == [pid]


async def test_stop_actor_stops_children_first_and_returns_when_fully_stopped() -> None:
    order: list[str] = []

    class Node(Actor):
        def __init__(self, label: str, child: bool) -> None:
            self.label, self.child = label, child

        async def pre_start(self, ctx: ReceiveContext) -> None:
            if self.child:
                await ctx.spawn(lambda: Node("child", False), "child")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

        async def post_stop(self, ctx: ReceiveContext) -> None:
            await asyncio.sleep(0)
            order.append(self.label)

    async with manual() as (system, _):
        stopped: list[str] = []
        system.events.subscribe(lambda e: stopped.append(e.pid.name), ActorStopped)
        pid = await system.spawn(lambda: Node("parent", True), "parent")
        await system.stop_actor(pid)
        assert order == ["child", "parent"]
        assert stopped == ["child", "parent"]


async def test_actor_of_finds_by_name_and_path() -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system, "finder")
        assert await system.actor_of("finder") == pid
        assert await system.actor_of(pid.path) == pid
        assert await system.actor_of(str(pid)) == pid
        with pytest.raises(ActorNotFoundError):
            await system.actor_of("nobody")


def test_actor_receive_is_required_and_hooks_are_optional() -> None:
    assert "receive" in Actor.__abstractmethods__
    for hook in ["receive", "pre_start", "post_stop"]:
        assert inspect.iscoroutinefunction(getattr(Actor, hook))
        assert list(params(getattr(Actor, hook))) == ["self", "ctx"]


def test_pid_signatures() -> None:
    assert shape(PID.tell) == [("message", PK, EMPTY), ("sender", PK, None)]
    ask = params(PID.ask)
    assert ask["timeout"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.iscoroutinefunction(PID.ask)
    # Backpressure: `await pid.send(message)` waits for room (DESIGN.md "Remoting").
    assert shape(PID.send) == [("message", PK, EMPTY), ("sender", PK, None)]
    assert inspect.iscoroutinefunction(PID.send)


async def test_pid_path_name_hashable_comparable_serialisable() -> None:
    async with manual() as (system, _):
        a, _ = await recorder(system, "a")
        b, _ = await recorder(system, "b")
        assert (a.name, a.path) == ("a", "/user/a")
        assert len({a, b, a}) == 2
        assert sorted([b, a]) == [a, b]
        # serialisable for remoting: its wire form names it fully (the remote tests
        # below send PIDs across a real connection)
        parts = tocsin.parse_pid(a.wire)
        assert str(a).endswith(parts.path)
        assert parts.path == "/user/a"


async def test_tell_with_sender_and_ask_reply() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        other, _ = await recorder(system)
        pid.tell("hi", sender=other)
        pid.tell("anon")
        await clock.advance(0)
        assert actor.got[0][1] == other
        assert actor.got[1][1] is NoSender
        assert await pid.ask("q", timeout=1) == "q"


async def test_ask_times_out_with_ask_timeout_error() -> None:
    class Silent(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    async with manual() as (system, clock):
        pid = await system.spawn(Silent)
        task = asyncio.ensure_future(pid.ask("q", timeout=2))
        await clock.advance(2)
        with pytest.raises(AskTimeoutError):
            await task
        assert issubclass(AskTimeoutError, TimeoutError)


async def test_receive_context_members() -> None:
    seen: dict[str, Any] = {}

    class Inspect(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            seen.update(message=ctx.message, sender=ctx.sender, self=ctx.self, system=ctx.system)
            child = await ctx.spawn(Recorder, "kid")
            ctx.tell(child, "hello")
            ref = await ctx.schedule_once("later", child, 1)
            seen["listed"] = [i.reference for i in ctx.list_schedules()]
            await ctx.cancel_schedule(ref)
            ctx.stop(child)
            ctx.respond("done")

    async with manual() as (system, _):
        pid = await system.spawn(Inspect, "inspect")
        await system.schedule_once("x", pid, 5, reference="system-wide")
        assert await pid.ask("m") == "done"
        assert seen["message"] == "m"
        assert seen["self"] == pid
        assert seen["system"] is system
        assert seen["sender"] is NoSender
        assert "system-wide" in seen["listed"]  # the whole system, not only this actor's
    for name in [
        "message",
        "sender",
        "self",
        "system",
        "respond",
        "tell",
        "spawn",
        "stop",
        "schedule",
        "schedule_once",
        "schedule_cron",
        "cancel_schedule",
        "pause_schedule",
        "resume_schedule",
        "list_schedules",
    ]:
        assert hasattr(ReceiveContext, name) or name in ReceiveContext.__slots__, name


def test_directive_values() -> None:
    assert {d.name for d in Directive} >= {"RESTART", "RESUME", "STOP", "SUSPEND", "ESCALATE"}


def test_supervisor_signature() -> None:
    p = params(Supervisor)
    assert next(iter(p)) == "decider"
    assert p["max_restarts"].kind is inspect.Parameter.KEYWORD_ONLY
    assert p["within"].kind is inspect.Parameter.KEYWORD_ONLY
    Supervisor(Directive.RESUME, max_restarts=3, within=10)
    Supervisor(lambda exc: Directive.STOP, max_restarts=3, within=timedelta(seconds=10))


async def test_default_supervision_restarts() -> None:
    async with manual() as (system, clock):
        events: list[Any] = []
        system.events.subscribe(events.append, ActorRestarted)
        pid, _ = await recorder(system)
        pid.tell("fail")
        await clock.advance(0)
        assert [type(e.error) for e in events] == [RuntimeError]
        assert events[0].pid == pid


async def test_callable_decider_resume_keeps_state() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system, supervisor=Supervisor(lambda exc: Directive.RESUME))
        pid.tell("a")
        pid.tell("fail")
        pid.tell("b")
        await clock.advance(0)
        assert messages(actor) == ["a", "fail", "b"]


async def test_past_the_restart_limit_the_actor_stops() -> None:
    async with manual() as (system, clock):
        stopped: list[Any] = []
        system.events.subscribe(stopped.append, ActorStopped)
        pid, _ = await recorder(
            system, supervisor=Supervisor(Directive.RESTART, max_restarts=2, within=60)
        )
        for _ in range(3):
            pid.tell("fail")
        await clock.advance(0)
        assert [e.pid for e in stopped] == [pid]


async def test_suspend_dead_letters_until_reinstate() -> None:
    async with manual() as (system, clock):
        events: list[Any] = []
        system.events.subscribe(events.append, ActorSuspended, ActorReinstated, DeadLetter)
        pid, actor = await recorder(system, supervisor=Supervisor(Directive.SUSPEND))
        pid.tell("fail")
        await clock.advance(0)
        pid.tell("lost")
        await clock.advance(0)
        await system.reinstate(pid)
        pid.tell("kept")
        await clock.advance(0)
        assert messages(actor) == ["fail", "kept"]
        kinds = [type(e) for e in events]
        assert kinds == [ActorSuspended, DeadLetter, ActorReinstated]
        assert events[1].reason == DeadLetterReason.SUSPENDED
        assert events[1].message == "lost"
        assert isinstance(events[0].error, RuntimeError)


async def test_ask_to_suspended_or_stopped_target_fails_at_once() -> None:
    async with manual() as (system, clock):
        pid, _ = await recorder(system, supervisor=Supervisor(Directive.SUSPEND))
        pid.tell("fail")
        await clock.advance(0)
        with pytest.raises(DeadActorError):
            await pid.ask("q", timeout=None)
        await system.stop_actor(pid)
        with pytest.raises(DeadActorError):
            await pid.ask("q", timeout=None)


async def test_escalate_fails_the_parent() -> None:
    restarted: list[str] = []

    class Child(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("child failed")

    class Parent(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await ctx.spawn(Child, "child", supervisor=Directive.ESCALATE)

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    async with manual() as (system, clock):
        system.events.subscribe(lambda e: restarted.append(e.pid.name), ActorRestarted)
        await system.spawn(Parent, "parent")
        child = await system.actor_of("/user/parent/child")
        child.tell("x")
        await clock.advance(0)
        assert "parent" in restarted


async def test_passivation_stops_an_idle_actor_and_delivery_is_activity() -> None:
    async with manual() as (system, clock):
        events: list[Any] = []
        system.events.subscribe(events.append, ActorPassivated, ActorStopped)
        pid, _ = await recorder(system, passivate_after=10)
        await clock.advance(6)
        pid.tell("activity")
        await clock.advance(6)
        assert events == []
        await clock.advance(5)
        assert [type(e) for e in events] == [ActorPassivated, ActorStopped]
        assert all(e.pid == pid for e in events)


async def test_ticks_count_as_activity_for_passivation() -> None:
    async with manual() as (system, clock):
        events: list[Any] = []
        system.events.subscribe(events.append, ActorPassivated)
        pid, _ = await recorder(system, passivate_after=3)
        await system.schedule("tick", pid, 2)
        await clock.advance(20)
        assert events == []


def test_event_types_and_field_names() -> None:
    expected = {
        DeadLetter: ["message", "sender", "target", "reason"],
        ActorStarted: ["pid"],
        ActorStopped: ["pid"],
        ActorRestarted: ["pid", "error"],
        ActorSuspended: ["pid", "error"],
        ActorReinstated: ["pid"],
        ActorPassivated: ["pid"],
    }
    for cls, names in expected.items():
        assert [f.name for f in dataclasses.fields(cls)] == names, cls
        assert cls.__name__ in tocsin.__all__


def test_dead_letter_reason_is_a_str_enum_with_the_design_values() -> None:
    assert issubclass(DeadLetterReason, str)
    assert {r.value for r in DeadLetterReason} == {
        "stopped",
        "suspended",
        "not_found",
        "unreachable",
        "overflow",
    }
    assert DeadLetterReason("stopped") == "stopped"


async def test_events_subscribe_filter_async_handler_and_cancel() -> None:
    async with manual() as (system, clock):
        everything: list[Any] = []
        started: list[Any] = []
        async_got: list[Any] = []

        async def async_handler(event: Any) -> None:
            async_got.append(event)

        all_sub = system.events.subscribe(everything.append)
        system.events.subscribe(started.append, ActorStarted)
        system.events.subscribe(async_handler, ActorStarted)
        pid, _ = await recorder(system)
        await clock.advance(0)
        assert [e.pid for e in started] == [pid]
        assert [e.pid for e in async_got] == [pid]
        all_sub.cancel()
        await system.stop_actor(pid)
        assert [type(e) for e in everything] == [ActorStarted]


async def test_every_undeliverable_send_is_a_counted_dead_letter() -> None:
    async with manual() as (system, clock):
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid, _ = await recorder(system)
        await system.stop_actor(pid)
        before = system.dead_letters
        pid.tell("gone", sender=None)
        await clock.advance(0)
        assert system.dead_letters == before + 1
        assert letters[-1] == DeadLetter("gone", NoSender, pid, DeadLetterReason.STOPPED) or (
            letters[-1].message,
            letters[-1].target,
            letters[-1].reason,
        ) == ("gone", pid, DeadLetterReason.STOPPED)


async def test_actor_stopped_is_published_after_post_stop_finished() -> None:
    log: list[str] = []

    class Slow(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

        async def post_stop(self, ctx: ReceiveContext) -> None:
            await asyncio.sleep(0)
            log.append("post_stop")

    async with manual() as (system, _):
        system.events.subscribe(lambda e: log.append("ActorStopped"), ActorStopped)
        pid = await system.spawn(Slow)
        await system.stop_actor(pid)
        assert log == ["post_stop", "ActorStopped"]


def test_pytest_plugin_entry_point_is_registered() -> None:
    eps = importlib.metadata.entry_points(group="pytest11")
    assert any(ep.value.startswith("tocsin") for ep in eps)


async def test_pytest_plugin_fixtures(
    tocsin_clock: ManualClock, tocsin_system: ActorSystem
) -> None:
    assert isinstance(tocsin_clock, ManualClock)
    assert tocsin_system.clock is tocsin_clock
    pid, actor = await recorder(tocsin_system)
    await tocsin_system.schedule_once("x", pid, 1)
    await tocsin_clock.advance(1)
    assert messages(actor) == ["x"]
