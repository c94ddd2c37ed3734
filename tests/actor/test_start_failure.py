# SPDX-License-Identifier: Apache-2.0
"""A spawn whose actor cannot start raises ActorStartError (issue 10 item 4); restart
backoff; supervised failures are logged at ERROR with the traceback (item 13)."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest

from tocsin import (
    Actor,
    ActorStarted,
    ActorStartError,
    ActorStopped,
    ActorSystem,
    Directive,
    InvalidIntervalError,
    ManualClock,
    ReceiveContext,
    Supervisor,
)

ATTEMPTS: list[float] = []


class NeverStarts(Actor):
    async def pre_start(self, ctx: ReceiveContext) -> None:
        ATTEMPTS.append(0.0)
        raise ConnectionError("database down")

    async def receive(self, ctx: ReceiveContext) -> None:
        pass


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


@pytest.fixture(autouse=True)
def _clear() -> None:
    ATTEMPTS.clear()


def _system() -> tuple[ActorSystem, ManualClock]:
    clock = ManualClock(wall=0)
    return ActorSystem("test", clock=clock), clock


async def test_spawn_raises_actor_start_error_with_the_cause_and_frees_the_name() -> None:
    system, _ = _system()
    async with system:
        with pytest.raises(ActorStartError, match="/user/db") as info:
            await system.spawn(NeverStarts, "db", supervisor=Supervisor(max_restarts=3))
        assert isinstance(info.value.__cause__, ConnectionError)
        assert len(ATTEMPTS) == 4  # the first start and 3 restarts
        assert system.events.count(ActorStarted) == 0
        assert system.events.count(ActorStopped) == 1
        pid = await system.spawn(Echo, "db")  # the name is free again
        assert await pid.ask("ok") == "ok"


async def test_a_child_that_cannot_start_raises_in_the_parents_spawn() -> None:
    class Parent(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            try:
                await ctx.spawn(NeverStarts, "child", supervisor=Directive.STOP)
            except ActorStartError as exc:
                ctx.respond(type(exc.__cause__).__name__)

    system, _ = _system()
    async with system:
        parent = await system.spawn(Parent, "parent")
        assert await parent.ask("spawn") == "ConnectionError"


async def test_a_restart_that_succeeds_brings_the_actor_up_and_spawn_returns() -> None:
    class Flaky(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            ATTEMPTS.append(0.0)
            if len(ATTEMPTS) < 3:
                raise ConnectionError("not yet")

        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond("up")

    system, _ = _system()
    async with system:
        pid = await system.spawn(Flaky, "flaky")
        assert await pid.ask("?") == "up"


async def test_restart_backoff_grows_exponentially_on_the_clock() -> None:
    class Flaky(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            ATTEMPTS.append(clock.monotonic())
            if len(ATTEMPTS) < 4:
                raise ConnectionError("not yet")

        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond("up")

    system, clock = _system()
    async with system:
        spawning = asyncio.ensure_future(
            system.spawn(Flaky, "flaky", supervisor=Supervisor(backoff=(1, 3)))
        )
        await clock.advance(0)
        assert len(ATTEMPTS) == 1
        await clock.advance(0.99)
        assert len(ATTEMPTS) == 1  # at least min_s before the first restart
        await clock.advance(10)
        pid = await asyncio.wait_for(spawning, 10)
        assert await pid.ask("?") == "up"
        gaps = [b - a for a, b in itertools.pairwise(ATTEMPTS)]
        assert 1.0 <= gaps[0] <= 1.2
        assert 2.0 <= gaps[1] <= 2.4
        assert gaps[2] == pytest.approx(3.0)  # capped at max_s


@pytest.mark.parametrize(
    ("backoff", "error"),
    [((2, 1), InvalidIntervalError), ((0, 1), InvalidIntervalError), ("1-2", TypeError)],
)
def test_a_bad_backoff_is_rejected(backoff: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="backoff"):
        Supervisor(backoff=backoff)  # type: ignore[arg-type]


async def test_a_supervised_failure_is_logged_at_error_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Fails(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            raise KeyError("boom")

    system, clock = _system()
    async with system:
        pid = await system.spawn(Fails, "fails")
        with caplog.at_level(logging.ERROR, "tocsin.actor"):
            pid.tell("x")
            await clock.advance(0)
    records = [r for r in caplog.records if r.name == "tocsin.actor" and "failed" in r.message]
    assert records
    assert records[0].levelno == logging.ERROR
    assert "tocsin://test/user/fails" in records[0].message
    assert "restart" in records[0].message
    assert records[0].exc_info is not None
    assert records[0].exc_info[0] is KeyError
