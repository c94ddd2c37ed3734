# SPDX-License-Identifier: Apache-2.0
"""Concurrent activation is invisible (issue 19, item 4) on real coordinators: twenty
``system.durable`` + ``ask`` of one identity from three nodes at once, over remoting,
all succeed against one activation.

Real coordinators and sockets, real time (bounded waits); outcomes only.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tocsin import ActorSystem, Cluster, ReceiveContext, Remoting, SystemClock
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECRET = b"concurrent-activation-secret!!!!"
STARTS: Counter[str] = Counter()
ROUNDS = 12


class Job(DurableActor):
    kind = "concurrent-test.Job"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        STARTS[ctx.system.name] += 1

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total


@pytest.fixture(params=["sqlite", "redis"])
def coordinator_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/coordinator.db"
    url: str = request.getfixturevalue("redis_url")
    return f"{url}?prefix=c{uuid.uuid4().hex[:12]}:"


async def test_twenty_concurrent_activations_from_three_nodes_have_no_error(
    coordinator_url: str,
) -> None:
    STARTS.clear()
    store = MemoryStore()
    systems = [
        ActorSystem(
            name,
            clock=SystemClock(),
            store=store,
            remoting=Remoting("tcp://127.0.0.1:0", SECRET),
            cluster=Cluster(coordinator_url, lease=5.0),
        )
        for name in ("a", "b", "c")
    ]
    try:
        for system in systems:
            await system.start()
        # No view refresh: a lists only a, b lists a and b (a node that joined a moment
        # ago is unknown to the older nodes), as in `tocsin run` at start.
        for round_ in range(ROUNDS):
            identity = f"job-{round_}"

            async def one(i: int, identity: str = identity) -> Any:
                pid = await systems[(2 - i) % 3].durable(Job, identity)  # c first
                return await pid.ask(Call("add", 1), timeout=30.0)

            results = await asyncio.gather(*(one(i) for i in range(20)), return_exceptions=True)
            assert [r for r in results if isinstance(r, BaseException)] == []
            answers = [r for r in results if not isinstance(r, BaseException)]
            assert sorted(answers) == list(range(1, 21))
        assert sum(STARTS.values()) == ROUNDS  # one activation per identity
    finally:
        for system in systems:
            await system.stop()
