# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL store's write connection (#24): a burst of writes goes through one
connection taken from the pool once, which goes back when writes stop; reads are never
starved of a connection by it, ``close`` waits for the write on it, and a broken one is
replaced."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from tests.eventually import eventually as _until

from tocsin.stores import TaskRow, UpsertTask
from tocsin.stores.postgres import PostgresStore

pytestmark = pytest.mark.integration


def _row(task_id: str) -> TaskRow:
    return TaskRow(
        kind="K", identity="a", id=task_id, name="n", payload=b"\x01", due=1.0,
        every=None, attempts=0, max_retries=5, created_at=1.0, state="pending",
        last_error=None, timeout=None,
    )  # fmt: skip


class _AcquireCounter:
    """The store's pool, counting ``acquire`` calls (the pool's own, and the store's)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.acquired = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def acquire(self) -> Any:
        self.acquired += 1
        return self.pool.acquire()


def _schema() -> str:
    return f"w_{uuid.uuid4().hex[:12]}"


async def test_a_burst_of_writes_takes_one_connection_and_gives_it_back_when_writes_stop(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, schema=_schema())
    await store.open()
    counter = _AcquireCounter(store._pool)
    store._pool = counter
    try:
        for k in range(100):
            await store.apply([UpsertTask(_row(f"t{k}"))])
        assert counter.acquired == 1  # one connection for the whole burst
        assert store._writer is not None
        await _until(lambda: store._writer is None, "the write connection went back")
        await _until(lambda: store._releaser is not None and store._releaser.done(), "released")
        assert counter.pool.get_idle_size() == counter.pool.get_size()  # nothing held
        await store.apply([UpsertTask(_row("later"))])  # the next burst takes one again
        assert counter.acquired == 2
        assert len(await store.list_tasks(kind="K")) == 101
    finally:
        store._pool = counter.pool
        await store.close()


async def test_with_a_pool_of_one_writes_leave_the_connection_to_reads(
    postgres_dsn: str,
) -> None:
    """``max_size=1``: a held write connection would leave reads none while writes keep
    coming, so writes go through the pool (a read waits for one write at most)."""
    store = PostgresStore(postgres_dsn, schema=_schema(), min_size=1, max_size=1)
    await store.open()
    try:

        async def writes() -> None:
            for k in range(200):
                await store.apply([UpsertTask(_row(f"t{k}"))])

        async def reads() -> int:
            found = 0
            for k in range(50):
                found += await store.get_task("K", "a", f"t{k}") is not None
                await asyncio.sleep(0)
            return found

        async with asyncio.timeout(30):
            _, found = await asyncio.gather(writes(), reads())
        assert 0 <= found <= 50
        assert store._writer is None
        assert len(await store.list_tasks(kind="K")) == 200
    finally:
        await store.close()


async def test_close_waits_for_the_write_in_flight_on_the_write_connection(
    postgres_dsn: str,
) -> None:
    schema = _schema()
    store = PostgresStore(postgres_dsn, schema=schema)
    await store.open()
    await store.apply([UpsertTask(_row("first"))])  # the write connection is held now
    write = asyncio.ensure_future(store.apply([UpsertTask(_row("in-flight"))]))
    await asyncio.sleep(0)  # one step: the write is sent and awaits its answer
    assert store._committing
    async with asyncio.timeout(30):
        await store.close()
    assert write.done()
    await write  # it landed, it was not cut off
    again = PostgresStore(postgres_dsn, schema=schema)
    await again.open()
    try:
        assert {r.id for r in await again.list_tasks(kind="K")} == {"first", "in-flight"}
    finally:
        await again.close()


async def test_a_write_connection_closed_under_the_store_is_replaced(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, schema=_schema())
    await store.open()
    try:
        await store.apply([UpsertTask(_row("before"))])
        assert store._writer is not None
        held = store._writer[1]
        held.terminate()  # as when the server ends the session
        await store.apply([UpsertTask(_row("after"))])  # another connection, no error
        assert store._writer is not None
        assert store._writer[1] is not held
        assert {r.id for r in await store.list_tasks(kind="K")} == {"before", "after"}
    finally:
        await store.close()
