# SPDX-License-Identifier: Apache-2.0
"""SQLite specifics: WAL, synchronous, the worker thread and group commit, the loop-side
connection for small calls and its fallbacks, checkpoints, open errors."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.eventually import eventually

from tocsin.errors import StoreError
from tocsin.stores import DeleteState, PutState
from tocsin.stores import sqlite as sqlite_module
from tocsin.stores._sqlite_engine import is_busy
from tocsin.stores.sqlite import INLINE_MAX_OPS, SQLiteStore


async def test_file_is_in_wal_mode_with_the_schema(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    await store.open()
    await store.close()
    with sqlite3.connect(tmp_path / "t.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert {"tocsin_tasks", "tocsin_state", "tocsin_tasks_actor_state_due"} <= tables
    assert "tocsin_tasks_state_due" not in tables  # dropped: see the schema's comment


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


async def test_concurrent_applies_on_the_worker_share_commits(tmp_path: Path) -> None:
    # At FULL every write goes to the worker thread (an fsync must not block the loop);
    # the ones that queue up while it commits are committed together.
    store = SQLiteStore(tmp_path / "t.db", synchronous="FULL")
    await store.open()
    try:
        await asyncio.gather(*(store.apply([PutState("A", "1", f"k{i}", b"")]) for i in range(300)))
        assert len(await store.list_state("A", "1")) == 300
        assert store._worker is not None
        assert store._worker.commits == store.commits
        assert 1 <= store.commits < 300  # grouped: the first commit alone lets others queue
    finally:
        await store.close()


async def _open(path: Path, **kwargs: object) -> SQLiteStore:
    store = SQLiteStore(path, **kwargs)  # type: ignore[arg-type]
    await store.open()
    return store


async def test_small_calls_run_on_the_loop_thread_at_normal(tmp_path: Path) -> None:
    store = await _open(tmp_path / "t.db")
    try:
        assert store._worker is not None
        assert store._inline is not None
        await store.apply([PutState("A", "1", "k", b"v"), PutState("A", "1", "j", b"w")])
        assert await store.get_state("A", "1", "k") == b"v"
        await store.apply([DeleteState("A", "1", "k")])
        assert await store.get_state("A", "1", "k") is None
        assert (store._inline.commits, store._worker.commits) == (2, 0)
        assert store.commits == 2
    finally:
        await store.close()


async def test_large_batches_and_full_sync_writes_go_to_the_worker(tmp_path: Path) -> None:
    store = await _open(tmp_path / "t.db")
    try:
        assert store._worker is not None
        assert store._inline is not None
        big = [PutState("A", "1", f"k{i}", b"") for i in range(INLINE_MAX_OPS + 1)]
        await store.apply(big)
        assert (store._inline.commits, store._worker.commits) == (0, 1)
        assert len(await store.list_state("A", "1")) == INLINE_MAX_OPS + 1
    finally:
        await store.close()
    full = await _open(tmp_path / "f.db", synchronous="FULL")
    try:
        assert full._worker is not None
        assert full._inline is not None
        await full.apply([PutState("A", "1", "k", b"v")])
        assert (full._inline.commits, full._worker.commits) == (0, 1)
        assert await full.get_state("A", "1", "k") == b"v"  # reads stay inline
    finally:
        await full.close()


@pytest.mark.parametrize("ops", [1, 2], ids=["one statement", "a transaction"])
async def test_a_write_that_finds_the_database_locked_waits_without_blocking_the_loop(
    tmp_path: Path, ops: int
) -> None:
    store = await _open(tmp_path / "t.db")
    other = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    try:
        assert store._worker is not None
        assert store._inline is not None
        other.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        other.execute("INSERT INTO tocsin_state VALUES ('A', '1', 'other', x'00')")
        batch = [PutState("A", "1", "k", b"v"), PutState("A", "1", "k2", b"w")][:ops]
        write = asyncio.ensure_future(store.apply(batch))
        for _ in range(5):
            await asyncio.sleep(0)  # the loop stays free while the worker waits
        assert not write.done()
        assert store._inline.commits == 0
        # Reads never wait for a writer in WAL mode: the loop-side read sees the last commit.
        assert await store.get_state("A", "1", "k") is None
        other.execute("COMMIT")
        # Committed once: on the loop once the lock is free, or by the worker, whose busy
        # handler retries until it is (whichever comes first after the COMMIT).
        await write
        assert store._inline.commits + store._worker.commits == 1
        expected = ["k", "k2", "other"] if ops == 2 else ["k", "other"]
        assert [k for k, _ in await store.list_state("A", "1")] == expected
    finally:
        other.close()
        await store.close()


async def test_writes_that_find_the_file_locked_commit_together_once_it_is_free(
    tmp_path: Path,
) -> None:
    # Issue 32: one by one they queued behind the worker's whole queue (registration p99
    # of up to a second); now they wait together and commit as one transaction, each in
    # its own savepoint.
    store = await _open(tmp_path / "t.db")
    other = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    try:
        assert store._worker is not None
        assert store._inline is not None
        other.execute("BEGIN IMMEDIATE")  # the lock is taken, briefly
        writes = [
            asyncio.ensure_future(store.apply([PutState("A", "1", f"k{i}", b"v")]))
            for i in range(50)
        ]
        await asyncio.sleep(0)
        assert not any(w.done() for w in writes)
        other.execute("COMMIT")  # free again before the group's first retry
        await asyncio.gather(*writes)
        assert (store._inline.commits, store._worker.commits) == (1, 0)
        assert len(await store.list_state("A", "1")) == 50
        # Still locked at the retries: the group goes to the worker as one job. The lock
        # is held until that job is seen submitted (not for a guessed number of loop
        # turns: the retry waits for a round trip through the worker thread, which a
        # loaded machine may not schedule within any fixed count).
        submitted: list[bool] = []
        submit = store._worker.submit

        def spy(fn: Any, *, write: bool) -> Any:
            submitted.append(write)
            return submit(fn, write=write)

        store._worker.submit = spy  # type: ignore[method-assign]
        other.execute("BEGIN IMMEDIATE")
        writes = [
            asyncio.ensure_future(store.apply([PutState("B", "1", f"k{i}", b"v")]))
            for i in range(50)
        ]
        await eventually(lambda: True in submitted, "the group sent to the worker as a write")
        assert not any(w.done() for w in writes)
        other.execute("COMMIT")
        await asyncio.gather(*writes)
        assert (store._inline.commits, store._worker.commits) == (1, 1)
        assert len(await store.list_state("B", "1")) == 50
    finally:
        other.close()
        await store.close()


async def test_a_failing_inline_write_rolls_back_and_raises_store_error(tmp_path: Path) -> None:
    store = await _open(tmp_path / "t.db")
    try:
        assert store._inline is not None
        store._inline.conn.execute("DROP TABLE tocsin_state")
        with pytest.raises(StoreError, match="apply failed: no such table"):
            await store.apply([PutState("A", "1", "k", b"v")])
        assert not store._inline.conn.in_transaction
    finally:
        await store.close()


async def test_a_growing_wal_is_checkpointed_and_truncated_by_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_CHECK_EVERY", 3)
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_WAL_BYTES", 1)
    store = await _open(tmp_path / "t.db")
    try:
        for i in range(2):
            await store.apply([PutState("A", "1", f"k{i}", b"v")])
        assert store._checkpoint is None  # the WAL is looked at every third commit
        await store.apply([PutState("A", "1", "k2", b"v")])
        assert store._checkpoint is not None
        [(busy, frames, done)] = await asyncio.wrap_future(store._checkpoint)
        assert busy == 0
        assert frames == done == 0  # TRUNCATE: everything copied, the WAL emptied
        # ... then restarted by the worker's one-page write (so that the header sync of a
        # fresh WAL happens off the loop thread): a 32-byte header and one 24+4096 frame.
        assert (tmp_path / "t.db-wal").stat().st_size == 32 + 24 + 4096
        assert len(await store.list_state("A", "1")) == 3
    finally:
        await store.close()


async def test_a_checkpoint_never_waits_for_a_reader_and_never_blocks_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_CHECK_EVERY", 1)
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_WAL_BYTES", 1)
    store = await _open(tmp_path / "t.db")
    reader = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    try:
        await store.apply([PutState("A", "1", "k0", b"v")])
        assert store._checkpoint is not None
        await asyncio.wrap_future(store._checkpoint)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM tocsin_state").fetchall()  # holds a snapshot
        await store.apply([PutState("A", "1", "k1", b"v")])
        assert store._checkpoint is not None
        # The reader pins the WAL: the PASSIVE copy stops at its snapshot, so no TRUNCATE
        # is tried (one that waited would hold the write lock through the busy timeout),
        # and the next write goes through inline at once.
        [(busy, frames, copied)] = await asyncio.wrap_future(store._checkpoint)
        assert busy == 1 or copied < frames
        assert store._inline is not None
        before = store._inline.commits
        await store.apply([PutState("A", "1", "k2", b"v")])
        assert store._inline.commits == before + 1
    finally:
        reader.close()
        await store.close()


async def test_a_small_wal_is_left_to_grow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_CHECK_EVERY", 1)
    store = await _open(tmp_path / "t.db")
    try:
        await store.apply([PutState("A", "1", "k", b"v")])
        assert store._checkpoint is None  # far below CHECKPOINT_WAL_BYTES
    finally:
        await store.close()


def test_is_busy_reads_the_primary_result_code() -> None:
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 5
    snapshot = sqlite3.OperationalError("snapshot")
    snapshot.sqlite_errorcode = 517  # SQLITE_BUSY_SNAPSHOT
    other = sqlite3.OperationalError("no such table")
    other.sqlite_errorcode = 1
    assert is_busy(busy)
    assert is_busy(snapshot)
    assert not is_busy(other)
    assert not is_busy(sqlite3.OperationalError("no code"))


async def test_open_fails_with_store_error_when_the_directory_is_missing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "missing" / "t.db")
    with pytest.raises(StoreError, match=r"the directory .*missing does not exist"):
        await store.open()
    with pytest.raises(StoreError, match="not open"):
        await store.get_state("A", "1", "k")
    await store.close()  # still idempotent


async def test_two_stores_on_one_file_write_concurrently_without_losing_a_write(
    tmp_path: Path,
) -> None:
    # Two stores on one file behave like two processes (an application and `tocsin
    # tasks`): each one's loop-side connection finds the other's write lock now and then
    # and hands that write to its worker thread, which waits for the lock.
    one = await _open(tmp_path / "t.db")
    two = await _open(tmp_path / "t.db")
    try:
        big = [PutState("B", "1", f"big{i}", b"") for i in range(INLINE_MAX_OPS + 1)]
        writes = [one.apply(big), two.apply(big)]  # worker-thread commits, holding the lock
        for i in range(200):
            store = one if i % 2 else two
            writes.append(store.apply([PutState("A", "1", f"k{i}", b"v")]))
        await asyncio.gather(*writes)
        keys = [k for k, _ in await one.list_state("A", "1")]
        assert sorted(keys) == sorted(f"k{i}" for i in range(200))
        assert len(await two.list_state("B", "1")) == INLINE_MAX_OPS + 1
    finally:
        await one.close()
        await two.close()


async def test_open_of_a_directory_path_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="is a directory; name the database file in it"):
        await store.open()


async def test_a_read_only_open_creates_nothing_and_refuses_a_foreign_database(
    tmp_path: Path,
) -> None:
    foreign = tmp_path / "app.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreError, match="is not a tocsin store"):
        await SQLiteStore(foreign, read_only=True).open()
    with pytest.raises(StoreError, match="no such file"):
        await SQLiteStore(tmp_path / "new.db", read_only=True).open()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
    assert foreign.read_bytes() == before
