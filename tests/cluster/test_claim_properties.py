# SPDX-License-Identifier: Apache-2.0
"""Property: the memory and SQLite coordinators claim ticks exactly as a plain model does.

The model is the rule of docs/cluster.md in ten lines. Hypothesis drives random sequences
of time passing, claims (early, on time, late; several nodes; two TTLs) and pauses.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import cluster_steps

from tocsin.clock import ManualClock
from tocsin.cluster._memory import MemoryCoordinator
from tocsin.cluster._protocol import ClaimOutcome, TickClaim
from tocsin.cluster._sqlite import SQLiteCoordinator

START = 1_800_000_000.0


class Model:
    def __init__(self) -> None:
        self.now = START
        self.claims: dict[str, float] = {}
        self.paused: set[str] = set()
        self.fences: dict[str, int] = {}

    def claim(self, key: str, reference: str, fire: float, ttl: float) -> TickClaim:
        if reference in self.paused:
            return TickClaim(ClaimOutcome.PAUSED)
        if self.now - fire > ttl:
            return TickClaim(ClaimOutcome.LATE)
        if self.claims.get(key, -1.0) > self.now:
            return TickClaim(ClaimOutcome.LOST)
        self.claims[key] = max(self.now, fire) + ttl
        # Every grant of a reference has the next fence, across keys, or the clock in
        # microseconds if larger (so fences grow across a coordinator that lost its data).
        fence = max(self.fences.get(reference, 0) + 1, int(self.now * 1_000_000))
        self.fences[reference] = fence
        return TickClaim(ClaimOutcome.WON, fence)


async def check(coordinator: Any, clock: ManualClock, steps: list[tuple[Any, ...]]) -> None:
    model = Model()
    await coordinator.open()
    try:
        for step in steps:
            if step[0] == "advance":
                await clock.advance(step[1])
                model.now += step[1]
            elif step[0] == "pause":
                await coordinator.set_cron_paused(step[1], step[2])
                (model.paused.add if step[2] else model.paused.discard)(step[1])
            else:
                _, reference, minute, ttl, node = step
                fire = START + 60 * minute
                key = f"{reference}@{fire}"
                got = await coordinator.claim_tick(key, reference, fire, ttl, node)
                assert got == model.claim(key, reference, fire, ttl), step
    finally:
        await coordinator.close()


@settings(max_examples=150, deadline=None)
@given(st.lists(cluster_steps, max_size=40))
async def test_memory_claims_follow_the_model(steps: list[tuple[Any, ...]]) -> None:
    clock = ManualClock(wall=START)
    await check(MemoryCoordinator(clock=clock), clock, steps)


@settings(max_examples=60, deadline=None)
@given(st.lists(cluster_steps, max_size=40))
async def test_sqlite_claims_follow_the_model(steps: list[tuple[Any, ...]]) -> None:
    clock = ManualClock(wall=START)
    with tempfile.TemporaryDirectory() as tmp:
        await check(SQLiteCoordinator(Path(tmp) / "c.db", clock=clock), clock, steps)
