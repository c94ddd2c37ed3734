# SPDX-License-Identifier: Apache-2.0
"""Opening a SQLite store file for reading only: operators' tools never change a file.

``tocsin tasks list`` pointed at another application's database once created tocsin's
tables in it and switched it to WAL (issue 10, item 15). A read-only open therefore uses
SQLite's ``mode=ro`` URI (no schema, no ``journal_mode``, nothing written), and refuses a
file that is not a tocsin store before reading anything. Each way a path can be wrong
gets its own message, because each has a different fix: a missing directory, a
directory, a missing file, a file that is not SQLite, a SQLite file without tocsin's
tables, and a file on read-only media that SQLite cannot read (a WAL database needs to
create its ``-shm`` file beside it).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Final

from ..errors import StoreError
from ._files import read_only_uri
from ._sqlite_schema import ADDED_COLUMNS, LEDGER_BEFORE_MANUAL

__all__ = [
    "TABLES",
    "check_store_path",
    "connect_read_only",
    "on_read_only_media",
    "open_error",
]

#: The tables every tocsin SQLite store has (``sql/sqlite_schema.sql``).
TABLES: Final = ("tocsin_state", "tocsin_tasks")


def on_read_only_media(path: str) -> bool:
    """Whether ``path`` (or its directory, if it does not exist) is on a read-only mount."""
    probe = path if os.path.exists(path) else os.path.dirname(os.path.abspath(path))
    try:
        return bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_store_path(path: str) -> None:
    """Refuse, with a message naming the problem, a path that cannot hold a store file.

    Raises:
        StoreError: the directory does not exist, the path is a directory, or the file
            does not exist (nothing is created).
    """
    full = os.path.abspath(path)
    directory = os.path.dirname(full)
    if not os.path.isdir(directory):
        raise StoreError(f"SQLite store {path!r}: the directory {directory} does not exist")
    if os.path.isdir(full):
        raise StoreError(
            f"SQLite store {path!r}: {full} is a directory; name the database file in it, "
            f"e.g. sqlite:///{os.path.join(path, 'tocsin.db')}"
        )
    if not os.path.exists(full):
        raise StoreError(f"SQLite store {path!r}: no such file {full} (nothing was created)")


def connect_read_only(path: str) -> sqlite3.Connection:
    """Open ``path`` with ``mode=ro`` and check that it is a tocsin store.

    Raises:
        StoreError: see :func:`check_store_path`; or the file is not a SQLite database,
            has no tocsin tables, or cannot be read (read-only media is named as such).
    """
    check_store_path(path)
    try:
        # Creates nothing beside the file, whoever runs it (issue 31: -wal/-shm left by
        # another user made the service fail): see stores/_files.py.
        uri = read_only_uri(path)
    except OSError as exc:
        raise StoreError(f"SQLite store {path!r}: {exc.strerror}") from None
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _unreadable(path, exc) from exc
    try:
        names = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", TABLES
            )
        }
    except sqlite3.Error as exc:
        conn.close()
        raise _unreadable(path, exc) from exc
    if names != set(TABLES):
        conn.close()
        raise StoreError(
            f"SQLite store {path!r} is not a tocsin store: it has no "
            f"{' or '.join(sorted(set(TABLES) - names))} table (another application's "
            "database?); read-only commands never create tables"
        )
    try:
        _shadow_old_columns(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise _unreadable(path, exc) from exc
    return conn


def _shadow_old_columns(conn: sqlite3.Connection) -> None:
    """A file made by an older version lacks columns added since (``ADDED_COLUMNS``) and
    the history table; a read-only open cannot add them, so a TEMP view of the same name
    (temp objects shadow the file's, and live in memory: nothing is written) shows the
    columns as NULL, which is what the migration would have given them, and an empty
    TEMP table stands for the history."""
    have = {row[1] for row in conn.execute("PRAGMA main.table_info(tocsin_tasks)")}
    missing = [column for column, _ in ADDED_COLUMNS if column not in have]
    if missing:
        extra = ", ".join(f"NULL AS {column}" for column in missing)
        conn.execute(f"CREATE TEMP VIEW tocsin_tasks AS SELECT *, {extra} FROM main.tocsin_tasks")
    tables = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tocsin_task_history'"
    ).fetchall()
    if not tables:  # version 2: no history yet (an empty one, in memory)
        conn.execute(
            "CREATE TEMP TABLE tocsin_task_history (seq INTEGER PRIMARY KEY, kind, identity, "
            "id, instant, at, outcome, detail, node)"
        )
    ledger = {row[1] for row in conn.execute("PRAGMA main.table_info(tocsin_schedule_history)")}
    if ledger and "manual" not in ledger:  # a ledger from before manual runs were apart
        conn.execute(
            f"CREATE TEMP VIEW tocsin_schedule_history AS SELECT {LEDGER_BEFORE_MANUAL}, "
            "0 AS manual FROM main.tocsin_schedule_history"
        )


def _unreadable(path: str, exc: sqlite3.Error) -> StoreError:
    if os.path.exists(path) and not os.access(path, os.R_OK):
        info = os.stat(path)
        return StoreError(
            f"SQLite store {path!r}: permission denied: it is mode "
            f"{info.st_mode & 0o777:04o} and belongs to uid {info.st_uid} (stores are "
            "created readable by their owner only); run this as that user"
        )
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return StoreError(f"SQLite store {path!r} is not a SQLite database: {exc}")
    if on_read_only_media(path):
        return StoreError(
            f"SQLite store {path!r} is on read-only media and SQLite cannot read it there "
            f"({exc}): a WAL database needs to create {path}-shm beside it; copy the file "
            "to writable storage"
        )
    return StoreError(f"SQLite store {path!r}: cannot open it for reading: {exc}")


def open_error(path: str, exc: BaseException) -> StoreError:
    """The :class:`StoreError` for a failed read-write open, naming the likely cause.

    SQLite says "unable to open database file" for a missing directory, a directory
    path and read-only media alike; each has its own fix, so each gets its own message.
    """
    full = os.path.abspath(path)
    directory = os.path.dirname(full)
    if not os.path.isdir(directory):
        return StoreError(f"SQLite store {path!r}: the directory {directory} does not exist")
    if os.path.isdir(full):
        return StoreError(
            f"SQLite store {path!r}: {full} is a directory; name the database file in it"
        )
    if on_read_only_media(path):
        return StoreError(
            f"SQLite store {path!r} is on read-only media ({exc}); a store must be writable"
        )
    return StoreError(f"SQLite store {path!r}: open failed: {exc}")
