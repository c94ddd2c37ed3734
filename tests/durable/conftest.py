# SPDX-License-Identifier: Apache-2.0
"""Store backends for the durable suites: memory, SQLite and PostgreSQL.

Same approach as ``tests/stores/test_store_contract.py``: fixtures are sync and hand out a
:class:`Backend` whose ``make()`` builds a new store instance on the same data (a fresh
temp file per test for SQLite, a fresh schema per test for PostgreSQL), so a test can stop
one system and start another on the same store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tocsin.stores import MemoryStore, Store


@dataclass(frozen=True)
class Backend:
    name: str
    #: A new store instance on the same underlying data.
    make: Callable[[], Store]
    #: Whether data survives a new store instance (False for memory).
    persistent: bool


def sqlite_backend(tmp_path: Path) -> Backend:
    from tocsin.stores.sqlite import SQLiteStore

    path = tmp_path / "durable.db"
    return Backend("sqlite", lambda: SQLiteStore(path), persistent=True)


def postgres_backend(dsn: str) -> Backend:
    from tocsin.stores.postgres import PostgresStore

    schema = f"d_{uuid.uuid4().hex[:16]}"  # a fresh schema: tests stay independent
    return Backend("postgres", lambda: PostgresStore(dsn, schema=schema), persistent=True)


def _make(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        store = MemoryStore()
        return Backend("memory", lambda: store, persistent=False)
    if request.param == "sqlite":
        return sqlite_backend(tmp_path)
    return postgres_backend(request.getfixturevalue("postgres_dsn"))


_POSTGRES = pytest.param("postgres", marks=pytest.mark.integration)


@pytest.fixture(params=["memory", "sqlite", _POSTGRES])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Every store: memory, SQLite, PostgreSQL."""
    return _make(request, tmp_path)


@pytest.fixture(params=["sqlite", _POSTGRES])
def persistent_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Stores whose data outlives the system (restart and recovery tests)."""
    return _make(request, tmp_path)
