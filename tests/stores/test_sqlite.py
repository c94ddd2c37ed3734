# SPDX-License-Identifier: Apache-2.0
"""SQLite specifics: WAL, synchronous, one worker thread, group commit, open errors."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from tocsin.errors import StoreError
from tocsin.stores import PutState
from tocsin.stores.sqlite import SQLiteStore


async def test_file_is_in_wal_mode_with_the_schema(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    await store.open()
    await store.close()
    with sqlite3.connect(tmp_path / "t.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert {"tocsin_tasks", "tocsin_state", "tocsin_tasks_state_due"} <= tables


@pytest.mark.parametrize(("sync", "level"), [("NORMAL", 1), ("FULL", 2)])
async def test_synchronous_setting_is_applied(tmp_path: Path, sync: str, level: int) -> None:
    store = SQLiteStore(tmp_path / "t.db", synchronous=sync)  # type: ignore[arg-type]
    await store.open()
    try:
        got = await store._call(
            lambda c: c.execute("PRAGMA synchronous").fetchone()[0], write=False
        )
        assert got == level
    finally:
        await store.close()


def test_bad_synchronous_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="`synchronous` must be 'NORMAL' or 'FULL', got 'OFF'"):
        SQLiteStore(tmp_path / "t.db", synchronous="OFF")  # type: ignore[arg-type]


async def test_memory_database_works_on_its_single_connection() -> None:
    store = SQLiteStore(":memory:")
    await store.open()
    try:
        await store.apply([PutState("A", "1", "k", b"v")])
        assert await store.get_state("A", "1", "k") == b"v"
    finally:
        await store.close()


async def test_all_work_runs_on_one_thread_that_stops_on_close(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    await store.open()
    # Only this store's threads count: the loop's executor may start threads meanwhile.
    workers = {t for t in threading.enumerate() if t.name == f"tocsin-sqlite:{store.path}"}
    assert len(workers) == 1
    names = await asyncio.gather(
        *(store._call(lambda c: threading.current_thread().name, write=False) for _ in range(5))
    )
    assert set(names) == {next(iter(workers)).name}
    await store.close()
    assert not any(t.is_alive() for t in workers)


async def test_concurrent_applies_share_commits(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    await store.open()
    try:
        await asyncio.gather(*(store.apply([PutState("A", "1", f"k{i}", b"")]) for i in range(300)))
        assert len(await store.list_state("A", "1")) == 300
        assert 1 <= store.commits <= 300  # grouped commits (typically a handful)
    finally:
        await store.close()


async def test_open_fails_with_store_error_when_the_directory_is_missing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "missing" / "t.db")
    with pytest.raises(StoreError, match="open failed"):
        await store.open()
    with pytest.raises(StoreError, match="not open"):
        await store.get_state("A", "1", "k")
    await store.close()  # still idempotent
