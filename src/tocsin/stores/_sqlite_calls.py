# SPDX-License-Identifier: Apache-2.0
"""How one call of the SQLite store is made and how it fails (used by ``sqlite.py``):
an op's statement parameters, the one wording of a failed call, and the WAL checkpoint
the worker thread runs (the busy timeout is the engine's, :mod:`._sqlite_engine`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any, Final

import msgspec

from ..errors import FencedError, StoreError
from . import _queries as q
from ._protocols import (
    DeleteHistory,
    DeleteTask,
    Fence,
    Op,
    PauseTask,
    PutState,
    RecordTick,
    UpsertTask,
)
from ._sqlite_engine import BUSY_TIMEOUT_MS, transaction

__all__ = [
    "DB_ERRORS",
    "cannot_be_database",
    "checkpoint",
    "op_params",
    "store_error",
]


def op_params(op: Op) -> tuple[Any, ...]:
    if isinstance(op, UpsertTask):
        # TaskRow's field order is q.COLUMNS' order (a contract test pins it).
        return msgspec.structs.astuple(op.row)
    if isinstance(op, DeleteTask):
        return (op.kind, op.identity, op.id)
    if isinstance(op, PutState):
        return (op.kind, op.identity, op.key, op.value)
    if isinstance(op, Fence):
        return (op.kind, op.identity, op.epoch, op.owner)
    if isinstance(op, (RecordTick, DeleteHistory)):
        return msgspec.structs.astuple(op)
    if isinstance(op, PauseTask):
        return (op.paused_at, op.note, op.by, op.kind, op.identity, op.id)
    return (op.kind, op.identity, op.key)


#: The errors of sqlite3 and of the file system that become :class:`StoreError`.
DB_ERRORS: Final = (sqlite3.Error, OSError)


def store_error(what: str, path: str, exc: BaseException) -> StoreError:
    """The one wording of a failed store call (raised ``from`` the sqlite3/OS error).

    A function, not a ``@contextmanager``: a generator-based ``with`` costs ~1.5 µs on
    every store call, a ``try`` costs nothing until it catches.
    """
    if isinstance(exc, sqlite3.IntegrityError) and q.FENCED_MESSAGE in str(exc):
        return FencedError(f"SQLite store {path!r}: {what} refused: {exc}")
    return StoreError(f"SQLite store {path!r}: {what} failed: {exc}")


def cannot_be_database(path: str) -> bool:
    """True when ``path`` is a directory or lies in a directory that does not exist."""
    full = os.path.abspath(path)
    return not os.path.isdir(os.path.dirname(full)) or os.path.isdir(full)


def checkpoint(conn: sqlite3.Connection) -> list[Any]:
    """Copy the WAL into the database and reset it, never making writers wait.

    A PASSIVE checkpoint alone never blocks writers, so a writer faster than it keeps
    appending and the WAL is never reset: it reached 1.8 GB after 100,000 one-row commits
    in ``bench/durable.py``, and every read then searches a huge WAL index. So after the
    PASSIVE copy (the bulk of the work, writers unaffected), a TRUNCATE resets the WAL,
    but only if the copy was complete, and without waiting (``busy_timeout = 0``): a
    TRUNCATE that waited for another connection's read snapshot held the write lock for
    the whole busy timeout, and every write queued behind it (5 s stalls). If it cannot
    run now, the next check tries again.

    After a reset, the first commit rewrites the WAL header and syncs it. That commit is
    made here, on the worker (a write of ``user_version`` with its own value), so that
    the loop-side connection, which never syncs, does not inherit it.
    """
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        [(busy, frames, copied)] = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        if busy or frames != copied:
            return [(busy, frames, copied)]
        result = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        if result[0][0] == 0:
            # Not busy: the WAL was reset. Make the first commit after the reset here, on
            # the worker; if a loop-side write got there first, this one finds the lock
            # and is skipped (that write already made the commit).
            with contextlib.suppress(sqlite3.OperationalError):
                transaction(conn, _rewrite_user_version)
        return result
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _rewrite_user_version(conn: sqlite3.Connection) -> None:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    conn.execute(f"PRAGMA user_version = {int(version)}")
