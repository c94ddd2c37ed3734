# SPDX-License-Identifier: Apache-2.0
"""Schedule ledgers made before manual runs were keyed apart (key ``(id, instant)``, no
``manual`` column) migrate on open: old rows read as regular ticks, a manual run at the
instant of one of them is a row of its own afterwards, and a read-only open of an old
file reads it without changing it."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from tocsin.stores import ScheduleTickRow, Store
from tocsin.stores.sqlite import SQLiteStore

_OLD_LEDGER_SQLITE = """
CREATE TABLE tocsin_schedule_history (
    id TEXT NOT NULL, instant REAL NOT NULL, at REAL NOT NULL, outcome TEXT NOT NULL,
    node TEXT NOT NULL, version INTEGER NOT NULL, detail TEXT, note TEXT, paused_by TEXT,
    started REAL, PRIMARY KEY (id, instant)
) WITHOUT ROWID;
INSERT INTO tocsin_schedule_history VALUES
    ('r', 60.0, 61.0, 'delivered', 'n1', 1, NULL, NULL, NULL, 60.5),
    ('r', 120.0, 121.0, 'paused', 'n1', 1, NULL, 'OPS-42', 'n2', NULL);
"""

_OLD_LEDGER_POSTGRES = """
CREATE SCHEMA {schema};
SET search_path = {schema};
CREATE TABLE tocsin_schedule_history (
    id text COLLATE "C" NOT NULL, instant double precision NOT NULL,
    at double precision NOT NULL, outcome text NOT NULL, node text NOT NULL,
    version bigint NOT NULL, detail text, note text, paused_by text,
    started double precision, PRIMARY KEY (id, instant)
);
INSERT INTO tocsin_schedule_history VALUES
    ('r', 60.0, 61.0, 'delivered', 'n1', 1, NULL, NULL, NULL, 60.5),
    ('r', 120.0, 121.0, 'paused', 'n1', 1, NULL, 'OPS-42', 'n2', NULL);
"""

OLD = [
    ScheduleTickRow("r", 60.0, 61.0, "delivered", "n1", 1, started=60.5),
    ScheduleTickRow("r", 120.0, 121.0, "paused", "n1", 1, note="OPS-42", by="n2"),
]


async def _check_migrated(store: Store) -> None:
    await store.open()
    try:
        assert await store.schedule_ticks("r") == OLD  # type: ignore[attr-defined]
        manual = ScheduleTickRow("r", 60.0, 70.0, "delivered", "n2", 1, manual=True)
        await store.record_schedule_tick(manual, 10)  # type: ignore[attr-defined]
        assert await store.schedule_ticks("r") == [OLD[0], manual, OLD[1]]  # type: ignore[attr-defined]
        assert await store.schedule_last_instants() == {"r": 120.0}  # type: ignore[attr-defined]
    finally:
        await store.close()


async def test_an_sqlite_ledger_keyed_by_instant_alone_migrates_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(_OLD_LEDGER_SQLITE)
    conn.close()
    await _check_migrated(SQLiteStore(path))
    with sqlite3.connect(path) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(tocsin_schedule_history)")]
        key = [r[1] for r in conn.execute("PRAGMA table_info(tocsin_schedule_history)") if r[5]]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert columns[-1] == "manual"
    assert key == ["id", "instant", "manual"]
    assert "tocsin_schedule_history_v4" not in tables  # the old table is gone
    store = SQLiteStore(path)  # a second open changes nothing
    await store.open()
    try:
        assert len(await store.schedule_ticks("r")) == 3
    finally:
        await store.close()


async def test_a_read_only_open_of_an_old_ledger_reads_its_rows_as_ticks(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    await store.open()  # a current file, then its ledger put back as an old one
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE tocsin_schedule_history")
        conn.executescript(_OLD_LEDGER_SQLITE)
    conn.close()
    before = path.read_bytes()
    reader = SQLiteStore(path, read_only=True)
    await reader.open()
    try:
        assert await reader.schedule_ticks("r") == OLD
        assert await reader.schedule_tick("r", 60.0) == OLD[0]
    finally:
        await reader.close()
    assert path.read_bytes() == before


@pytest.mark.integration
async def test_a_postgres_ledger_keyed_by_instant_alone_migrates_on_open(
    postgres_dsn: str,
) -> None:
    import asyncpg

    from tocsin.stores.postgres import PostgresStore

    schema = f"ledger_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute(_OLD_LEDGER_POSTGRES.format(schema=schema))
    finally:
        await conn.close()
    await _check_migrated(PostgresStore(postgres_dsn, schema=schema))
    await _check_migrated_again(PostgresStore(postgres_dsn, schema=schema))


async def _check_migrated_again(store: Store) -> None:
    await store.open()  # the second open finds the wider key and changes nothing
    try:
        assert len(await store.schedule_ticks("r")) == 3  # type: ignore[attr-defined]
    finally:
        await store.close()
