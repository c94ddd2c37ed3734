# SPDX-License-Identifier: Apache-2.0
"""Supervision: restart, resume, stop, suspend/reinstate, escalate, restart limits."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tests.actor.actor_support import new_system

from tocsin import (
    Actor,
    ActorReinstated,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    ActorSuspended,
    ActorSuspendedError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    Directive,
    ReceiveContext,
    Supervisor,
)


class Boom(Exception):
    pass


class Counter(Actor):
    """Counts messages on ``self``; raises on ``"fail"``; answers ``"count"``."""

    instances: list[Counter]

    def __init__(self, instances: list[Counter] | None = None) -> None:
        self.count = 0
        if instances is not None:
            instances.append(self)

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "fail":
            raise Boom("receive failed")
        if ctx.message == "count":
            ctx.respond(self.count)
            return
        self.count += 1


# -- restart -----------------------------------------------------------------------------


async def test_restart_is_the_default_and_builds_a_fresh_instance_from_the_factory() -> None:
    instances: list[Counter] = []
    system, _clock = new_system()
    async with system:
        restarted: list[ActorRestarted] = []
        system.events.subscribe(restarted.append, ActorRestarted)
        pid = await system.spawn(lambda: Counter(instances), "c")
        pid.tell("x")
        pid.tell("x")
        assert await pid.ask("count") == 2
        with pytest.raises(Boom):
            await pid.ask("fail")
        assert await pid.ask("count") == 0  # state on `self` started over
        assert len(instances) == 2
        assert [(e.pid, type(e.error)) for e in restarted] == [(pid, Boom)]
        # A restart is not a stop.
        assert system.events.count(ActorStopped) == 0
        assert await system.actor_of("c") == pid


async def test_restart_keeps_the_mailbox_and_drops_the_failing_message() -> None:
    log: list[Any] = []

    class Logger(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "fail":
                raise Boom()
            log.append(ctx.message)

    system, clock = new_system()
    async with system:
        pid = await system.spawn(Logger)
        for message in ["a", "fail", "b", "c"]:
            pid.tell(message)
        await clock.advance(0)
        assert log == ["a", "b", "c"]
        assert system.dead_letters == 0
        assert system.events.count(ActorRestarted) == 1


async def test_restart_runs_post_stop_on_the_old_instance_and_pre_start_on_the_new() -> None:
    calls: list[tuple[str, int]] = []
    ids = iter(range(100))

    class Tracked(Actor):
        def __init__(self) -> None:
            self.id = next(ids)

        async def pre_start(self, ctx: ReceiveContext) -> None:
            calls.append(("pre_start", self.id))

        async def receive(self, ctx: ReceiveContext) -> None:
            raise Boom()

        async def post_stop(self, ctx: ReceiveContext) -> None:
            calls.append(("post_stop", self.id))

    system, clock = new_system()
    async with system:
        pid = await system.spawn(Tracked)
        pid.tell("fail")
        await clock.advance(0)
        assert calls == [("pre_start", 0), ("post_stop", 0), ("pre_start", 1)]


async def test_crash_loop_past_the_restart_limit_stops_the_actor() -> None:
    instances: list[Counter] = []
    system, clock = new_system()
    async with system:
        pid = await system.spawn(
            lambda: Counter(instances),
            "c",
            supervisor=Supervisor(Directive.RESTART, max_restarts=3, within=10),
        )
        for _ in range(5):
            pid.tell("fail")
        await clock.advance(0)
        assert system.events.count(ActorRestarted) == 3
        assert system.events.count(ActorStopped) == 1
        assert len(instances) == 4
        # The fifth "fail" was still queued when the actor stopped: a dead letter.
        assert system.dead_letters == 1
        with pytest.raises(DeadActorError):
            await pid.ask("count")


async def test_restarts_outside_the_window_do_not_count_toward_the_limit() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(
            Counter, supervisor=Supervisor(Directive.RESTART, max_restarts=2, within=10)
        )
        for _ in range(6):
            pid.tell("fail")
            await clock.advance(6)  # at most two failures in any 10 s window
        assert system.events.count(ActorRestarted) == 6
        assert system.events.count(ActorStopped) == 0
        pid.tell("fail")
        pid.tell("fail")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 1


async def test_crash_loop_in_pre_start_after_a_restart_hits_the_limit_and_stops() -> None:
    starts: list[int] = []

    class Fragile(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            starts.append(1)
            if len(starts) > 1:
                raise Boom("pre_start failed")

        async def receive(self, ctx: ReceiveContext) -> None:
            raise Boom("receive failed")

    system, clock = new_system()
    async with system:
        pid = await system.spawn(
            Fragile, supervisor=Supervisor(Directive.RESTART, max_restarts=4, within=60)
        )
        pid.tell("go")
        await clock.advance(0)
        assert len(starts) == 5  # the first start, then four restarts
        assert system.events.count(ActorStopped) == 1
        with pytest.raises(DeadActorError):
            await pid.ask("x")


async def test_exception_in_first_pre_start_is_handled_by_the_supervisor_with_restart() -> None:
    attempts: list[int] = []

    class Flaky(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            attempts.append(1)
            if len(attempts) == 1:
                raise Boom("first start fails")

        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond("up")

    system, _ = new_system()
    async with system:
        pid = await system.spawn(Flaky)
        assert await pid.ask("?") == "up"
        assert len(attempts) == 2
        assert system.events.count(ActorRestarted) == 1
        assert system.events.count(ActorStarted) == 1


async def test_max_restarts_zero_stops_on_the_first_failure() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Counter, supervisor=Supervisor(max_restarts=0))
        pid.tell("fail")
        await clock.advance(0)
        assert system.events.count(ActorRestarted) == 0
        assert system.events.count(ActorStopped) == 1
        assert pid.name.startswith("$")


# -- resume / stop -----------------------------------------------------------------------


async def test_resume_keeps_the_instance_and_its_state() -> None:
    instances: list[Counter] = []
    system, _clock = new_system()
    async with system:
        pid = await system.spawn(lambda: Counter(instances), supervisor=Directive.RESUME)
        pid.tell("x")
        pid.tell("fail")
        pid.tell("x")
        assert await pid.ask("count") == 2
        assert len(instances) == 1
        assert system.events.count(ActorRestarted) == 0


async def test_stop_directive_stops_the_actor_and_dead_letters_the_rest() -> None:
    system, clock = new_system()
    async with system:
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid = await system.spawn(Counter, supervisor=Directive.STOP)
        pid.tell("fail")
        pid.tell("after")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 1
        assert [(d.message, d.reason) for d in letters] == [("after", DeadLetterReason.STOPPED)]


async def test_decider_callable_chooses_per_exception() -> None:
    def decider(error: BaseException) -> Directive:
        return Directive.RESUME if isinstance(error, Boom) else Directive.STOP

    class Mixed(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "boom":
                raise Boom()
            if ctx.message == "key":
                raise KeyError("k")

    system, clock = new_system()
    async with system:
        pid = await system.spawn(Mixed, supervisor=Supervisor(decider))
        pid.tell("boom")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 0
        pid.tell("key")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 1


async def test_a_decider_that_raises_or_returns_garbage_counts_as_stop() -> None:
    def broken(error: BaseException) -> Directive:
        raise RuntimeError("decider bug")

    assert Supervisor(broken).decide(Boom()) is Directive.STOP
    assert Supervisor(lambda e: "resume").decide(Boom()) is Directive.STOP  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"decider": "restart"}, "`decider`"),
        ({"max_restarts": -1}, "`max_restarts`"),
        ({"max_restarts": True}, "`max_restarts`"),
        ({"within": 0}, "`within`"),
        ({"within": float("inf")}, "`within`"),
    ],
)
def test_supervisor_rejects_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises((TypeError, ValueError), match=match):
        Supervisor(**kwargs)


# -- suspend / reinstate -----------------------------------------------------------------


async def test_suspended_actor_dead_letters_messages_with_reason_suspended_until_reinstated() -> (
    None
):
    instances: list[Counter] = []
    system, clock = new_system()
    async with system:
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        suspended: list[ActorSuspended] = []
        system.events.subscribe(suspended.append, ActorSuspended)
        pid = await system.spawn(lambda: Counter(instances), supervisor=Directive.SUSPEND)
        pid.tell("x")
        pid.tell("fail")
        pid.tell("queued")  # in the mailbox when the actor is suspended
        await clock.advance(0)
        assert [type(e.error) for e in suspended] == [Boom]
        pid.tell("while suspended")
        assert [(d.message, d.reason) for d in letters] == [
            ("queued", DeadLetterReason.SUSPENDED),
            ("while suspended", DeadLetterReason.SUSPENDED),
        ]
        assert system.dead_letters == 2

        await system.reinstate(pid)
        assert system.events.count(ActorReinstated) == 1
        pid.tell("x")
        assert await pid.ask("count") == 2  # same instance, state kept
        assert len(instances) == 1


async def test_ask_to_suspended_actor_fails_at_once_with_actor_suspended_error() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Counter, supervisor=Directive.SUSPEND)
        pid.tell("fail")
        await clock.advance(0)
        with pytest.raises(ActorSuspendedError, match="suspended"):
            await pid.ask("count", timeout=60)
        assert isinstance(ActorSuspendedError("x"), DeadActorError)


async def test_reinstate_of_a_running_actor_is_a_no_op() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Counter)
        await system.reinstate(pid)
        assert system.events.count(ActorReinstated) == 0
        assert await pid.ask("count") == 0


async def test_stopping_a_suspended_actor_stops_it() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Counter, supervisor=Directive.SUSPEND)
        pid.tell("fail")
        await clock.advance(0)
        await system.stop_actor(pid)
        assert system.events.count(ActorStopped) == 1
        with pytest.raises(DeadActorError) as info:
            await pid.ask("count")
        assert not isinstance(info.value, ActorSuspendedError)


# -- escalate ----------------------------------------------------------------------------


class Child(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "fail":
            raise Boom("child failed")
        ctx.respond("child ok")


def make_parent(parent_log: list[str]) -> type[Actor]:
    class Parent(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            parent_log.append("parent pre_start")
            await ctx.spawn(Child, "child", supervisor=Directive.ESCALATE)

        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond("parent ok")

        async def post_stop(self, ctx: ReceiveContext) -> None:
            parent_log.append("parent post_stop")

    return Parent


async def test_escalate_restarts_the_parent_which_stops_the_child() -> None:
    log: list[str] = []
    system, clock = new_system()
    async with system:
        stopped: list[str] = []
        system.events.subscribe(lambda e: stopped.append(e.pid.path), ActorStopped)
        parent = await system.spawn(make_parent(log), "parent")
        child = await system.actor_of("/user/parent/child")
        child.tell("fail")
        await clock.advance(0)
        assert stopped == ["/user/parent/child"]
        assert log == ["parent pre_start", "parent post_stop", "parent pre_start"]
        assert system.events.count(ActorRestarted) == 1
        # The parent's fresh pre_start spawned a new child incarnation under the same path.
        new_child = await system.actor_of("/user/parent/child")
        assert new_child != child
        assert await new_child.ask("hi") == "child ok"
        assert await parent.ask("hi") == "parent ok"


async def test_escalate_uses_the_parents_supervisor_stop() -> None:
    log: list[str] = []
    system, clock = new_system()
    async with system:
        parent = await system.spawn(make_parent(log), "parent", supervisor=Directive.STOP)
        child = await system.actor_of("/user/parent/child")
        child.tell("fail")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 2
        with pytest.raises(DeadActorError):
            await parent.ask("hi")
        with pytest.raises(DeadActorError):
            await child.ask("hi")


async def test_escalate_with_parent_resume_keeps_both_running() -> None:
    log: list[str] = []
    system, clock = new_system()
    async with system:
        parent = await system.spawn(make_parent(log), "parent", supervisor=Directive.RESUME)
        child = await system.actor_of("/user/parent/child")
        child.tell("fail")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 0
        assert await child.ask("hi") == "child ok"
        assert await parent.ask("hi") == "parent ok"


async def test_escalate_from_a_top_level_actor_stops_it() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Child, "top", supervisor=Directive.ESCALATE)
        pid.tell("fail")
        await clock.advance(0)
        assert system.events.count(ActorStopped) == 1
        assert system.events.count(ActorRestarted) == 0


async def test_a_failure_is_logged_at_debug_and_the_limit_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tocsin.actor")
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Counter, supervisor=Supervisor(max_restarts=0))
        pid.tell("fail")
        await clock.advance(0)
    assert "passed its restart limit" in caplog.text
