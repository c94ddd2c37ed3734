# SPDX-License-Identifier: Apache-2.0
"""Task tables made before durable tasks could be paused (schema version 3: no pause
columns) migrate on open: old rows read as not paused and keep every field, a pause is
stored and kept, and a read-only open of an old file reads it without changing it."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from tocsin.stores import PauseTask, Store, TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore

_V3_TASKS = """
CREATE TABLE tocsin_tasks (
    kind TEXT NOT NULL, identity TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    payload BLOB NOT NULL, due REAL NOT NULL, every REAL, attempts INTEGER NOT NULL,
    max_retries INTEGER NOT NULL, created_at REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'parked')),
    last_error TEXT, timeout REAL, cron TEXT, timezone TEXT, policy BLOB,
    PRIMARY KEY (kind, identity, id)
) WITHOUT ROWID;
CREATE TABLE tocsin_state (
    kind TEXT NOT NULL, identity TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (kind, identity, key)
) WITHOUT ROWID;
PRAGMA user_version = 3;
INSERT INTO tocsin_tasks VALUES
    ('Order', 'o-1', 'tick', 'send', x'c0', 100.0, 60.0, 0, 5, 1.0, 'pending', NULL, NULL,
     NULL, NULL, x'81');
"""

_V3_POSTGRES = """
CREATE SCHEMA {schema};
SET search_path = {schema};
CREATE TABLE tocsin_tasks (
    kind text COLLATE "C" NOT NULL, identity text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL, name text NOT NULL, payload bytea NOT NULL,
    due double precision NOT NULL, every double precision, attempts integer NOT NULL,
    max_retries integer NOT NULL, created_at double precision NOT NULL,
    state text NOT NULL, last_error text, timeout double precision, cron text,
    timezone text, policy bytea, PRIMARY KEY (kind, identity, id)
);
INSERT INTO tocsin_tasks VALUES
    ('Order', 'o-1', 'tick', 'send', '\\xc0', 100.0, 60.0, 0, 5, 1.0, 'pending', NULL,
     NULL, NULL, NULL, '\\x81');
"""

OLD = TaskRow("Order", "o-1", "tick", "send", b"\xc0", 100.0, 60.0, 0, 5, 1.0, policy=b"\x81")


async def _check_migrated(store: Store) -> None:
    await store.open()
    try:
        assert await store.get_task("Order", "o-1", "tick") == OLD  # not paused
        await store.apply([PauseTask("Order", "o-1", "tick", 150.0, "OPS-42", "node-a")])
        await store.apply([UpsertTask(OLD)])  # an upsert keeps the pause
        got = await store.get_task("Order", "o-1", "tick")
        assert got is not None
        assert (got.paused_at, got.pause_note, got.paused_by) == (150.0, "OPS-42", "node-a")
        await store.apply([PauseTask("Order", "o-1", "tick", None)])
        assert await store.get_task("Order", "o-1", "tick") == OLD
    finally:
        await store.close()


def _old_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.executescript(_V3_TASKS)
    conn.close()


async def test_an_sqlite_task_table_without_pause_columns_migrates_on_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v3.db"
    _old_sqlite(path)
    await _check_migrated(SQLiteStore(path))
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(tocsin_tasks)")]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert columns[-3:] == ["paused_at", "pause_note", "paused_by"]
    assert version == 4
    await _check_migrated(SQLiteStore(path))  # a second open changes nothing


async def test_a_read_only_open_of_a_version_3_file_reads_it_as_not_paused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v3.db"
    _old_sqlite(path)
    before = path.read_bytes()
    store = SQLiteStore(path, read_only=True)
    await store.open()
    try:
        assert await store.list_tasks() == [OLD]
    finally:
        await store.close()
    assert path.read_bytes() == before


@pytest.mark.integration
async def test_a_postgres_task_table_without_pause_columns_migrates_on_open(
    postgres_dsn: str,
) -> None:
    import asyncpg

    from tocsin.stores.postgres import PostgresStore

    schema = f"v3_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute(_V3_POSTGRES.format(schema=schema))
    finally:
        await conn.close()
    await _check_migrated(PostgresStore(postgres_dsn, schema=schema))
    await _check_migrated(PostgresStore(postgres_dsn, schema=schema))  # idempotent
