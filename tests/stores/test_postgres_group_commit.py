# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL store's group commit (#24): batches that arrive while a write is in
flight are committed together, yet each batch stays atomic and fails only for itself."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tocsin.errors import FencedError
from tocsin.stores import Fence, TaskRow, UpsertTask
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
