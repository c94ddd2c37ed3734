# SPDX-License-Identifier: Apache-2.0
"""One store, one cluster (issue 19, item 2): the durable store records its cluster's
coordinator fingerprint at the first join, and a node of another cluster refuses to start.

The store side (``Store.swap_cluster``) runs on memory, SQLite and PostgreSQL; the system
side starts real ``ActorSystem`` nodes on SQLite and PostgreSQL stores and coordinators.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tocsin import ActorSystem, Cluster, Remoting
from tocsin.cluster import open_coordinator
from tocsin.cluster._identity import _process_start, _this_process, bind_store, fingerprint
from tocsin.errors import StoreError
from tocsin.stores import MemoryStore, Store
from tocsin.stores.sqlite import SQLiteStore

SECRET = "s" * 32

# --- the store: swap_cluster on every backend --------------------------------------------


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    if request.param == "memory":
        store = MemoryStore()
        return lambda: store
    if request.param == "sqlite":
        return lambda: SQLiteStore(tmp_path / "store.db")
    from tocsin.stores.postgres import PostgresStore

    dsn = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    return lambda: PostgresStore(dsn, schema=schema)


async def test_swap_cluster_is_a_compare_and_set(make_store: Callable[[], Store]) -> None:
    store = make_store()
    await store.open()
    try:
        assert await store.swap_cluster(None, None) is None  # a pure read
        assert await store.swap_cluster(None, "redis://a:6379/0") is None  # recorded
        assert await store.swap_cluster(None, "redis://b:6379/0") == "redis://a:6379/0"
        assert await store.swap_cluster(None, None) == "redis://a:6379/0"  # unchanged
        # A wrong `expected` changes nothing; the right one swaps.
        assert await store.swap_cluster("x", "y") == "redis://a:6379/0"
        assert await store.swap_cluster("redis://a:6379/0", "b") == "redis://a:6379/0"
        assert await store.swap_cluster(None, None) == "b"
        assert await store.swap_cluster("b", None) == "b"  # deleted
        assert await store.swap_cluster(None, None) is None
        await store.swap_cluster(None, "kept")
    finally:
        await store.close()
    again = make_store()
    await again.open()
    try:
        assert await again.swap_cluster(None, None) == "kept"  # persistent (memory: same object)
    finally:
        await again.close()


async def test_first_records_at_once_have_one_winner(make_store: Callable[[], Store]) -> None:
    # Separate store objects (SQLite, PostgreSQL: separate connections), as nodes have.
    stores = [make_store() for _ in range(6)]
    for store in stores:
        await store.open()
    try:
        found = await asyncio.gather(
            *(store.swap_cluster(None, f"c{i}") for i, store in enumerate(stores))
        )
        winners = [f"c{i}" for i, got in enumerate(found) if got is None]
        assert len(winners) == 1
        assert all(got in (None, winners[0]) for got in found)
        assert await stores[0].swap_cluster(None, None) == winners[0]
    finally:
        for store in stores:
            await store.close()


async def test_an_old_sqlite_file_gains_the_table_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as conn:  # a file of the previous release
        conn.execute("DROP TABLE tocsin_meta")
    conn.close()
    again = SQLiteStore(path)
    await again.open()
    try:
        assert await again.swap_cluster(None, "sqlite:////c.db") is None
        assert await again.swap_cluster(None, None) == "sqlite:////c.db"
    finally:
        await again.close()


@pytest.mark.integration
async def test_an_old_postgres_schema_gains_the_table_on_open(postgres_dsn: str) -> None:
    import asyncpg

    from tocsin.stores.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:16]}"
    store = PostgresStore(postgres_dsn, schema=schema)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(postgres_dsn, server_settings={"search_path": schema})
    try:
        await conn.execute("DROP TABLE tocsin_meta")
    finally:
        await conn.close()
    again = PostgresStore(postgres_dsn, schema=schema)
    await again.open()
    try:
        assert await again.swap_cluster(None, "x") is None
        assert await again.swap_cluster(None, None) == "x"
    finally:
        await again.close()


# --- the fingerprint ----------------------------------------------------------------------


def fp(url: str) -> str:
    result = fingerprint(open_coordinator(url))
    assert result is not None
    return result


def test_the_fingerprint_is_the_normalized_url_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg = "postgresql://app:hunter2@DB.example:5432/shop?sslmode=require&connect_timeout=3"
    assert fp(pg) == "postgresql://db.example:5432/shop?schema=public"
    assert "hunter2" not in fp(pg)
    assert "app" not in fp(pg)
    # Same server, database and schema, however written: one cluster.
    assert fp("postgres://other@db.example/shop") == fp(pg)
    assert fp("postgresql://db.example/shop?schema=a") != fp(pg)
    assert fp("postgresql://db.example/other") != fp(pg)
    assert fp("postgresql://db.example:5433/shop") != fp(pg)
    assert fp("postgresql:///shop?host=/run/PG") == "postgresql:///run/PG/shop?schema=public"

    redis = "redis://:pw@Cache:6379/2?prefix=shop:&socket_timeout=3"
    assert fp(redis) == "redis://cache:6379/2?prefix=shop%3A"
    assert "pw" not in fp(redis)
    assert fp("rediss://cache/2?prefix=shop:") == fp(redis)
    assert fp("redis://cache/2") != fp(redis)  # another prefix: another key space
    assert fp("redis://cache/3?prefix=shop:") != fp(redis)
    assert fp("redis://cache") == fp("redis://cache:6379/0?prefix=tocsin:")
    assert fp("unix:///run/redis.sock?db=1") == "unix:///run/redis.sock?db=1&prefix=tocsin%3A"

    # A SQLite file is its real absolute path, from any working directory.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path)
    absolute = fp(f"sqlite:///{tmp_path}/c.db")
    assert absolute == f"sqlite:///{os.path.realpath(tmp_path / 'c.db')}"
    assert fp("sqlite:///c.db") == absolute
    assert fp(f"sqlite:///{tmp_path}/link/c.db") == absolute

    # A memory coordinator lives in this process: the fingerprint says which.
    assert fp("memory://shop") == f"memory://shop#{_this_process()}"


# --- nodes: a second cluster on one store refuses to start --------------------------------


def node(name: str, store: str | Store, coordinator: str, tmp_path: Path) -> ActorSystem:
    return ActorSystem(
        name,
        store=store,
        remoting=Remoting(listen=f"unix://{tmp_path}/{name}.sock", secret=SECRET),
        cluster=Cluster(coordinator, lease=5.0),
    )


async def test_a_node_of_another_coordinator_refuses_the_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/store.db"
    first = node("a", store, f"sqlite:///{tmp_path}/one.db", tmp_path)
    await first.start()
    try:
        second = node("b", store, f"sqlite:///{tmp_path}/two.db", tmp_path)
        with pytest.raises(StoreError) as caught:
            await second.start()
        message = str(caught.value)
        assert f"sqlite:///{tmp_path}/store.db" in message
        assert f"sqlite:///{os.path.realpath(tmp_path / 'one.db')}" in message  # recorded
        assert f"sqlite:///{os.path.realpath(tmp_path / 'two.db')}" in message  # its own
        assert not second.running
        # It never joined its coordinator, and recorded nothing.
        two = open_coordinator(f"sqlite:///{tmp_path}/two.db")
        await two.open()
        try:
            assert (await two.leases())[1] == []
        finally:
            await two.close()
        # A node of the first cluster is welcome.
        peer = node("c", store, f"sqlite:///{tmp_path}/one.db", tmp_path)
        await peer.start()
        await peer.stop()
    finally:
        await first.stop()


async def test_a_coordinator_reset_empty_is_still_the_same_cluster(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/store.db"
    coordinator = tmp_path / "coordinator.db"
    first = node("a", store, f"sqlite:///{coordinator}", tmp_path)
    await first.start()
    await first.stop()
    for suffix in ("", "-wal", "-shm"):  # an operator deletes the coordinator's data
        Path(f"{coordinator}{suffix}").unlink(missing_ok=True)
    again = node("a", store, f"sqlite:///{coordinator}", tmp_path)
    await again.start()  # not refused
    await again.stop()


async def test_nothing_is_recorded_by_a_node_that_never_joined(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    # A coordinator that cannot be opened: the directory does not exist.
    broken = node("a", store, f"sqlite:///{tmp_path}/missing/c.db", tmp_path)
    with pytest.raises(Exception):  # noqa: B017 - CoordinatorError; what matters is below
        await broken.start()
    await store.open()
    try:
        assert await store.swap_cluster(None, None) is None
    finally:
        await store.close()
    fixed = node("a", f"sqlite:///{tmp_path}/store.db", f"sqlite:///{tmp_path}/c.db", tmp_path)
    await fixed.start()  # the typo left nothing behind
    await fixed.stop()


@pytest.mark.integration
async def test_postgres_store_and_coordinators_of_two_schemas(postgres_dsn: str) -> None:
    schema = f"s_{uuid.uuid4().hex[:12]}"
    store = f"{postgres_dsn}?schema={schema}"
    one = f"{postgres_dsn}?schema={schema}_one"
    two = f"{postgres_dsn.replace('postgres@', 'postgres:secret-pw@')}?schema={schema}_two"
    first = ActorSystem("a", store=store, cluster=Cluster(one), remoting=_tcp())
    await first.start()
    try:
        second = ActorSystem("b", store=store, cluster=Cluster(two), remoting=_tcp())
        with pytest.raises(StoreError) as caught:
            await second.start()
        message = str(caught.value)
        assert f"schema={schema}_one" in message
        assert f"schema={schema}_two" in message
        assert "secret-pw" not in message
        assert not second.running
    finally:
        await first.stop()


def _tcp() -> Remoting:
    return Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)


# --- memory:// coordinators: one process ---------------------------------------------------


async def test_memory_clusters_of_two_processes_on_one_file(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    await store.open()
    coordinator = open_coordinator("memory://shop")
    mine = fingerprint(coordinator)
    assert mine is not None
    # Another process recorded the store and still runs: refused.
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = _this_process().split(":")[0]
        await store.swap_cluster(
            None, f"memory://shop#{host}:{alive.pid}:{_process_start(alive.pid)}"
        )
        with pytest.raises(StoreError, match="belongs to another cluster"):
            await bind_store(store, coordinator, record=False)
    finally:
        alive.kill()
        alive.wait()
    try:
        # That process has ended: this one takes the record over (a restart is welcome).
        await bind_store(store, coordinator, record=False)
        await bind_store(store, coordinator, record=True)
        assert await store.swap_cluster(None, None) == mine
        # A record of a process on another host cannot be checked: refused.
        await store.swap_cluster(mine, "memory://shop#elsewhere:1:1")
        with pytest.raises(StoreError):
            await bind_store(store, coordinator, record=True)
    finally:
        await store.close()


async def test_systems_of_one_process_share_a_memory_cluster_on_a_file(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/store.db"
    url = f"memory://{uuid.uuid4().hex}"
    systems = [ActorSystem(n, store=store, cluster=Cluster(url)) for n in "ab"]
    for system in systems:
        await system.start()
    for system in systems:
        await system.stop()
    again = ActorSystem("a", store=store, cluster=Cluster(url))
    await again.start()  # the same process: the same cluster
    # Another memory:// name while the recorded one is in use: another cluster.
    other = ActorSystem("b", store=store, cluster=Cluster(f"memory://{uuid.uuid4().hex}"))
    with pytest.raises(StoreError, match="belongs to another cluster"):
        await other.start()
    await again.stop()
    # Once nobody here uses the recorded one, the next name takes the record over.
    await other.start()
    await other.stop()


async def test_a_system_outside_cluster_mode_warns_on_a_clustered_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = f"sqlite:///{tmp_path}/store.db"
    first = node("a", store, f"sqlite:///{tmp_path}/c.db", tmp_path)
    await first.start()
    await first.stop()
    with caplog.at_level(logging.WARNING, logger="tocsin.cluster"):
        async with ActorSystem("alone", store=store):
            pass
    assert any("not in cluster mode" in r.getMessage() for r in caplog.records)


# --- tocsin cluster forget-store ----------------------------------------------------------


async def test_forget_store_lets_a_cluster_move_to_another_coordinator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tocsin.cli import main

    store = f"sqlite:///{tmp_path}/store.db"
    old = node("a", store, f"sqlite:///{tmp_path}/old.db", tmp_path)
    await old.start()
    await old.stop()
    moved = node("a", store, f"sqlite:///{tmp_path}/new.db", tmp_path)
    with pytest.raises(StoreError):
        await moved.start()
    assert await asyncio.to_thread(main, ["cluster", "forget-store", "--store", store]) == 0
    out = capsys.readouterr().out
    assert (
        f"no longer belongs to the cluster of sqlite:///{os.path.realpath(tmp_path)}/old.db" in out
    )
    await moved.start()  # records the new coordinator
    await moved.stop()
    assert await asyncio.to_thread(main, ["cluster", "forget-store", "--store", store]) == 0
    assert "new.db" in capsys.readouterr().out
    assert await asyncio.to_thread(main, ["cluster", "forget-store", "--store", store]) == 0
    assert "belongs to no cluster yet" in capsys.readouterr().out


def test_forget_store_never_creates_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tocsin.cli import main

    missing = tmp_path / "nope.db"
    assert main(["cluster", "forget-store", "--store", f"sqlite:///{missing}"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not missing.exists()
    assert main(["cluster", "forget-store"]) == 2
