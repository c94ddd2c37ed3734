# SPDX-License-Identifier: Apache-2.0
"""The output gate (``tocsin.durable._gate``): task changes made in a turn commit with
the next group commit, and the reply to the ask waits for them.

What these tests pin down: a ``schedule`` call returns before its commit (the apply is
still held when it returns); the reply is not delivered until that commit is done; a
change whose commit fails fails the ask instead of acknowledging it; reads and writes
later in the turn see the change and commit after it; changes of many identities made
in one turn of the loop share one ``apply``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.durable.durable_support import Backend
from tests.eventually import eventually, settled

from tocsin import ActorSystem, ManualClock, StoreError
from tocsin.durable import Call, DurableActor
from tocsin.stores import Op, PutState, Store, UpsertTask

T0 = 1_700_000_000.0
#: What the actor saw during its turn, by label.
SEEN: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()


class Holding:
    """A store that forwards every call, records each ``apply``'s ops and, while
    ``hold`` is set, keeps applies of task upserts waiting until it is cleared (or
    fails them with ``fail``)."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.applies: list[list[Op]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.entered = 0
        self.fail: Exception | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def apply(self, ops: Sequence[Op]) -> None:
        batch = list(ops)
        if any(isinstance(op, UpsertTask) for op in batch):
            self.entered += 1
            await self.release.wait()
            if self.fail is not None:
                raise self.fail
        self.applies.append(batch)
        await self._inner.apply(batch)


class Registrar(DurableActor):
    kind = "gate-registrar"

    async def work(self, payload: Any) -> None:
        SEEN.setdefault("ran", []).append(payload)

    async def register(self, count: int) -> int:
        store: Holding = self._handle.store  # type: ignore[assignment]
        for k in range(count):
            await self.schedule(60, "work", k)
        # Returned without waiting: the commit has not happened yet.
        SEEN.setdefault("applied_at_return", []).append(len(store.applies))
        return count

    async def register_by_id(self, count: int) -> int:
        store: Holding = self._handle.store  # type: ignore[assignment]
        for k in range(count):
            await self.every(60, "work", k, id=f"e{k}")
            await self.every(60, "work", k, id=f"e{k}")  # identical: kept, not replaced
        SEEN.setdefault("applied_at_return", []).append(len(store.applies))
        return count

    async def register_then_list(self, _: Any) -> list[str]:
        await self.schedule(60, "work", "a", id="a")
        await self.schedule(90, "work", "b", id="a")  # an upsert: reads the first one
        return [(r.id, r.payload, r.due.timestamp() - T0) for r in await self.list_schedules()]  # type: ignore[misc]

    async def register_then_put(self, _: Any) -> None:
        await self.schedule(60, "work", "p", id="p")
        await self.storage.put("after", True)

    async def register_in_transaction(self, _: Any) -> int:
        store: Holding = self._handle.store  # type: ignore[assignment]
        async with self.transaction():
            await self.schedule(60, "work", "t", id="t")
        return len(store.applies)


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, Holding]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem("gate", clock=clock, store=backend.make()) as system:
        durable = system._durable
        assert durable is not None
        holding: list[Holding] = []

        def wrap(inner: Store) -> Store:
            holding.append(Holding(inner))
            return holding[0]

        durable.wrap_store(wrap)
        yield system, holding[0]


async def _stored(system: ActorSystem) -> list[str]:
    durable = system._durable
    assert durable is not None
    return sorted(r.id for r in await durable.store.list_tasks(Registrar.kind))


async def _held(system: ActorSystem, store: Holding, method: str) -> Any:
    """Ask ``method`` with the store's commits held: the turn returns without waiting
    for its commit, and the reply waits for it; the answer once released."""
    pid = await system.durable(Registrar, "r1")
    store.release.clear()
    reply = asyncio.ensure_future(pid.ask(Call(method, 3)))
    await eventually(lambda: "applied_at_return" in SEEN, "the turn returned")
    assert SEEN["applied_at_return"] == [0]  # the calls did not wait for a commit
    await eventually(lambda: store.entered, "the commit began")
    await settled()
    assert not reply.done()  # held by the gate
    store.release.set()
    return await asyncio.wait_for(reply, 5)


