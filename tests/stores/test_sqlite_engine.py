# SPDX-License-Identifier: Apache-2.0
"""The one SQLite engine under the store and the coordinator (issue 21): the same pragmas
read back from live connections of each, the loop side that answers BUSY instead of
waiting, the worker that waits, and schema scripts inside the caller's transaction."""

from __future__ import annotations

import asyncio
import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from tocsin.cluster._sqlite import SQLiteCoordinator
from tocsin.stores._sqlite_engine import (
    BUSY,
    BUSY_TIMEOUT_MS,
    LoopConnection,
    execute_script,
    open_connection,
    transaction,
)
from tocsin.stores.sqlite import SQLiteStore

_PRAGMAS = ("busy_timeout", "journal_mode", "synchronous")


def _pragmas(conn: sqlite3.Connection) -> dict[str, object]:
    return {name: conn.execute(f"PRAGMA {name}").fetchone()[0] for name in _PRAGMAS}


async def test_the_store_and_the_coordinator_open_sqlite_with_the_same_pragmas(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    coordinator = SQLiteCoordinator(tmp_path / "coordinator.db")
    await store.open()
    await coordinator.open()
    try:
        assert store._worker is not None
        assert store._inline is not None
        assert coordinator._worker is not None
        assert coordinator._inline is not None
        worker_side = {
            "store": await store._worker.call(_pragmas, write=False),
            "coordinator": await coordinator._worker.call(_pragmas, write=False),
        }
        loop_side = {
            "store": _pragmas(store._inline.conn),
            "coordinator": _pragmas(coordinator._inline.conn),
        }
    finally:
        await coordinator.close()
        await store.close()
    # synchronous 1 is NORMAL (the store's default and the coordinator's setting).
    waits = {"busy_timeout": BUSY_TIMEOUT_MS, "journal_mode": "wal", "synchronous": 1}
    never_waits = {"busy_timeout": 0, "journal_mode": "wal", "synchronous": 1}
    assert worker_side == {"store": waits, "coordinator": waits}
    assert loop_side == {"store": never_waits, "coordinator": never_waits}
    assert BUSY_TIMEOUT_MS == 5_000  # the one busy timeout (was 5 s and 10 s)


async def test_a_coordinator_step_on_a_locked_file_waits_on_the_worker_not_the_loop(
    tmp_path: Path,
) -> None:
    coordinator = SQLiteCoordinator(tmp_path / "coordinator.db")
    await coordinator.open()
    other = sqlite3.connect(tmp_path / "coordinator.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        join = asyncio.ensure_future(coordinator.join("n1", "i1", "tcp://a", 10.0))
        for _ in range(5):
            await asyncio.sleep(0)  # the loop stays free while the worker waits
        assert not join.done()
        other.execute("COMMIT")
        row = await join  # the worker's busy handler retries until the lock is free
        assert row is not None
        assert (row.node, row.incarnation) == ("n1", "i1")
        _, leases = await coordinator.leases()
        assert [lease.node for lease in leases] == ["n1"]
    finally:
        other.close()
        await coordinator.close()


async def test_a_locked_claim_falls_back_to_a_step_and_is_won_once(tmp_path: Path) -> None:
    coordinator = SQLiteCoordinator(tmp_path / "coordinator.db")
    await coordinator.open()
    other = sqlite3.connect(tmp_path / "coordinator.db", isolation_level=None)
    try:
        now = await coordinator.now()
        other.execute("BEGIN IMMEDIATE")
        claim = asyncio.ensure_future(coordinator.claim_tick("k", "ref", now, 60.0, "n1"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not claim.done()
        other.execute("COMMIT")
        assert (await claim).outcome.name == "WON"
        again = await coordinator.claim_tick("k", "ref", now, 60.0, "n2")
        assert again.outcome.name == "LOST"
    finally:
        other.close()
        await coordinator.close()


def test_the_loop_side_answers_busy_at_once_and_leaves_nothing_done(tmp_path: Path) -> None:
    path = str(tmp_path / "t.db")
    worker = open_connection(
        path, synchronous="NORMAL", schema=lambda c: c.execute("CREATE TABLE t (x)")
    )
    inline = LoopConnection(path)
    try:
        worker.execute("BEGIN IMMEDIATE")
        got = inline.attempt(
            lambda c: transaction(c, lambda c: c.execute("INSERT INTO t VALUES (1)"))
        )
        assert got is BUSY
        assert inline.read("INSERT INTO t VALUES (2) RETURNING x", ()) is None
        worker.execute("COMMIT")
        assert inline.attempt(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]) == 0
        # Any other error is raised, not taken for a lock.
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            inline.attempt(lambda c: c.execute("SELECT * FROM missing"))
    finally:
        inline.close()
        worker.close()


def test_a_schema_script_runs_inside_the_callers_transaction(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    script = "-- a comment; with a semicolon\nCREATE TABLE a (x);\nCREATE TABLE b (y);\n"

    def create_then_fail(c: sqlite3.Connection) -> None:
        execute_script(c, script)
        raise RuntimeError("after the script")

    try:
        with pytest.raises(RuntimeError):
            transaction(conn, create_then_fail)
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []  # rolled back
        transaction(conn, lambda c: execute_script(c, script))
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]
        assert names == ["a", "b"]
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["sqlite_coordinator.sql", "postgres_coordinator.sql"])
def test_the_coordinator_schemas_ship_as_package_data(name: str) -> None:
    script = resources.files("tocsin.cluster").joinpath("sql", name).read_text("utf-8")
    for table in ("leases", "directory", "claims", "paused"):
        assert f"CREATE TABLE IF NOT EXISTS tocsin_cluster_{table}" in script
