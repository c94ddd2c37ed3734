# SPDX-License-Identifier: Apache-2.0
"""What a simulated node's faults do to its calls and its timers."""

from __future__ import annotations

import asyncio

import pytest

from tocsin import CoordinatorUnavailableError, ManualClock, StoreError
from tocsin.testing._sim_clock import NodeClock
from tocsin.testing._sim_gates import NodeGate, Outages


def _outages(clock: ManualClock) -> Outages:
    return Outages(clock.sleep, lambda: 1.0)


async def test_a_cut_off_node_cannot_reach_the_coordinator_nor_a_crashed_one_the_store() -> None:
    clock = ManualClock(wall=0)
    outages = _outages(clock)
    gate = NodeGate("n0", outages)
    await gate.coordinator_call("renew")
    await gate.store_call("apply")
    gate.cut_off(True)
    with pytest.raises(CoordinatorUnavailableError, match="'n0' cannot reach the coordinator"):
        await gate.coordinator_call("renew")
    await gate.store_call("apply")  # a partition leaves the store reachable
    gate.cut_off(False)
    gate.crash()
    with pytest.raises(StoreError, match="'n0' cannot reach the store"):
        await gate.store_call("apply")
    gate.revive()
    outages.set(coordinator=True, store=False, latency=0.0)
    with pytest.raises(CoordinatorUnavailableError):
        await gate.coordinator_call("claim_tick")


async def test_a_paused_node_s_calls_wait_for_the_pause_and_a_late_answer_can_be_lost() -> None:
    clock = ManualClock(wall=0)
    outages = _outages(clock)
    gate = NodeGate("n1", outages)
    gate.pause()
    call = asyncio.ensure_future(gate.store_call("apply"))
    await clock.advance(5)
    assert not call.done()
    gate.unpause()
    await clock.advance(0)
    assert call.done()
    assert call.exception() is None
    outages.set(coordinator=False, store=False, latency=2.0)  # each leg takes 2 s here
    answer = asyncio.ensure_future(gate.coordinator_answer("claim_tick"))
    await clock.advance(1)
    gate.crash()  # crashed while the answer travelled: the call took effect, unseen
    await clock.advance(2)
    assert isinstance(answer.exception(), CoordinatorUnavailableError)


async def test_a_paused_node_s_timers_fire_when_it_wakes_and_its_wall_clock_can_be_off() -> None:
    clock = ManualClock(wall=1000.0)
    resume: list[float] = []
    node = NodeClock(clock, lambda: resume[0] if resume else None)
    fired: list[float] = []
    node.call_at(3.0, lambda: fired.append(clock.monotonic()))
    cancelled = node.call_at(4.0, lambda: fired.append(-1.0))
    resume.append(10.0)
    await clock.advance(5)
    cancelled.cancel()
    assert fired == []
    resume.clear()
    await clock.advance(6)
    assert fired == [10.0]
    node.set_offset(30.0)
    assert node.wall() == clock.wall() + 30.0
    assert node.monotonic() == clock.monotonic()
