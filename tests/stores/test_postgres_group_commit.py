# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL store's group commit (#24): batches that arrive while a write is in
flight are committed together, yet each batch stays atomic and fails only for itself."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import msgspec
import pytest

from tocsin.errors import FencedError
from tocsin.stores import DeleteTask, Fence, Op, TaskRow, UpsertTask
from tocsin.stores.postgres import PostgresStore

pytestmark = pytest.mark.integration


def _row(identity: str, task_id: str = "t") -> TaskRow:
    return TaskRow(
        kind="K", identity=identity, id=task_id, name="n", payload=b"\x01", due=1.0,
        every=None, attempts=0, max_retries=5, created_at=1.0, state="pending",
        last_error=None, timeout=None,
    )  # fmt: skip


async def test_concurrent_batches_share_transactions_and_all_land(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn, schema=f"g_{uuid.uuid4().hex[:12]}")
    await store.open()
    try:
        before = store.commits
        await asyncio.gather(*(store.apply([UpsertTask(_row(f"i{k}"))]) for k in range(50)))
        commits = store.commits - before
        assert len(await store.list_tasks(kind="K")) == 50
        # The first goes alone; the 49 that came while it was in flight go together.
        assert commits < 50, commits
    finally:
        await store.close()


async def test_a_fenced_batch_in_a_group_fails_alone(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn, schema=f"g_{uuid.uuid4().hex[:12]}")
    await store.open()
    try:
        await store.apply([Fence("K", "zombie", 5)])
        before = store.commits

        async def good(k: int) -> None:
            await store.apply([Fence("K", f"i{k}", 1), UpsertTask(_row(f"i{k}"))])

        async def zombie() -> None:
            await store.apply([Fence("K", "zombie", 3), UpsertTask(_row("zombie"))])

        outcomes = await asyncio.gather(
            *(good(k) for k in range(10)), zombie(), *(good(k) for k in range(10, 20)),
            return_exceptions=True,
        )  # fmt: skip
        assert isinstance(outcomes[10], FencedError)
        assert [o for i, o in enumerate(outcomes) if i != 10] == [None] * 20
        assert sorted(r.identity for r in await store.list_tasks(kind="K")) == sorted(
            f"i{k}" for k in range(20)
        )  # every good batch landed, the zombie's upsert did not
        assert store.commits - before < 21  # they did go in groups
    finally:
        await store.close()