async def test_the_reply_waits_for_the_commit_the_call_does_not(backend: Backend) -> None:
    async with running(backend) as (system, store):
        assert await _held(system, store, "register") == 3
        assert store.entered == 1  # the three changes: one commit
        assert len(await _stored(system)) == 3


async def test_upserts_by_id_in_one_turn_do_not_wait_for_each_other(backend: Backend) -> None:
    async with running(backend) as (system, store):
        assert await _held(system, store, "register_by_id") == 3
        upserts = [op for b in store.applies for op in b if isinstance(op, UpsertTask)]
        assert len(upserts) == 3  # the identical second registrations wrote nothing
        assert await _stored(system) == ["e0", "e1", "e2"]


async def test_a_change_whose_commit_fails_fails_the_ask(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(backend) as (system, store):
        pid = await system.durable(Registrar, "r1")
        store.fail = StoreError("disk full (test)")
        with (
            caplog.at_level(logging.ERROR, "tocsin.durable"),
            pytest.raises(StoreError, match="disk full"),
        ):
            await asyncio.wait_for(pid.ask(Call("register", 2)), 5)
        assert await _stored(system) == []
        assert "a task change was not committed" in caplog.text
        # The failure was reported once: the next ask is answered normally.
        store.fail = None
        assert await asyncio.wait_for(pid.ask(Call("register", 1)), 5) == 1
        assert len(await _stored(system)) == 1


async def test_a_read_later_in_the_turn_sees_the_change(backend: Backend) -> None:
    async with running(backend) as (system, _store):
        pid = await system.durable(Registrar, "r1")
        assert await pid.ask(Call("register_then_list")) == [("a", "b", 90.0)]


async def test_a_later_write_of_the_turn_commits_after_the_change(backend: Backend) -> None:
    async with running(backend) as (system, store):
        pid = await system.durable(Registrar, "r1")
        await pid.ask(Call("register_then_put"))
        kinds = [type(op) for batch in store.applies for op in batch]
        assert kinds.index(UpsertTask) < kinds.index(PutState)


async def test_a_transaction_still_commits_at_its_exit(backend: Backend) -> None:
    async with running(backend) as (system, _store):
        pid = await system.durable(Registrar, "r1")
        assert await pid.ask(Call("register_in_transaction")) == 1


async def test_the_changes_of_many_identities_share_one_apply(backend: Backend) -> None:
    async with running(backend) as (system, store):
        pids = [await system.durable(Registrar, f"r{i}") for i in range(20)]
        await asyncio.gather(*(pid.ask(Call("register", 2)) for pid in pids))
        upserts = [b for b in store.applies if any(isinstance(op, UpsertTask) for op in b)]
        assert sum(len(b) for b in upserts) == 40
        assert len(upserts) < 20  # one apply per identity (or per call) would be >= 20
        assert len(await _stored(system)) == 40


class Leaver(DurableActor):
    kind = "gate-leaver"

    async def work(self, payload: Any) -> None:
        pass

    async def post_stop(self, ctx: Any) -> None:
        await self.schedule(60, "work", "bye", id="bye")


async def test_a_change_made_while_stopping_is_committed_before_the_store_closes(
    persistent_backend: Backend,
) -> None:
    async with running(persistent_backend) as (system, store):
        pid = await system.durable(Leaver, "l1")
        await pid.ask(Call("work"))
        store.release.clear()

        async def release_once_stuck() -> None:
            # The stop's post_stop made the change; its commit is held here until the
            # loop has nothing else to do (the stop waits for it, or closed the store).
            await eventually(lambda: store.entered, "the commit began")
            await settled()
            store.release.set()

        releasing = asyncio.ensure_future(release_once_stuck())
    await asyncio.wait_for(releasing, 30)
    clock = ManualClock(wall=T0)
    async with ActorSystem("gate", clock=clock, store=persistent_backend.make()) as system:
        durable = system._durable
        assert durable is not None
        assert [r.id for r in await durable.store.list_tasks(Leaver.kind)] == ["bye"]
