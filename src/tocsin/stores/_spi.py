# SPDX-License-Identifier: Apache-2.0
"""The stores' face for the layers above them (the cluster's SQLite coordinator, the CLI's
``tasks``), beside the public :mod:`tocsin.stores`: they import these names from here and
from no other ``stores._*`` module (DESIGN.md "Layers"). Re-exports only.

The SQLite engine (:mod:`._sqlite_engine`, :mod:`._sqlite_thread`) is the one every tocsin
SQLite file is opened and called with: ``open_connection`` (busy timeout, WAL with the
open-race retry, ``synchronous``, the schema under ``BEGIN IMMEDIATE``), ``LoopConnection``
(the loop side that never waits: ``BUSY`` instead), ``Worker`` (the thread side),
``transaction`` and ``is_busy``. ``connect_read_only`` opens a file for reading without
creating or migrating it. The PostgreSQL session layer (:mod:`._postgres_session`) opens
a pool and turns driver errors into tocsin's. The ``_dsn`` names check and redact the URL
options the coordinators share with the stores.
"""

from __future__ import annotations

from ._dsn import (
    CONNECT_TIMEOUT,
    PG_OPTIONS,
    REDIS_OPTIONS,
    check_connect_timeout,
    has_secret,
    no_answer,
    redact,
    split_options,
    unknown_message,
)
from ._files import FILE_MODE, open_lock_file
from ._postgres_session import ErrorWrapper, driver_errors, error_wrapper, open_pool
from ._postgres_session import create_schema as create_pg_schema
from ._sqlite_engine import (
    BUSY,
    BUSY_TIMEOUT_MS,
    Busy,
    LoopConnection,
    execute_script,
    is_busy,
    open_connection,
    set_wal_mode,
    transaction,
)
from ._sqlite_readonly import connect_read_only
from ._sqlite_thread import Worker

__all__ = [
    "BUSY",
    "BUSY_TIMEOUT_MS",
    "CONNECT_TIMEOUT",
    "FILE_MODE",
    "PG_OPTIONS",
    "REDIS_OPTIONS",
    "Busy",
    "ErrorWrapper",
    "LoopConnection",
    "Worker",
    "check_connect_timeout",
    "connect_read_only",
    "create_pg_schema",
    "driver_errors",
    "error_wrapper",
    "execute_script",
    "has_secret",
    "is_busy",
    "no_answer",
    "open_connection",
    "open_lock_file",
    "open_pool",
    "redact",
    "set_wal_mode",
    "split_options",
    "transaction",
    "unknown_message",
]
