# SPDX-License-Identifier: Apache-2.0
"""The SQLite store's loop-side connection: small operations that can never wait.

Why it exists. On a VM, handing a call to a thread and getting the answer back costs
about 130–250 µs (two thread wake-ups; ``bench/durable.py``'s notes), while a point read
on SQLite costs ~4 µs and a one-row commit in WAL mode with ``synchronous=NORMAL`` ~20 µs
(no fsync: WAL commits at NORMAL only append to the log). Running those on the loop
thread blocks it for less time than the hand-off alone would occupy it.

What makes it safe to run on the loop thread:

* ``busy_timeout = 0``: it never waits for a lock. If another connection (the store's
  worker thread, or another process such as ``tocsin tasks``) holds the write lock, the
  call fails at once with ``SQLITE_BUSY`` and the store sends it to the worker thread,
  which may wait.
* ``wal_autocheckpoint = 0``: its commits never run a checkpoint (which fsyncs); the
  store asks the worker thread for checkpoints instead.
* Only bounded work comes here (point reads, reads with a ``LIMIT``, batches of at most
  :data:`~tocsin.stores.sqlite.INLINE_MAX_OPS` ops), and never a commit that fsyncs: with
  ``synchronous=FULL`` every write goes to the worker thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, Final, final

from ._sqlite_thread import transaction

__all__ = ["LoopConnection", "is_busy"]

#: SQLite's primary result codes for "someone else holds the lock" (the low byte of an
#: extended code such as SQLITE_BUSY_SNAPSHOT).
_BUSY_CODES: Final = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED


def is_busy(exc: sqlite3.Error) -> bool:
    """True if ``exc`` means "locked by another connection, try again later"."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _BUSY_CODES


@final
class LoopConnection:
    """A connection used only from the event loop thread; calls return ``None``/``False``
    instead of waiting when the database is locked."""

    __slots__ = ("commits", "conn")

    def __init__(self, path: str, cache_kib: int) -> None:
        # check_same_thread=False: the store may be opened in one task and used from
        # another loop in the same thread (asyncio.run twice); it is never used from two
        # threads at once.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            # Inline writes only happen at NORMAL (see the module docstring).
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA cache_size = {cache_kib}")
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        #: Transactions committed on this connection.
        self.commits = 0

    def read(self, sql: str, args: tuple[Any, ...]) -> list[Any] | None:
        """All rows of one query, or ``None`` if the database was locked."""
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            if is_busy(exc):
                return None
            raise

    def write_one(self, sql: str, params: tuple[Any, ...]) -> bool:
        """Run one write statement as its own transaction (SQLite's autocommit: atomic,
        and one call instead of BEGIN, the statement and COMMIT). ``False`` (nothing
        written) if the database was locked; any other error propagates."""
        try:
            self.conn.execute(sql, params)
        except sqlite3.Error as exc:
            if is_busy(exc):
                return False
            raise
        self.commits += 1
        return True

    def write(self, fn: Callable[[sqlite3.Connection], None]) -> bool:
        """Run ``fn`` in one write transaction and commit it. ``False`` (nothing written,
        rolled back) if the database was locked; any other error propagates."""
        try:
            transaction(self.conn, fn)
        except sqlite3.Error as exc:
            if is_busy(exc):
                return False  # the worker thread will write it instead
            raise
        self.commits += 1
        return True

    def close(self) -> None:
        self.conn.close()
