# SPDX-License-Identifier: Apache-2.0
"""FenceGuard: each instant handled once under at-least-once delivery, zombies refused,
the record committed with the effects (issue 31, item 9)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tocsin import ActorSystem, FenceGuard, ManualClock, Tick
from tocsin.cluster._memory import MemoryCoordinator
from tocsin.durable import Call, DurableActor

T = datetime(2026, 1, 1, 9, tzinfo=UTC)


class DictStorage:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    async def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    async def put(self, key: str, value: Any) -> None:
        self.data[key] = value


async def test_the_first_delivery_of_an_instant_passes_and_a_repeat_does_not() -> None:
    guard = FenceGuard(DictStorage())
    assert await guard.first_time(Tick("daily", T, fence=3))
    assert not await guard.first_time(Tick("daily", T, fence=3))
    assert not await guard.first_time(Tick("daily", T, fence=4))  # re-claimed: ran already
    assert not await guard.first_time(Tick("daily", T - timedelta(days=1), fence=5))
    assert await guard.first_time(Tick("daily", T + timedelta(days=1), fence=5))
    assert await guard.first_time(Tick("other", T))  # one record per reference


async def test_a_zombie_with_a_smaller_fence_is_refused_even_for_a_new_instant() -> None:
    guard = FenceGuard(DictStorage())
    assert await guard.first_time(Tick("r", T, fence=7))
    assert not await guard.first_time(Tick("r", T + timedelta(hours=1), fence=6))
    assert await guard.first_time(Tick("r", T + timedelta(hours=1), fence=7))
    assert await guard.first_time(Tick("r", T + timedelta(hours=2)))  # no fence: one node
    assert not await guard.first_time(Tick("r", T + timedelta(hours=3), fence=6))


async def test_a_missing_tick_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"ctx\.tick"):
        await FenceGuard(DictStorage()).first_time(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`prefix`"):
        FenceGuard(DictStorage(), prefix=1)  # type: ignore[arg-type]


FAIL = {"once": True}
DONE: list[datetime] = []


class Report(DurableActor):
    kind = "FenceGuardReport"

    async def start(self, payload: Any) -> None:
        await self.every(60, "send", id="report")

    async def send(self, payload: Any) -> None:
        tick = self.current_task
        assert tick is not None
        async with self.transaction():
            if not await FenceGuard(self.storage).first_time(tick):
                return
            await self.storage.put("sent", tick.instant)
            if FAIL["once"]:
                FAIL["once"] = False
                raise RuntimeError("mail server down")  # rolls the record back too
        DONE.append(tick.instant)


async def test_in_a_transaction_a_failed_run_records_nothing_so_its_retry_runs() -> None:
    clock = ManualClock(wall=T.timestamp())
    async with ActorSystem(clock=clock, store="memory://") as system:
        pid = await system.durable(Report, "r")
        await pid.ask(Call("start"))
        await clock.advance(60)  # the first run fails, the retry about a second later
        await clock.advance(5)
    assert DONE == [T + timedelta(seconds=60)]  # noqa: SIM300


async def test_the_instants_after_a_coordinator_lost_its_data_still_pass_the_guard() -> None:
    # Fences counted from 1 again after a reset made every later instant look like a
    # zombie's (a smaller fence) to the guard, so an at-least-once reference stopped
    # running. Fences keep growing across the loss: repeats are refused, news pass.
    clock = ManualClock(wall=T.timestamp())
    name = f"fence-guard-reset-{uuid.uuid4().hex}"
    guard = FenceGuard(DictStorage())

    async def deliver(coordinator: MemoryCoordinator, second: int) -> bool:
        at = T.timestamp() + second
        claim = await coordinator.claim_tick(f"r@{at}", "r", at, 60.0, "n", lease=5.0)
        assert claim.fence > 0
        return await guard.first_time(Tick("r", T + timedelta(seconds=second), fence=claim.fence))

    coordinator = MemoryCoordinator(name, clock=clock)
    await coordinator.open()
    assert [await deliver(coordinator, s) for s in range(3)] == [True, True, True]
    await coordinator.close()  # its last user: the state is gone, as in a reset
    await clock.advance(1.0)
    coordinator = MemoryCoordinator(name, clock=clock)
    await coordinator.open()
    try:
        assert not await deliver(coordinator, 2)  # re-claimed after the loss: a repeat
        assert await deliver(coordinator, 3)  # the next instant runs
        assert await deliver(coordinator, 4)
    finally:
        await coordinator.close()
