# SPDX-License-Identifier: Apache-2.0
"""A coordinator that lost its data (issue 19, item 1) never wedges a durable identity:
the SQLite coordinator file deleted between runs, Redis flushed mid-run. Durable work
resumes, no update is lost, no ask fails once the nodes are back.

Real coordinators, real sockets and real time (bounded waits); outcomes asserted, never
speed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.integration.redis_server import temporary_server

from tocsin import ActorSystem, Cluster, Remoting, SystemClock
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECRET = b"coordinator-reset-test-secret!!!"
#: Real seconds to wait for an outcome on a busy machine.
WAIT = 60.0
BEATS: dict[str, list[float]] = {}


class Meter(DurableActor):
    kind = "reset-test.Meter"

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total

    async def start_beating(self, interval: float) -> None:
        await self.every(interval, "beat", id="beat")

    async def beat(self, payload: Any) -> None:
        BEATS.setdefault(self.identity, []).append(self._handle.runtime.clock.wall())


def _systems(coordinator: str, store: Any, names: tuple[str, ...]) -> list[ActorSystem]:
    return [
        ActorSystem(
            name,
            clock=SystemClock(),
            store=store,
            remoting=Remoting("tcp://127.0.0.1:0", SECRET),
            cluster=Cluster(coordinator, lease=1.5, poll_interval=0.25),
        )
        for name in names
    ]


async def _settle(systems: list[ActorSystem]) -> None:
    for system in systems:
        await system.cluster.membership.tick()  # every view lists every node


async def _add(system: ActorSystem, identity: str) -> int:
    """One update, retried only while the cluster is still coming back (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while True:
        try:
            pid = await system.durable(Meter, identity)
            return int(await pid.ask(Call("add", 1), timeout=10.0))
        except Exception:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def test_a_deleted_sqlite_coordinator_file_does_not_wedge_durable_identities(
    tmp_path: Path,
) -> None:
    coordinator = tmp_path / "coordinator.db"
    url = f"sqlite:///{coordinator}"
    store_path = tmp_path / "store.db"
    totals: dict[str, int] = {}
    identities = [f"m-{i}" for i in range(6)]
    # Two runs on one coordinator: every restarted node is a new incarnation, so the
    # second run's owners fence epoch 2 in the store.
    for _run in range(2):
        systems = _systems(url, f"sqlite:///{store_path}", ("a", "b"))
        try:
            for system in systems:
                await system.start()
            await _settle(systems)
            for i, identity in enumerate(identities):
                totals[identity] = await _add(systems[i % 2], identity)
        finally:
            for system in systems:
                await system.stop()
    assert totals == dict.fromkeys(identities, 2)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{coordinator}{suffix}").unlink(missing_ok=True)  # the operator's `rm`
    systems = _systems(url, f"sqlite:///{store_path}", ("a", "b"))
    try:
        for system in systems:
            await system.start()
        await _settle(systems)
        for i, identity in enumerate(identities):
            pid = await systems[i % 2].durable(Meter, identity)
            # No retry: a wedged identity fails here at once (DeadActorError).
            assert await pid.ask(Call("add", 1), timeout=10.0) == 3
        entry = await systems[0].cluster.coordinator.owner(Meter.kind, identities[0])
        assert entry is not None
        assert entry.epoch >= 3  # above the store's fence of the previous run
    finally:
        for system in systems:
            await system.stop()


@pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("TOCSIN_REQUIRE_REDIS") != "1",
    reason="redis-server not installed",
)
async def test_redis_flushed_mid_run_resumes_durable_work_without_lost_updates() -> None:
    import redis.asyncio as aioredis

    BEATS.clear()
    identities = [f"r-{i}" for i in range(4)]
    with temporary_server() as server:
        url = f"{server}?prefix=reset{uuid.uuid4().hex[:8]}:"
        systems = _systems(url, MemoryStore(), ("a", "b", "c"))
        try:
            for system in systems:
                await system.start()
            await _settle(systems)
            done = dict.fromkeys(identities, 0)
            for i, identity in enumerate(identities):
                pid = await systems[i % 3].durable(Meter, identity)
                await pid.ask(Call("start_beating", 0.3), timeout=10.0)
                done[identity] = await _add(systems[i % 3], identity)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT
            while not all(len(BEATS.get(i, ())) >= 2 for i in identities):
                assert loop.time() < deadline, BEATS
                await asyncio.sleep(0.1)
            client = aioredis.Redis.from_url(server)
            try:
                await client.flushall()  # the coordinator loses everything
            finally:
                await client.aclose()
            flushed = SystemClock().wall()
            # Every identity beats again (its `every` was not stopped for good)...
            while not all(any(t > flushed + 0.5 for t in BEATS.get(i, ())) for i in identities):
                assert loop.time() < deadline, {i: BEATS.get(i, [])[-3:] for i in identities}
                await asyncio.sleep(0.1)
            # ...and every update lands once, from any node.
            for round_ in range(3):
                for i, identity in enumerate(identities):
                    total = await _add(systems[(i + round_) % 3], identity)
                    done[identity] += 1
                    assert total == done[identity]
            for system in systems:
                assert sorted(m.name for m in system.cluster.members()) == ["a", "b", "c"]
        finally:
            for system in systems:
                await system.stop()
