# SPDX-License-Identifier: Apache-2.0
"""Store backends of the durable suites (the fixtures are in ``conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tocsin.stores import Store


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
