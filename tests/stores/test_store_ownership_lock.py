# SPDX-License-Identifier: Apache-2.0
"""Store ownership (issue 10 item 6) and the change feed (issue 15 part 4), on every store.

``open(exclusive=True)`` is held by one open store at a time and dies with its holder;
``open()`` takes nothing. ``watch`` hears what another process changed: pushed
(PostgreSQL ``NOTIFY``, memory) or found by ``check_changes`` (SQLite ``data_version``).
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.procs import close_pipes, ready_line
from tests.stores.test_store_contract import (
    Backend,
    _postgres_backend,
    _sqlite_backend,
    task,
)

from tocsin.errors import StoreError
from tocsin.stores import MemoryStore, UpsertTask
from tocsin.stores.sqlite import SQLiteStore


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        store = MemoryStore()
        return Backend("memory", lambda: store, None, persistent=False)
    if request.param == "sqlite":
        return _sqlite_backend(tmp_path)
    return _postgres_backend(request.getfixturevalue("postgres_dsn"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def shared_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Stores where two objects can share the data (not memory: one object is the data)."""
    if request.param == "sqlite":
        return _sqlite_backend(tmp_path)
    return _postgres_backend(request.getfixturevalue("postgres_dsn"))


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def pushing_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Stores that push outside changes to watchers (SQLite is looked at instead)."""
    if request.param == "memory":
        store = MemoryStore()
        return Backend("memory", lambda: store, None, persistent=False)
    return _postgres_backend(request.getfixturevalue("postgres_dsn"))


def _names_me(message: str) -> None:
    assert f"host {socket.gethostname()} pid {os.getpid()}" in message
    assert "cluster" in message


async def test_second_exclusive_open_is_refused_naming_the_holder(backend: Backend) -> None:
    first = backend.make()
    await first.open(exclusive=True)
    try:
        second = backend.make()
        with pytest.raises(StoreError, match="already owned by a running system") as info:
            await second.open(exclusive=True)
        _names_me(str(info.value))
        # The holder still works, and non-exclusive users (operators' tools) may open.
        await first.apply([UpsertTask(task("t1"))])
        reader = backend.make()
        await reader.open()
        assert [r.id for r in await reader.list_tasks()] == ["t1"]
        if reader is not first:
            await reader.close()
    finally:
        await first.close()
    # Released by close: the next one takes it.
    again = backend.make()
    await again.open(exclusive=True)
    await again.close()


async def test_refused_exclusive_open_leaves_nothing_open(shared_backend: Backend) -> None:
    backend = shared_backend
    holder = backend.make()
    await holder.open(exclusive=True)
    try:
        loser = backend.make()
        with pytest.raises(StoreError):
            await loser.open(exclusive=True)
        with pytest.raises(StoreError, match="not open"):
            await loser.apply([UpsertTask(task("t1"))])
    finally:
        await holder.close()


async def test_the_same_store_cannot_be_owned_twice(backend: Backend) -> None:
    store = backend.make()
    await store.open(exclusive=True)
    try:
        with pytest.raises(StoreError, match="already owned") as info:
            await store.open(exclusive=True)
        _names_me(str(info.value))
    finally:
        await store.close()


async def test_exclusive_open_of_an_open_store_takes_ownership(backend: Backend) -> None:
    store = backend.make()
    await store.open()
    await store.open(exclusive=True)
    try:
        other = backend.make()
        if other is not store:
            with pytest.raises(StoreError, match="already owned"):
                await other.open(exclusive=True)
    finally:
        await store.close()


async def test_watchers_hear_an_announce_from_another_store(pushing_backend: Backend) -> None:
    # SQLite watchers find changes in check_changes instead (tested below).
    import asyncio

    backend = pushing_backend

    owner = backend.make()
    await owner.open(exclusive=True)
    heard = asyncio.Event()
    unwatch = await owner.watch(heard.set)
    try:
        writer = backend.make()
        await writer.open()
        await writer.announce()
        await asyncio.wait_for(heard.wait(), 10)  # bounded: a push, normally at once
        if writer is not owner:
            await writer.close()
        unwatch()
        heard.clear()
        # A second watcher, still watching, is the fence: once it heard the announce,
        # the first would have too had it still been watching (no real-time guess).
        fence = asyncio.Event()
        unfence = await owner.watch(fence.set)
        writer = backend.make()
        await writer.open()
        await writer.announce()
        await asyncio.wait_for(fence.wait(), 10)  # bounded: a push, normally at once
        unfence()
        assert not heard.is_set()
        if writer is not owner:
            await writer.close()
    finally:
        await owner.close()


# --- SQLite specifics --------------------------------------------------------------------


async def test_sqlite_check_changes_sees_another_connections_commit(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    await store.open(exclusive=True)
    calls: list[int] = []
    await store.watch(lambda: calls.append(1))
    try:
        store.check_changes()
        assert calls == []  # nothing happened yet
        await store.apply([UpsertTask(task("mine"))])  # loop-side commit: not outside
        store.check_changes()
        assert calls == []
        with sqlite3.connect(path) as other:  # as `tocsin tasks retry` would
            other.execute("UPDATE tocsin_tasks SET attempts = 1")
        other.close()
        store.check_changes()
        assert calls == [1]
        store.check_changes()
        assert calls == [1]  # reported once
    finally:
        await store.close()


async def test_sqlite_owner_file_names_the_holder(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    await store.open(exclusive=True)
    try:
        text = (tmp_path / "t.db-owner").read_text()
        assert str(os.getpid()) in text
        assert socket.gethostname() in text
    finally:
        await store.close()
    assert (tmp_path / "t.db-owner").read_text() == ""


async def test_sqlite_version_1_file_gains_the_cron_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE tocsin_tasks (
                kind TEXT NOT NULL, identity TEXT NOT NULL, id TEXT NOT NULL,
                name TEXT NOT NULL, payload BLOB NOT NULL, due REAL NOT NULL, every REAL,
                attempts INTEGER NOT NULL, max_retries INTEGER NOT NULL,
                created_at REAL NOT NULL, state TEXT NOT NULL, last_error TEXT,
                timeout REAL, PRIMARY KEY (kind, identity, id)) WITHOUT ROWID;
            INSERT INTO tocsin_tasks VALUES
                ('Order', 'o-1', 't1', 'ship', x'01', 100.0, NULL, 0, 5, 1.5,
                 'pending', NULL, NULL);
            PRAGMA user_version = 1;
            """
        )
    conn.close()
    store = SQLiteStore(path)
    await store.open()
    try:
        [row] = await store.list_tasks()
        assert (row.id, row.cron, row.timezone) == ("t1", None, None)
        await store.apply([UpsertTask(task("t2", cron="0 0 * * *", timezone="Europe/Paris"))])
        got = await store.get_task("Order", "o-1", "t2")
        assert got is not None
        assert (got.cron, got.timezone) == ("0 0 * * *", "Europe/Paris")
    finally:
        await store.close()


