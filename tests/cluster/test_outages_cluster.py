# SPDX-License-Identifier: Apache-2.0
"""Cluster outages heal by themselves (issue 20, items 1, 3 and 8), on memory:// with one
ManualClock: a node that lost its lease and regains it runs its due work at once; a claim
that fails keeps the alarm; an ask says why it cannot reach its identity; the events
``LeaseLost``/``LeaseRegained`` tell the node's own state."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.cluster.cluster_support import Flaky

from tocsin import (
    ActorSystem,
    Cluster,
    CoordinatorUnavailableError,
    DeadLetter,
    LeaseLost,
    LeaseRegained,
    ManualClock,
    NotOwnerError,
)
from tocsin.cluster._memory import MemoryCoordinator
from tocsin.durable import Call, DurableActor
from tocsin.errors import FencedError
from tocsin.stores import Fence, MemoryStore

T0 = 1_800_000_000.0
LEASE = 3.0
POLL = 0.5
RUNS: list[float] = []  # seconds since T0 of each task run


class Reminder(DurableActor):
    kind = "outage-cluster.Reminder"

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "remind")

    async def remind(self, payload: Any) -> None:
        RUNS.append(self.now().timestamp() - T0)

    async def hello(self, payload: Any) -> str:
        return "hello"


@asynccontextmanager
async def one_node() -> AsyncIterator[tuple[ManualClock, ActorSystem, Flaky, list[object]]]:
    RUNS.clear()
    clock = ManualClock(wall=T0)
    coordinator = Flaky(MemoryCoordinator(f"o{uuid.uuid4().hex}", clock=clock))
    await coordinator.open()
    config = Cluster(coordinator, lease=LEASE, poll_interval=POLL)
    system = ActorSystem("a", clock=clock, store=MemoryStore(), cluster=config)
    events: list[object] = []
    try:
        await system.start()
        system.events.subscribe(events.append, LeaseLost, LeaseRegained, DeadLetter)
        yield clock, system, coordinator, events
    finally:
        if system.running:
            await system.stop()
        await coordinator.close()


async def test_regaining_the_lease_runs_what_became_due_meanwhile() -> None:
    # Issue 20, item 3: the poll made when the lease was lost ran before the node held a
    # lease again, and regaining it triggered none: due work waited for the next periodic
    # poll (150 s).
    async with one_node() as (clock, system, coordinator, events):
        pid = await system.durable(Reminder, "r", passivate_after=1.0)
        await pid.ask(Call("later", 6))
        await clock.advance(1.5)  # passivated: the alarm lives on
        coordinator.fail = {"renew": "before", "leases": "before"}
        await clock.advance(LEASE + 1)  # t = 5.5: not renewed within the lease: lost
        assert [type(e) for e in events] == [LeaseLost]
        assert isinstance(events[0], LeaseLost)
        assert events[0].name == "a"
        await clock.advance(2)  # t = 7.5: due at 6, but no lease: nothing may run
        assert RUNS == []
        coordinator.fail = {}
        back = clock.wall() - T0
        await clock.advance(LEASE / 3 + POLL)  # the next renewal joins again
        assert [type(e) for e in events] == [LeaseLost, LeaseRegained]
        assert len(RUNS) == 1
        assert back < RUNS[0] <= back + LEASE / 3 + POLL


async def test_a_claim_that_fails_keeps_the_alarm_and_the_ask_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with one_node() as (clock, system, coordinator, _events):
        pid = await system.durable(Reminder, "r", passivate_after=1.0)
        await pid.ask(Call("later", 5))
        await clock.advance(1.5)  # passivated
        coordinator.fail = {"owner": "before"}  # the directory cannot be read
        with caplog.at_level(logging.WARNING):
            await clock.advance(4)  # t = 5.5: due; every claim fails
            assert RUNS == []
            with pytest.raises(CoordinatorUnavailableError, match="did not answer"):
                await pid.ask(Call("hello"))  # not "is stopped"
            await clock.advance(3)
        outage = [r for r in caplog.records if "logged once per outage" in r.getMessage()]
        assert len(outage) == 1, [r.getMessage() for r in caplog.records]
        coordinator.fail = {}
        back = clock.wall() - T0
        await clock.advance(POLL)  # the alarm's next retry (at most poll_interval apart)
        assert len(RUNS) == 1
        assert back < RUNS[0] <= back + POLL
        assert await pid.ask(Call("hello")) == "hello"


async def test_an_ask_on_a_node_without_a_lease_raises_not_owner() -> None:
    async with one_node() as (clock, system, coordinator, events):
        pid = await system.durable(Reminder, "r", passivate_after=1.0)
        await clock.advance(1.5)  # passivated
        coordinator.fail = {"renew": "before", "leases": "before"}
        await clock.advance(LEASE + 1)
        with pytest.raises(NotOwnerError, match="holds no cluster lease"):
            await pid.ask(Call("hello"))
        letters = [e for e in events if isinstance(e, DeadLetter)]
        assert [letter.reason.value for letter in letters] == ["unreachable"]
        coordinator.fail = {}
        await clock.advance(LEASE / 3 + POLL)
        assert await pid.ask(Call("hello")) == "hello"


async def test_renewals_that_fail_keep_renewing_and_log_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with one_node() as (clock, system, coordinator, events):
        await clock.advance(LEASE / 3)  # t = 1: renewed, held until t = 4
        coordinator.fail = {"renew": "before", "leases": "before"}
        with caplog.at_level(logging.INFO, logger="tocsin.cluster"):
            await clock.advance(LEASE / 3)  # t = 2: the renewal (and view reads) fail
            coordinator.fail = {}
            await clock.advance(LEASE / 3)  # t = 3: the next one answers: the lease is kept
            await clock.advance(LEASE * 2)
        assert events == []  # never lost
        assert system.cluster._node.membership.holds_lease()
        messages = [r.getMessage() for r in caplog.records]
        assert sum("logged once per outage" in m for m in messages) == 1, messages
        assert sum("answers again" in m for m in messages) == 1
        assert system.cluster.metrics().renew_failures == 1


async def test_system_durable_says_why_it_cannot_place_an_identity() -> None:
    async with one_node() as (clock, system, coordinator, _events):
        coordinator.fail = {"owner": "before", "place": "before", "acquire": "before"}
        with pytest.raises(CoordinatorUnavailableError, match="injected failure"):
            await system.durable(Reminder, "new-one")
        coordinator.fail = {"renew": "before", "leases": "before"}
        await clock.advance(LEASE + 1)  # the lease is lost
        with pytest.raises(NotOwnerError, match="holds no cluster lease"):
            await system.durable(Reminder, "new-one")
        coordinator.fail = {}
        await clock.advance(LEASE / 3 + POLL)  # held again
        pid = await system.durable(Reminder, "new-one")
        assert await pid.ask(Call("hello")) == "hello"


class _FencedStore:
    """The shared store, but every fence is refused (a newer owner holds every identity)."""

    def __init__(self) -> None:
        self.inner = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def apply(self, ops: Any) -> None:
        if ops and isinstance(ops[0], Fence):
            raise FencedError("injected: a newer owner holds it")
        await self.inner.apply(ops)


async def test_an_ask_whose_claim_the_fence_refuses_raises_fenced() -> None:
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    system = ActorSystem("a", clock=clock, store=_FencedStore(), cluster=Cluster(url, lease=LEASE))
    async with system:
        pid = await system.durable(Reminder, "r")
        with pytest.raises(FencedError, match="newer owner"):
            await pid.ask(Call("hello"))


async def test_a_rejoin_that_fails_is_tried_again_at_each_renewal() -> None:
    async with one_node() as (clock, system, coordinator, events):
        pid = await system.durable(Reminder, "r", passivate_after=1.0)
        await pid.ask(Call("later", 8))
        await clock.advance(1.5)
        coordinator.fail = {"renew": "before", "leases": "before"}
        await clock.advance(LEASE + 1)  # lost
        coordinator.fail = {"join": "before"}  # renewals answer "expired"; joins fail
        await clock.advance(LEASE)  # three renewals, three failed joins
        assert [type(e) for e in events] == [LeaseLost]
        assert RUNS == []
        coordinator.fail = {}
        back = clock.wall() - T0
        await clock.advance(LEASE / 3 + POLL)
        assert [type(e) for e in events] == [LeaseLost, LeaseRegained]
        assert len(RUNS) == 1
        assert back < RUNS[0] <= back + LEASE / 3 + POLL
