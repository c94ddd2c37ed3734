# SPDX-License-Identifier: Apache-2.0
"""An identity between runs keeps no run record of its own: it holds the shared, never
written ``IDLE``; each run makes its own, named by ``current_task`` while it runs."""

from __future__ import annotations

from typing import Any

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor
from tocsin.durable._current import IDLE

T0 = 1_700_000_000.0
SEEN: list[Any] = []


class Runs(DurableActor):
    kind = "idle-run-record.Runs"

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "ping")

    def ping(self, _: object) -> None:
        SEEN.append((self._handle.current is not IDLE, self.current_task))


async def test_an_identity_between_runs_holds_the_shared_idle_record() -> None:
    SEEN.clear()
    clock = ManualClock(wall=T0)
    async with ActorSystem("idle-run", clock=clock) as system:
        pid = await system.durable(Runs, "r1")
        task_id = await pid.ask(Call("later", 5))
        durable = system._durable
        assert durable is not None
        handle = durable.handles[(Runs.kind, "r1")]
        assert handle.current is IDLE
        await clock.advance(5)
        assert [(own, tick.reference) for own, tick in SEEN] == [(True, task_id)]
        assert handle.current is IDLE
        assert (IDLE.row, IDLE.id, IDLE.budget) == (None, None, None)
