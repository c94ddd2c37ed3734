# SPDX-License-Identifier: Apache-2.0
"""Store backends for the durable suites: memory, SQLite and PostgreSQL.

Same approach as ``tests/stores/test_store_contract.py``: fixtures are sync and hand out a
:class:`Backend` whose ``make()`` builds a new store instance on the same data (a fresh
temp file per test for SQLite, a fresh schema per test for PostgreSQL), so a test can stop
one system and start another on the same store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.durable.durable_support import Backend, postgres_backend, sqlite_backend

from tocsin.stores import MemoryStore


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