class _CountingConnection:
    """A connection of the store's pool, counting the statements sent on it."""

    def __init__(self, conn: Any, calls: list[str]) -> None:
        self.conn = conn
        self.calls = calls

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("execute")
        return await self.conn.execute(*args, **kwargs)

    async def executemany(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("executemany")
        return await self.conn.executemany(*args, **kwargs)

    def transaction(self) -> Any:
        self.calls.append("transaction")  # BEGIN ... COMMIT around what follows
        return self.conn.transaction()

    def is_closed(self) -> bool:
        return bool(self.conn.is_closed())


class _CountingPool:
    """The store's pool, counting the calls that each cost a round trip or more, on it
    and on the connections taken from it (writes go through one held connection)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.calls: list[str] = []

    async def execute(self, *args: Any) -> Any:
        self.calls.append("execute")
        return await self.pool.execute(*args)

    async def executemany(self, *args: Any) -> Any:
        self.calls.append("executemany")
        return await self.pool.executemany(*args)

    async def fetch(self, *args: Any) -> Any:  # reads: not counted
        return await self.pool.fetch(*args)

    async def acquire(self) -> _CountingConnection:
        return _CountingConnection(await self.pool.acquire(), self.calls)

    async def release(self, conn: _CountingConnection) -> None:
        await self.pool.release(conn.conn)


def _counting(store: PostgresStore) -> _CountingPool:
    """Count from here on; the write connection held so far goes back first."""
    store._give_back_writer()
    counting = _CountingPool(store._pool)
    store._pool = counting
    return counting


async def _uncount(store: PostgresStore, counting: _CountingPool) -> None:
    store._give_back_writer()
    if store._releaser is not None:
        await store._releaser
    store._pool = counting.pool


async def test_a_fenced_write_is_one_statement_and_a_zombie_writes_nothing(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, schema=f"g_{uuid.uuid4().hex[:12]}")
    await store.open()
    counting = _counting(store)
    try:
        await store.apply([Fence("K", "a", 7, "n1"), UpsertTask(_row("a"))])
        await store.apply(
            [Fence("K", "a", 7, "n1"), *(UpsertTask(_row("a", f"t{k}")) for k in range(3))]
        )
        # The fence rides the write's own statement: one call each, no transaction.
        assert counting.calls == ["execute", "executemany"]
        assert await store.fence_epoch("K", "a") == 7
        assert len(await store.list_tasks(kind="K")) == 4
        batches: list[list[Op]] = [
            [Fence("K", "a", 6, "n0"), UpsertTask(_row("a", "z"))],  # an older epoch
            [Fence("K", "a", 7, "n0"), *(UpsertTask(_row("a", f"z{k}")) for k in range(3))],
        ]  # the same epoch under another owner
        for batch in batches:
            with pytest.raises(FencedError):
                await store.apply(batch)
        assert sorted(r.id for r in await store.list_tasks(kind="K")) == ["t", "t0", "t1", "t2"]
        assert await store.fence_epoch("K", "a") == 7
        # A batch of several kinds of op is one transaction, its fence folded still.
        counting.calls.clear()
        await store.apply(
            [Fence("K", "b", 1, "n1"), UpsertTask(_row("b")), DeleteTask("K", "a", "t")]
        )
        # BEGIN, its runs (the fence folded into the first), COMMIT
        assert counting.calls == ["transaction", "execute", "execute"]
        assert await store.fence_epoch("K", "b") == 1
        assert sorted(r.id for r in await store.list_tasks(kind="K")) == ["t", "t0", "t1", "t2"]
    finally:
        await _uncount(store, counting)
        await store.close()


async def test_merged_fenced_batches_are_one_statement_each_fenced_alone(
    postgres_dsn: str,
) -> None:
    """Group commit merges many identities' ``[Fence, op]`` batches into one run: each
    row carries its own batch's fence, and a zombie among them still fails alone."""
    store = PostgresStore(postgres_dsn, schema=f"g_{uuid.uuid4().hex[:12]}")
    await store.open()
    await store.apply([Fence("K", "zombie", 5)])
    counting = _counting(store)
    try:
        outcomes = await asyncio.gather(
            *(
                store.apply([Fence("K", f"i{k}", 1), UpsertTask(_row(f"i{k}"))])
                if k != 5
                else store.apply([Fence("K", "zombie", 3), UpsertTask(_row("zombie"))])
                for k in range(12)
            ),
            return_exceptions=True,
        )
        assert isinstance(outcomes[5], FencedError)
        assert [o for k, o in enumerate(outcomes) if k != 5] == [None] * 11
        assert "transaction" not in counting.calls  # one run of one kind: no BEGIN/COMMIT
        assert sorted(r.identity for r in await store.list_tasks(kind="K")) == sorted(
            f"i{k}" for k in range(12) if k != 5
        )
        assert [await store.fence_epoch("K", f"i{k}") for k in (0, 11)] == [1, 1]
    finally:
        await _uncount(store, counting)
        await store.close()


async def test_concurrent_due_tasks_reads_are_combined_each_with_its_own_answer(
    postgres_dsn: str,
) -> None:
    """``due_tasks`` calls that arrive while one is in flight go as one query; each gets
    exactly its own rows (its identity, its ``before``, its ``limit``, in order)."""
    store = PostgresStore(postgres_dsn, schema=f"g_{uuid.uuid4().hex[:12]}")
    await store.open()
    try:
        rows = [
            msgspec.structs.replace(_row(f"i{k}", f"t{j}"), due=float(j))
            for k in range(6)
            for j in range(5)
        ]
        await store.apply([UpsertTask(r) for r in rows])
        asks = [("K", f"i{k}", float(k % 5), 1 + k % 3) for k in range(6)]
        asks += [("K", "i0", 10.0, 10), ("K", "nobody", 10.0, 10), ("K", "i1", 10.0, 0)]
        fetches: list[str] = []
        fetch = store._fetch

        async def counting(sql: str, *args: Any) -> list[Any]:
            fetches.append(sql)
            return await fetch(sql, *args)

        store._fetch = counting  # type: ignore[method-assign]
        answers = await asyncio.gather(*(store.due_tasks(*ask) for ask in asks))
        expected = [
            [r for r in rows if r.identity == ident and r.due <= before][:limit]
            for _, ident, before, limit in asks
        ]
        assert [[(r.identity, r.id) for r in a] for a in answers] == [
            [(r.identity, r.id) for r in e] for e in expected
        ]
        assert len(fetches) == 2  # the first alone, the eight that came meanwhile together
    finally:
        await store.close()
