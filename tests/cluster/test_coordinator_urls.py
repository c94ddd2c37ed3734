# SPDX-License-Identifier: Apache-2.0
"""Coordinator and store URLs say what they mean (issue 19, item 8): unknown query options
are refused with the allowed ones, a Redis database must be a number, a SQLite
coordinator never writes into a file that is not one, and a PostgreSQL server that
accepts TCP but never answers fails ``open()`` within ``connect_timeout``, saying so."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tocsin import ActorSystem, Cluster
from tocsin.cli import main
from tocsin.cluster import open_coordinator
from tocsin.errors import (
    CoordinatorError,
    InvalidCoordinatorURLError,
    InvalidStoreURLError,
    StoreError,
)
from tocsin.stores import open_store
from tocsin.stores.sqlite import SQLiteStore

# --- query options and the Redis database -------------------------------------------------


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("redis://h:6379/0?prefx=shop:", "prefix, db,"),
        ("postgresql://h/db?shema=shop", "schema, connect_timeout,"),
        ("postgres://u:pw@h/db?search_path=x", "schema, connect_timeout,"),
    ],
)
def test_an_unknown_coordinator_option_is_refused_with_the_allowed_ones(
    url: str, allowed: str
) -> None:
    with pytest.raises(InvalidCoordinatorURLError) as caught:
        Cluster(url)
    message = str(caught.value)
    assert "unknown query option" in message
    assert allowed in message
    assert "pw" not in message.replace("password", "")  # the password is redacted


def test_a_sqlite_coordinator_url_takes_no_options() -> None:
    with pytest.raises(InvalidCoordinatorURLError, match="no query options"):
        Cluster("sqlite:///c.db?prefix=x")


@pytest.mark.parametrize("url", ["redis://h/abc", "redis://h:6379/0x", "unix:///s?db=one"])
def test_a_redis_database_must_be_a_number(url: str) -> None:
    with pytest.raises(InvalidCoordinatorURLError, match="must be a number"):
        Cluster(url)


def test_known_options_are_read_by_tocsin_and_not_sent_on() -> None:
    from tocsin.cluster._postgres import PostgresCoordinator
    from tocsin.cluster._redis import RedisCoordinator
    from tocsin.stores.postgres import PostgresStore

    coordinator = open_coordinator("postgresql://h/db?schema=shop&connect_timeout=2.5")
    assert isinstance(coordinator, PostgresCoordinator)
    assert (coordinator.schema, coordinator.connect_timeout) == ("shop", 2.5)
    assert PostgresCoordinator("postgresql://h/db").connect_timeout == 10.0
    redis = open_coordinator("redis://h/3?prefix=shop:")
    assert isinstance(redis, RedisCoordinator)
    assert redis.prefix == "shop:"
    with pytest.raises(InvalidCoordinatorURLError):
        RedisCoordinator("redis://h/abc")  # made by hand: the same checks
    store = open_store("postgresql://h/db?schema=shop&connect_timeout=4")
    assert isinstance(store, PostgresStore)
    assert (store.schema, store.connect_timeout) == ("shop", 4.0)
    assert PostgresStore("postgresql://h/db").connect_timeout == 10.0


@pytest.mark.parametrize(
    "url", ["postgresql://h/db?shema=shop", "postgresql://h/db?connect_timeout=0"]
)
def test_a_bad_store_option_is_refused(url: str) -> None:
    with pytest.raises(InvalidStoreURLError) as caught:
        open_store(url)
    assert "shema" in str(caught.value) or "connect_timeout" in str(caught.value)


# --- a SQLite coordinator in somebody else's file ----------------------------------------


async def test_a_sqlite_coordinator_refuses_the_durable_store(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SQLiteStore(path)
    await store.open()
    await store.close()
    before = _tables(path)
    coordinator = open_coordinator(f"sqlite:///{path}")
    with pytest.raises(InvalidCoordinatorURLError, match="durable store"):
        await coordinator.open()
    assert _tables(path) == before  # nothing created


async def test_a_sqlite_coordinator_changes_nothing_in_another_apps_database(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    conn.close()
    coordinator = open_coordinator(f"sqlite:///{path}")
    with pytest.raises(InvalidCoordinatorURLError, match=r"not a SQLite coordinator.*users"):
        await coordinator.open()
    assert _tables(path) == ["users"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not WAL
    conn.close()
    # A real coordinator file opens again and again.
    own = open_coordinator(f"sqlite:///{tmp_path}/cluster.db")
    for _ in range(2):
        await own.open()
        await own.close()


def test_tocsin_cluster_refuses_a_file_that_is_no_coordinator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "store.db"
    asyncio.run(_make_store(path))
    before = _tables(path)
    assert main(["cluster", "members", "--coordinator", f"sqlite:///{path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "not a SQLite coordinator file" in err
    assert _tables(path) == before


async def _make_store(path: Path) -> None:
    store = SQLiteStore(path)
    await store.open()
    await store.close()


def _tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        names = [row[0] for row in rows]
    conn.close()
    return names


# --- a PostgreSQL server that accepts TCP and never answers -------------------------------


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port whose listener accepts every connection and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    done = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


async def test_a_silent_server_fails_the_coordinator_open_within_the_timeout(
    silent_server: int,
) -> None:
    url = f"postgresql://u:pw@127.0.0.1:{silent_server}/db?connect_timeout=0.5"
    coordinator = open_coordinator(url)
    started = time.monotonic()
    with pytest.raises(CoordinatorError) as caught:
        await coordinator.open()
    assert time.monotonic() - started < 30  # bounded (60 s before), whatever the load
    message = str(caught.value)
    assert f"no answer from 127.0.0.1:{silent_server} within 0.5 s" in message
    assert "connect_timeout" in message
    assert "pw@" not in message


async def test_a_silent_server_fails_the_store_and_the_system_start(silent_server: int) -> None:
    url = f"postgresql://127.0.0.1:{silent_server}/db?connect_timeout=0.5"
    store = open_store(url)
    with pytest.raises(StoreError, match=rf"no answer from 127.0.0.1:{silent_server}"):
        await store.open()
    system = ActorSystem("a", store=url)
    started = time.monotonic()
    with pytest.raises(StoreError, match=r"within 0\.5 s"):
        await system.start()
    assert time.monotonic() - started < 30
    assert not system.running
