# SPDX-License-Identifier: Apache-2.0
"""Store backends for the jobs suites: memory, SQLite and PostgreSQL (as the durable ones)."""

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
    """Stores whose data outlives the system (other processes, restarts)."""
    return _make(request, tmp_path)