# --- a holder that dies never blocks (real processes, SIGKILL) ---------------------------

_HOLDER = textwrap.dedent(
    """
    import asyncio, sys, time
    from tocsin.stores import open_store

    async def main():
        store = open_store(sys.argv[1])
        if len(sys.argv) > 2:
            from tocsin.stores.postgres import PostgresStore
            store = PostgresStore(sys.argv[1], schema=sys.argv[2])
        await store.open(exclusive=True)
        print("held", flush=True)
        while True:
            await asyncio.sleep(60)

    asyncio.run(main())
    """
)


def _start_holder(*args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    line = ready_line(proc, "the lock holder")  # once held (or "" if the child died)
    assert line.strip() == "held", f"holder did not start (exit {proc.poll()})"
    return proc


async def _refused_then_free_after_kill(make: object, proc: subprocess.Popen[str]) -> None:
    from collections.abc import Callable

    from tocsin.stores import Store

    assert callable(make)
    factory: Callable[[], Store] = make
    try:
        store = factory()
        with pytest.raises(StoreError, match=f"pid {proc.pid}"):
            await store.open(exclusive=True)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        close_pipes(proc)
    # The kernel (SQLite flock) or the server (session lock) dropped the lock with the
    # process. PostgreSQL notices the dead session a moment later: retry, bounded.
    deadline = time.monotonic() + 30
    while True:
        store = factory()
        try:
            await store.open(exclusive=True)
            break
        except StoreError:
            if time.monotonic() > deadline:
                raise
            import asyncio

            await asyncio.sleep(0.1)
    await store.close()


@pytest.mark.integration
async def test_sqlite_holder_killed_with_sigkill_does_not_block(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    proc = _start_holder(f"sqlite:///{path}")
    await _refused_then_free_after_kill(lambda: SQLiteStore(path), proc)


@pytest.mark.integration
async def test_postgres_holder_killed_with_sigkill_does_not_block(postgres_dsn: str) -> None:
    import uuid

    from tocsin.stores.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:16]}"
    proc = _start_holder(postgres_dsn, schema)
    await _refused_then_free_after_kill(lambda: PostgresStore(postgres_dsn, schema=schema), proc)


@pytest.mark.integration
async def test_postgres_version_1_schema_gains_the_cron_columns(postgres_dsn: str) -> None:
    import uuid

    import asyncpg

    from tocsin.stores.postgres import PostgresStore

    schema = f"v1_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        await conn.execute(
            f"""
            CREATE TABLE "{schema}".tocsin_tasks (
                kind text NOT NULL, identity text NOT NULL, id text NOT NULL,
                name text NOT NULL, payload bytea NOT NULL, due double precision NOT NULL,
                every double precision, attempts integer NOT NULL,
                max_retries integer NOT NULL, created_at double precision NOT NULL,
                state text NOT NULL, last_error text, timeout double precision,
                PRIMARY KEY (kind, identity, id));
            INSERT INTO "{schema}".tocsin_tasks VALUES
                ('Order', 'o-1', 't1', 'ship', '\\x01', 100, NULL, 0, 5, 1.5,
                 'pending', NULL, NULL);
            """
        )
    finally:
        await conn.close()
    store = PostgresStore(postgres_dsn, schema=schema)
    await store.open(exclusive=True)
    try:
        [row] = await store.list_tasks()
        assert (row.id, row.cron, row.timezone) == ("t1", None, None)
        await store.apply([UpsertTask(task("t2", cron="0 0 * * *", timezone="UTC"))])
        got = await store.get_task("Order", "o-1", "t2")
        assert got is not None
        assert (got.cron, got.timezone) == ("0 0 * * *", "UTC")
    finally:
        await store.close()
