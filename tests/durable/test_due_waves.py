# SPDX-License-Identifier: Apache-2.0
"""Identities coming due together are activated in waves, on a ManualClock: at most
``DUE_WAVE`` in flight at once (from the ring to the end of the first drain), the next
admitted as they finish, earliest due first; every one runs, once."""

from __future__ import annotations

from typing import Any

import pytest

from tocsin import ActorSystem, ManualClock
from tocsin.actor import ActorStarted
from tocsin.durable import Call, DurableActor
from tocsin.durable._runtime import DUE_WAVE, DurableRuntime
from tocsin.stores import MemoryStore

T0 = 1_700_000_000.0
RUNS: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Wave(DurableActor):
    kind = "due-waves.Wave"

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "ping")

    def ping(self, _: object) -> None:
        RUNS.append(self.identity)


async def test_identities_coming_due_together_run_in_waves_earliest_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    count = 3 * DUE_WAVE + 17
    inner = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("waves", clock=clock, store=inner) as system:
        # All due at the same time (the ManualClock rings them together); the waiting
        # identities come in the order of (due, kind, identity).
        for i in range(count):
            pid = await system.durable(Wave, f"w{i:04d}", passivate_after=0.5)
            await pid.ask(Call("later", 60))
        await clock.advance(1)
    RUNS.clear()
    rung: list[str] = []
    in_flight: list[int] = []
    ring_due = DurableRuntime.ring_due

    def recorded(self: DurableRuntime, ready: list[tuple[tuple[str, str], float]]) -> None:
        rung.extend(identity for (_, identity), _ in ready)
        ring_due(self, ready)
        in_flight.append(len(self.wave))

    monkeypatch.setattr(DurableRuntime, "ring_due", recorded)
    clock = ManualClock(wall=T0)
    async with ActorSystem("waves", clock=clock, store=inner) as system:
        started: list[Any] = []
        system.events.subscribe(started.append, ActorStarted)
        await clock.advance(62)
        durable = system._durable
        assert durable is not None
        assert sorted(RUNS) == [f"w{i:04d}" for i in range(count)]  # each once
        assert len(started) == count  # one activation per identity
        assert rung == [f"w{i:04d}" for i in range(count)]  # in order, none twice
        assert len(in_flight) > 3  # in waves, not all at once
        assert max(in_flight) == DUE_WAVE
        assert not durable.wave and not durable.soon.waiting
        assert await inner.list_tasks() == []
