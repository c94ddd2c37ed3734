# SPDX-License-Identifier: Apache-2.0
"""Start-up reads the due window only, however many tasks are pending (#24).

A store holding 100,000 pending tasks (due 1 h … 1 day out) and 50 due within the
look-ahead starts like a store holding only those 50: the one read ``start()`` makes
returns the 50 identities, only those are held in memory, and the database itself reads
about as many rows for that query as it does on the small store (SQLite: virtual-machine
steps of the query, counted by a progress handler; PostgreSQL: the rows its plan read,
from ``EXPLAIN ANALYZE``). Counts, not timings.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tocsin import ActorSystem
from tocsin.durable import DurableActor, encode
from tocsin.stores import Store, TaskRow, UpsertTask
from tocsin.stores import _queries as q

PENDING = 100_000
DUE_SOON = 50
IDENTITIES = 1_000
READS = ("due_actors", "due_tasks", "next_due", "list_tasks", "find_tasks", "get_task")


class Windowed(DurableActor):
    kind = "test-window"

    async def work(self, payload: Any) -> None:
        pass


class Recording:
    """The store, recording each read call made through it and how many rows it gave."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.reads: list[tuple[str, tuple[Any, ...], int]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in READS:
            return attr

        async def read(*args: Any) -> Any:
            result = await attr(*args)
            self.reads.append((name, args, len(result) if isinstance(result, list) else 1))
            return result

        return read


def _rows(far: int, now: float) -> list[TaskRow]:
    def row(identity: str, task_id: str, due: float) -> TaskRow:
        return TaskRow(
            kind=Windowed.kind, identity=identity, id=task_id, name="work", payload=encode(0),
            due=due, every=None, attempts=0, max_retries=5, created_at=now, state="pending",
            last_error=None, timeout=None,
        )  # fmt: skip

    span = 86_400.0 - 3_600.0
    rows = [row(f"a{i % IDENTITIES}", f"t{i}", now + 3_600.0 + span * i / far) for i in range(far)]
    # Due in 200 s: inside the 300 s look-ahead, so start() arms them (none runs here).
    rows += [row(f"soon{k}", "soon", now + 200.0) for k in range(DUE_SOON)]
    return rows


async def _fill(store: Store, rows: list[TaskRow]) -> None:
    await store.open()
    try:
        for start in range(0, len(rows), 10_000):
            await store.apply([UpsertTask(r) for r in rows[start : start + 10_000]])
    finally:
        await store.close()


async def _start(store: Store) -> tuple[list[tuple[str, tuple[Any, ...], int]], int]:
    recording = Recording(store)
    system = ActorSystem("window", store=recording)
    await system.start()
    try:
        runtime = system._durable
        assert runtime is not None
        held = len(runtime.held())
    finally:
        await system.stop()
    return recording.reads, held


def _check_reads(reads: list[tuple[str, tuple[Any, ...], int]], held: int) -> None:
    assert [(name, rows) for name, _, rows in reads] == [("due_actors", DUE_SOON)]
    assert held == DUE_SOON  # the 1,000 identities with far work cost no memory


async def _sqlite_steps(path: Path, before: float) -> int:
    """Virtual-machine steps SQLite takes for the store's own start-up read
    (``due_actors``, on the store's worker connection)."""
    from tocsin.stores.sqlite import SQLiteStore

    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    store = SQLiteStore(path)
    await store.open()
    try:
        await store._call(lambda conn: conn.set_progress_handler(count, 1), write=False)
        assert len(await store.due_actors(before, 10_000)) == DUE_SOON
        await store._call(lambda conn: conn.set_progress_handler(None, 1), write=False)
    finally:
        await store.close()
    return steps


@pytest.mark.slow  # a large table filled first
async def test_sqlite_start_reads_only_the_due_window(tmp_path: Path) -> None:
    from tocsin.stores.sqlite import SQLiteStore

    now = time.time()
    big, small = tmp_path / "big.db", tmp_path / "small.db"
    await _fill(SQLiteStore(big), _rows(PENDING, now))
    await _fill(SQLiteStore(small), _rows(0, now))
    reads, held = await _start(SQLiteStore(big))
    _check_reads(reads, held)
    before = reads[0][1][0]
    big_steps = await _sqlite_steps(big, before)
    small_steps = await _sqlite_steps(small, before)
    # A scan of the 100,000 rows would take several steps per row (>= 100,000 in all).
    assert big_steps < 2 * small_steps + 1_000, (big_steps, small_steps)


async def _postgres_rows_read(dsn: str, schema: str, before: float) -> int:
    """Rows PostgreSQL's plan for the start-up query read from ``tocsin_tasks``."""
    import asyncpg

    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        await conn.execute("ANALYZE tocsin_tasks")  # what autovacuum does to such a table
        plan = await conn.fetchval(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + q.numbered(q.DUE_ACTORS), before, 10_000
        )
    finally:
        await conn.close()
    import json

    def walk(node: dict[str, Any], visit: Callable[[dict[str, Any]], None]) -> None:
        visit(node)
        for child in node.get("Plans", []):
            walk(child, visit)

    read = 0

    def visit(node: dict[str, Any]) -> None:
        nonlocal read
        if node.get("Relation Name") == "tocsin_tasks":
            loops = node.get("Actual Loops", 1)
            read += (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * loops

    walk(json.loads(plan)[0]["Plan"], visit)
    return read


@pytest.mark.integration
@pytest.mark.slow  # a large table filled first
async def test_postgres_start_reads_only_the_due_window(postgres_dsn: str) -> None:
    from tocsin.stores.postgres import PostgresStore

    schema = f"w_{uuid.uuid4().hex[:12]}"
    await _fill(PostgresStore(postgres_dsn, schema=schema), _rows(PENDING, time.time()))
    reads, held = await _start(PostgresStore(postgres_dsn, schema=schema))
    _check_reads(reads, held)
    read = await _postgres_rows_read(postgres_dsn, schema, reads[0][1][0])
    assert read <= 2 * DUE_SOON, read
