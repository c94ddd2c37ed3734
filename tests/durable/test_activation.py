# SPDX-License-Identifier: Apache-2.0
"""Durable identities: on-demand activation, one activation per identity, passivation,
reactivation by a message or by the alarm."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, ClassVar

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorPassivated,
    ActorSystem,
    Directive,
    ManualClock,
    ReceiveContext,
    Supervisor,
)
from tocsin.durable import Call, DurableActor

T0 = 1_700_000_000.0
STARTS: Counter[str] = Counter()
STOPS: Counter[str] = Counter()
RUNS: list[tuple[str, float]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    STARTS.clear()
    STOPS.clear()
    RUNS.clear()


class Order(DurableActor):
    async def pre_start(self, ctx: ReceiveContext) -> None:
        STARTS[self.identity] += 1
        for _ in range(5):
            await asyncio.sleep(0)  # a slow start: concurrent lookups must not double it

    async def post_stop(self, ctx: ReceiveContext) -> None:
        STOPS[self.identity] += 1

    async def whoami(self, payload: Any) -> tuple[str, str]:
        return (self.kind, self.identity)

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "remind")

    async def remind(self, payload: Any) -> None:
        RUNS.append((self.identity, self.now().timestamp() - T0))


class Renamed(DurableActor):
    kind = "orders.v2"

    async def whoami(self, payload: Any) -> tuple[str, str]:
        return (self.kind, self.identity)


def new_system(backend: Backend | None = None) -> tuple[ActorSystem, ManualClock]:
    clock = ManualClock(wall=T0)
    store = backend.make() if backend is not None else None
    return ActorSystem("activation", clock=clock, store=store), clock


async def test_durable_returns_a_stable_pid_and_activates_the_identity_once() -> None:
    system, _clock = new_system()
    async with system:
        first = await system.durable(Order, "order-42")
        second = await system.durable(Order, "order-42")
        assert first == second
        assert STARTS == {"order-42": 1}
        assert await first.ask(Call("whoami")) == ("Order", "order-42")


async def test_concurrent_lookups_of_one_identity_activate_it_once() -> None:
    system, _clock = new_system()
    async with system:
        pids = await asyncio.gather(*(system.durable(Order, "o") for _ in range(20)))
        assert len(set(pids)) == 1
        assert STARTS == {"o": 1}


async def test_each_identity_is_its_own_activation() -> None:
    system, _clock = new_system()
    async with system:
        a = await system.durable(Order, "a")
        b = await system.durable(Order, "b")
        assert a != b
        assert STARTS == {"a": 1, "b": 1}
        assert await b.ask(Call("whoami")) == ("Order", "b")


async def test_kind_class_attribute_names_the_actor() -> None:
    system, _clock = new_system()
    async with system:
        pid = await system.durable(Renamed, "x")
        assert await pid.ask(Call("whoami")) == ("orders.v2", "x")
        assert "orders.v2" in pid.path
        assert pid.path.endswith("/x")


def test_kind_with_a_slash_is_refused() -> None:
    with pytest.raises(TypeError, match="kind"):

        class Bad(DurableActor):  # pyright: ignore[reportUnusedClass]
            kind = "a/b"


async def test_idle_actor_is_passivated_and_a_message_reactivates_it() -> None:
    system, clock = new_system()
    async with system:
        passivated: list[Any] = []
        system.events.subscribe(passivated.append, ActorPassivated)
        pid = await system.durable(Order, "o", passivate_after=10)
        await clock.advance(10)
        assert len(passivated) == 1
        assert STOPS == {"o": 1}
        assert await pid.ask(Call("whoami")) == ("Order", "o")  # same pid, new activation
        assert STARTS == {"o": 2}


async def test_messages_told_to_a_passivated_actor_are_all_delivered_in_order() -> None:
    system, clock = new_system()

    class Collect(DurableActor):
        kind = "ActivationCollect"
        seen: ClassVar[list[Any]] = []

        async def receive(self, ctx: ReceiveContext) -> None:
            if isinstance(ctx.message, int):
                self.seen.append(ctx.message)
                return
            await super().receive(ctx)

    async with system:
        pid = await system.durable(Collect, "c", passivate_after=1)
        await clock.advance(2)
        for n in range(10):
            pid.tell(n)
        await clock.advance(0)
        assert Collect.seen == list(range(10))


async def test_passivated_actor_is_reactivated_by_its_alarm_to_run_a_due_task(
    backend: Backend,
) -> None:
    system, clock = new_system(backend)
    async with system:
        pid = await system.durable(Order, "o", passivate_after=5)
        await pid.ask(Call("later", 60))
        await clock.advance(10)
        assert STOPS == {"o": 1}  # passivated; the task waits in the store
        await clock.advance(49.9)
        assert RUNS == []
        await clock.advance(0.1)
        assert RUNS == [("o", 60.0)]
        assert STARTS == {"o": 2}
        await clock.advance(10)
        assert STOPS == {"o": 2}  # idle again after the task: passivated again


async def test_alarm_of_a_passivated_actor_is_not_a_second_activation(backend: Backend) -> None:
    system, clock = new_system(backend)
    async with system:
        pid = await system.durable(Order, "o", passivate_after=5)
        for delay in (20, 20.5, 21):
            await pid.ask(Call("later", delay))
        await clock.advance(30)
        assert len(RUNS) == 3
        assert STARTS == {"o": 2}


async def test_system_stop_stops_active_durable_actors() -> None:
    system, _clock = new_system()
    async with system:
        await system.durable(Order, "a")
        await system.durable(Order, "b")
    assert STOPS == {"a": 1, "b": 1}


async def test_durable_refuses_a_non_durable_class_and_an_empty_identity() -> None:
    system, _clock = new_system()
    async with system:
        with pytest.raises(TypeError):
            await system.durable(object, "x")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            await system.durable(Order, "")


class Fragile(DurableActor):
    supervisor = Supervisor(Directive.SUSPEND)

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "fail":
            raise RuntimeError("fail")
        await super().receive(ctx)

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "remind")

    async def remind(self, payload: Any) -> None:
        RUNS.append((self.identity, self.now().timestamp() - T0))


async def test_task_due_while_suspended_runs_after_reinstate_and_later_alarms_still_ring() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.durable(Fragile, "f")
        await pid.ask(Call("later", 5))
        await pid.ask(Call("later", 20))
        pid.tell("fail")
        await clock.advance(10)  # the alarm rings while suspended: its drain is refused
        assert RUNS == []
        await system.reinstate(pid)
        await clock.advance(0)
        assert RUNS == [("f", 10.0)]
        await clock.advance(10)
        assert RUNS == [("f", 10.0), ("f", 20.0)]
