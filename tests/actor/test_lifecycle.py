# SPDX-License-Identifier: Apache-2.0
"""ActorSystem start/stop, spawn, names, stop order and lifecycle hooks (ManualClock only)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.actor.actor_support import Echo

from tocsin import (
    PID,
    Actor,
    ActorNameTakenError,
    ActorNotFoundError,
    ActorStarted,
    ActorStartError,
    ActorStopped,
    ActorSystem,
    ActorSystemNotStartedError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    Directive,
    ManualClock,
    NoSender,
    ReceiveContext,
)


class Recorder(Actor):
    """Appends every message to a shared log; answers asks with ``"ok"``."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    async def receive(self, ctx: ReceiveContext) -> None:
        self.log.append(ctx.message)
        ctx.respond("ok")


def system_on(clock: ManualClock | None = None) -> ActorSystem:
    return ActorSystem("test", clock=clock or ManualClock(wall=0))


# -- start / stop ------------------------------------------------------------------------


async def test_start_and_stop_are_idempotent() -> None:
    system = system_on()
    await system.start()
    await system.start()
    assert system.running
    await system.stop()
    await system.stop()
    assert not system.running


async def test_async_context_manager_starts_and_stops_the_system() -> None:
    async with system_on() as system:
        assert system.running
        pid = await system.spawn(Echo, "echo")
        assert await pid.ask("hi") == "hi"
    assert not system.running


async def test_context_manager_stops_the_system_when_the_body_raises() -> None:
    system = system_on()

    async def body() -> None:
        async with system:
            await system.spawn(Echo, "echo")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await body()
    assert not system.running
    assert system.events.count(ActorStopped) == 1


async def test_use_before_start_raises_not_started() -> None:
    system = system_on()
    with pytest.raises(ActorSystemNotStartedError, match="not running"):
        await system.spawn(Echo)
    with pytest.raises(ActorSystemNotStartedError):
        await system.actor_of("echo")
    with pytest.raises(ActorSystemNotStartedError):
        system.list_schedules()


async def test_use_after_stop_raises_not_started() -> None:
    system = system_on()
    await system.start()
    pid = await system.spawn(Echo, "echo")
    await system.stop()
    with pytest.raises(ActorSystemNotStartedError):
        await system.spawn(Echo)
    with pytest.raises(ActorSystemNotStartedError):
        await pid.ask("hi")
    with pytest.raises(ActorSystemNotStartedError):
        await system.stop_actor(pid)
    with pytest.raises(ActorSystemNotStartedError):
        await system.reinstate(pid)
    with pytest.raises(ActorSystemNotStartedError):
        await system.actor_of("echo")


async def test_tell_after_system_stop_is_a_dead_letter_not_an_error() -> None:
    system = system_on()
    await system.start()
    pid = await system.spawn(Echo, "echo")
    await system.stop()
    pid.tell("late")
    assert system.dead_letters == 1


# -- spawn and names ---------------------------------------------------------------------


async def test_spawn_returns_a_pid_with_a_user_path() -> None:
    async with system_on() as system:
        pid = await system.spawn(Echo, "echo")
        assert pid.path == "/user/echo"
        assert pid.name == "echo"
        assert str(pid) == "tocsin://test/user/echo"
        assert await system.actor_of("echo") == pid
        assert await system.actor_of("/user/echo") == pid


async def test_spawn_without_a_name_generates_unique_names() -> None:
    async with system_on() as system:
        a = await system.spawn(Echo)
        b = await system.spawn(Echo)
        assert a.name.startswith("$")
        assert a != b
        assert a.path != b.path


async def test_spawn_with_a_duplicate_name_raises_name_taken() -> None:
    async with system_on() as system:
        await system.spawn(Echo, "echo")
        with pytest.raises(ActorNameTakenError, match="/user/echo"):
            await system.spawn(Echo, "echo")


async def test_name_is_free_again_once_the_actor_fully_stopped() -> None:
    async with system_on() as system:
        old = await system.spawn(Echo, "echo")
        await system.stop_actor(old)
        new = await system.spawn(Echo, "echo")
        assert new.path == old.path
        assert new != old  # a new incarnation
        old.tell("to the old one")
        assert system.dead_letters == 1
        assert await new.ask("x") == "x"


