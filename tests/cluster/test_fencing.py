# SPDX-License-Identifier: Apache-2.0
"""Fencing: a zombie owner (its lease lost without it noticing, a newer epoch written by
another node) has every durable write refused inside the store's own transaction, on
the memory, SQLite and PostgreSQL stores; its activation stops and nothing changes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.cluster.cluster_support import freeze
from tests.durable.durable_support import postgres_backend, sqlite_backend

from tocsin import ActorSystem, Cluster, ManualClock
from tocsin.durable import Call, DurableActor
from tocsin.errors import FencedError, StoreError
from tocsin.stores import Fence, MemoryStore, PutState, Store

T0 = 1_800_000_000.0
LEASE = 3.0
ERRORS: list[BaseException] = []


class Wallet(DurableActor):
    kind = "fence-test.Wallet"

    async def where(self, payload: Any) -> str:
        return str(self._handle.runtime.name)

    async def put(self, value: str) -> str:
        try:
            await self.storage.put("value", value)
        except StoreError as exc:
            ERRORS.append(exc)
            raise
        return value

    async def read(self, payload: Any) -> Any:
        return await self.storage.get("value")


def zombie(system: ActorSystem) -> None:
    """SIGSTOP then SIGCONT, as the node sees it: renewals stopped and its own expiry
    check never ran, so it still believes it holds its lease (the case fencing is for)."""
    freeze(system.cluster)
    system.cluster.membership._cancel_expiry()


async def _zombie_writes_are_refused(make_store: Callable[[], Store]) -> None:
    ERRORS.clear()
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    a = ActorSystem("a", clock=clock, store=make_store(), cluster=Cluster(url, lease=LEASE))
    b = ActorSystem("b", clock=clock, store=make_store(), cluster=Cluster(url, lease=LEASE))
    await a.start()
    try:
        old = await a.durable(Wallet, "w-1")  # a is the only member: it owns w-1, epoch 1
        assert await old.ask(Call("put", "from-a")) == "from-a"
        # Frozen before b joins, so a never learns of b (on memory:// a join is pushed to
        # the members at once): its activation stays up, believing itself the owner.
        zombie(a)
        await b.start()
        await clock.advance(LEASE + LEASE / 3 + 0.1)  # a's lease expires on the coordinator
        new = await b.durable(Wallet, "w-1")  # b takes over: epoch 2, fence written first
        assert await new.ask(Call("where")) == "b"
        assert await new.ask(Call("put", "from-b")) == "from-b"
        entry = await b.cluster.coordinator.owner(Wallet.kind, "w-1")
        assert entry is not None
        assert entry.epoch == 2
        old.tell(Call("put", "from-zombie"))  # a's activation is still up and tries
        await clock.advance(0.1)
        assert len(ERRORS) == 1
        assert isinstance(ERRORS[0], FencedError)
        assert a.cluster.metrics().fenced_writes == 1
        assert await new.ask(Call("read")) == "from-b"  # the refused batch changed nothing
        handle = a._durable.handles[Wallet.kind, "w-1"]  # type: ignore[union-attr]
        assert handle.cell is None  # the zombie's activation stopped
    finally:
        for system in (b, a):
            await system.stop()


async def test_memory_store_refuses_a_zombies_writes() -> None:
    store = MemoryStore()
    await _zombie_writes_are_refused(lambda: store)


async def test_sqlite_store_refuses_a_zombies_writes(tmp_path: Path) -> None:
    await _zombie_writes_are_refused(sqlite_backend(tmp_path).make)


async def test_postgres_store_refuses_a_zombies_writes(postgres_dsn: str) -> None:
    await _zombie_writes_are_refused(postgres_backend(postgres_dsn).make)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_a_stale_fence_refuses_the_whole_batch(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The fence is the batch's first statement, in the store's own transaction: a stale
    epoch fails the whole batch and nothing it carried is written."""
    if kind == "memory":
        store: Store = MemoryStore()
    elif kind == "sqlite":
        store = sqlite_backend(tmp_path).make()
    else:
        store = postgres_backend(request.getfixturevalue("postgres_dsn")).make()
    await store.open()
    try:
        await store.apply([Fence("K", "i", 1), PutState("K", "i", "k", b"1")])
        await store.apply([Fence("K", "i", 2)])  # a new owner's fence, alone
        with pytest.raises(FencedError):
            await store.apply([Fence("K", "i", 1), PutState("K", "i", "k", b"zombie")])
        assert await store.get_state("K", "i", "k") == b"1"
        await store.apply([Fence("K", "i", 2), PutState("K", "i", "k", b"2")])
        assert await store.get_state("K", "i", "k") == b"2"
        with pytest.raises(StoreError, match=r"epoch must be an int"):
            await store.apply([Fence("K", "i", 0)])
    finally:
        await store.close()