@pytest.mark.parametrize("name", ["", "a/b", "$reserved", 3])
async def test_spawn_rejects_bad_names(name: Any) -> None:
    async with system_on() as system:
        with pytest.raises(ValueError, match="`name`"):
            await system.spawn(Echo, name)


async def test_spawn_rejects_a_factory_that_does_not_build_an_actor() -> None:
    async with system_on() as system:
        with pytest.raises(TypeError, match=r"tocsin\.Actor"):
            await system.spawn(lambda: object())  # type: ignore[arg-type,return-value]
        with pytest.raises(TypeError, match="`factory`"):
            await system.spawn("Echo")  # type: ignore[arg-type]


async def test_spawn_rejects_a_bad_supervisor() -> None:
    async with system_on() as system:
        with pytest.raises(TypeError, match="`supervisor`"):
            await system.spawn(Echo, supervisor="restart")  # type: ignore[arg-type]


async def test_actor_of_an_unknown_name_raises_not_found() -> None:
    async with system_on() as system:
        with pytest.raises(ActorNotFoundError, match="/user/ghost"):
            await system.actor_of("ghost")


async def test_actor_started_is_published_after_pre_start() -> None:
    seen: list[str] = []

    class A(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            seen.append("pre_start")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    async with system_on() as system:
        system.events.subscribe(lambda e: seen.append(type(e).__name__), ActorStarted)
        await system.spawn(A)
    assert seen == ["pre_start", "ActorStarted"]


async def test_messages_sent_while_pre_start_runs_wait_in_the_mailbox() -> None:
    gate = asyncio.Event()
    log: list[Any] = []

    class Slow(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            ctx.self.tell("early")
            await gate.wait()
            log.append("started")

        async def receive(self, ctx: ReceiveContext) -> None:
            log.append(ctx.message)

    async with system_on() as system:
        spawning = asyncio.create_task(system.spawn(Slow, "slow"))
        await asyncio.sleep(0)
        gate.set()
        pid = await spawning
        pid.tell("later")
        await system.clock.advance(0)  # type: ignore[attr-defined]
    assert log == ["started", "early", "later"]


# -- stop --------------------------------------------------------------------------------


async def test_stop_actor_stops_children_first_then_post_stop_then_publishes_stopped() -> None:
    order: list[str] = []

    class Child(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

        async def post_stop(self, ctx: ReceiveContext) -> None:
            order.append(f"post_stop {ctx.self.name}")

    class Parent(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await ctx.spawn(Child, "c1")
            await ctx.spawn(Child, "c2")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

        async def post_stop(self, ctx: ReceiveContext) -> None:
            order.append("post_stop parent")

    async with system_on() as system:
        system.events.subscribe(lambda e: order.append(f"stopped {e.pid.name}"), ActorStopped)
        pid = await system.spawn(Parent, "parent")
        await system.stop_actor(pid)
        # stop_actor returned: the actor is fully stopped.
        assert order[-2:] == ["post_stop parent", "stopped parent"]
        assert set(order[:4]) == {"post_stop c1", "stopped c1", "post_stop c2", "stopped c2"}
        assert order.index("post_stop c1") < order.index("stopped c1")
        with pytest.raises(ActorNotFoundError):
            await system.actor_of("/user/parent/c1")


async def test_stop_actor_twice_is_a_no_op() -> None:
    async with system_on() as system:
        pid = await system.spawn(Echo, "echo")
        await system.stop_actor(pid)
        await system.stop_actor(pid)
        assert system.events.count(ActorStopped) == 1


async def test_stop_waits_for_the_current_message_and_dead_letters_the_rest() -> None:
    gate = asyncio.Event()
    log: list[Any] = []

    class Busy(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "block":
                await gate.wait()
            log.append(ctx.message)

    async with system_on() as system:
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid = await system.spawn(Busy, "busy")
        pid.tell("block")
        pid.tell("queued")
        await asyncio.sleep(0)
        stopping = asyncio.create_task(system.stop_actor(pid))
        await asyncio.sleep(0)
        assert not stopping.done()
        gate.set()
        await stopping
        assert log == ["block"]
        assert [(d.message, d.reason) for d in letters] == [("queued", DeadLetterReason.STOPPED)]


async def test_actor_stopping_itself_from_receive_stops_after_the_current_message() -> None:
    log: list[Any] = []

    class Quitter(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            log.append(ctx.message)
            if ctx.message == "quit":
                await ctx.system.stop_actor(ctx.self)  # must not deadlock
                log.append("after stop call")

        async def post_stop(self, ctx: ReceiveContext) -> None:
            log.append("post_stop")

    async with system_on() as system:
        pid = await system.spawn(Quitter, "q")
        pid.tell("quit")
        pid.tell("never")
        await system.clock.advance(0)  # type: ignore[attr-defined]
        assert log == ["quit", "after stop call", "post_stop"]
        assert system.dead_letters == 1
        with pytest.raises(ActorNotFoundError):
            await system.actor_of("q")


async def test_actor_stopping_itself_from_pre_start_does_not_deadlock() -> None:
    log: list[str] = []

    class Quitter(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await ctx.system.stop_actor(ctx.self)
            log.append("pre_start done")

        async def receive(self, ctx: ReceiveContext) -> None:
            log.append("receive")

        async def post_stop(self, ctx: ReceiveContext) -> None:
            log.append("post_stop")

    async with system_on() as system:
        pid = await system.spawn(Quitter, "q")
        pid.tell("never")
        await system.clock.advance(0)  # type: ignore[attr-defined]
        assert log == ["pre_start done", "post_stop"]
        assert system.events.count(ActorStarted) == 0
        assert system.events.count(ActorStopped) == 1
        assert system.dead_letters == 1


async def test_ctx_stop_of_self_does_not_wait() -> None:
    log: list[Any] = []

    class Quitter(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.stop(ctx.self)
            log.append("handled")

    async with system_on() as system:
        pid = await system.spawn(Quitter, "q")
        pid.tell("quit")
        await system.clock.advance(0)  # type: ignore[attr-defined]
        assert log == ["handled"]
        assert system.events.count(ActorStopped) == 1


async def test_exception_in_post_stop_is_logged_and_the_stop_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Bad(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

        async def post_stop(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("post_stop boom")

    async with system_on() as system:
        pid = await system.spawn(Bad, "bad")
        await system.stop_actor(pid)
        assert system.events.count(ActorStopped) == 1
        with pytest.raises(DeadActorError):
            await pid.ask("x")
    assert "post_stop of tocsin://test/user/bad failed" in caplog.text


async def test_exception_in_pre_start_with_stop_directive_stops_the_actor() -> None:
    class Bad(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("pre_start boom")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    async with system_on() as system:
        # Issue 10 item 4: a spawn whose actor never came up raises instead of returning
        # a dead PID; the actor is fully stopped by then.
        with pytest.raises(ActorStartError) as info:
            await system.spawn(Bad, "bad", supervisor=Directive.STOP)
        assert isinstance(info.value.__cause__, RuntimeError)
        assert system.events.count(ActorStopped) == 1
        assert system.events.count(ActorStarted) == 0
        with pytest.raises(ActorNotFoundError):
            await system.actor_of("bad")


async def test_system_stop_stops_every_actor_and_children() -> None:
    stopped: list[str] = []

    class Child(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    class Parent(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await ctx.spawn(Child, "kid")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    system = system_on()
    await system.start()
    system.events.subscribe(lambda e: stopped.append(e.pid.path), ActorStopped)
    await system.spawn(Parent, "a")
    await system.spawn(Parent, "b")
    await system.spawn(Echo, "c")
    await system.stop()
    assert sorted(stopped) == ["/user/a", "/user/a/kid", "/user/b", "/user/b/kid", "/user/c"]
    assert stopped.index("/user/a/kid") < stopped.index("/user/a")


async def test_messages_from_outside_any_actor_have_no_sender() -> None:
    senders: list[Any] = []

    class Spy(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            senders.append(ctx.sender)
            ctx.respond(None)

    async with system_on() as system:
        pid = await system.spawn(Spy)
        pid.tell("a")
        await pid.ask("b")
    assert senders == [NoSender, NoSender]
    assert not NoSender
    assert repr(NoSender) == "NoSender"


async def test_pid_is_hashable_and_ordered() -> None:
    async with system_on() as system:
        a = await system.spawn(Echo, "a")
        b = await system.spawn(Echo, "b")
        assert {a: 1}[a] == 1
        assert sorted([b, a]) == [a, b]
        assert a < b
        assert a <= a
        assert b > a
        assert b >= b
        assert isinstance(a, PID)
        assert a != "test/user/a"
