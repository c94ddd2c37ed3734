# SPDX-License-Identifier: Apache-2.0
"""Switching a SQLite connection to WAL mode when other processes open the file too.

``PRAGMA journal_mode = WAL`` can fail with ``SQLITE_BUSY`` ("database is locked") at
once, whatever ``busy_timeout`` says: the switch reads the file under a SHARED lock and
then needs an EXCLUSIVE one, and SQLite does not wait for a lock upgrade another
connection might be waiting on too (waiting could deadlock; it returns BUSY instead).
Two processes opening a *new* file at the same instant hit it: one of them failed its
start-up (issue 13: ``tocsin run`` workers joining the SQLite coordinator together, one
exited 0.0 s after its start about once in 30 runs on a busy machine; 6 rounds in 50 of
four processes racing in a plain ``sqlite3`` script).

The fix is to retry the switch itself: by then the other connection has finished its
own switch (it holds the lock for microseconds), and the pragma finds WAL already set.
Delays are a fixed doubling series, not clock readings (only :mod:`tocsin.clock` reads
time), summing to about the connection's busy timeout.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Final

__all__ = ["FIRST_DELAY", "MAX_DELAY", "retry_delays", "set_wal_mode"]

#: Seconds before the first retry, doubling up to :data:`MAX_DELAY`.
FIRST_DELAY: Final = 0.001
MAX_DELAY: Final = 0.05


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
    return "locked" in str(exc) or "busy" in str(exc)


def retry_delays(budget: float) -> list[float]:
    """The sleeps between attempts: doubling from :data:`FIRST_DELAY`, capped at
    :data:`MAX_DELAY`, summing to at most ``budget`` seconds (at least one retry)."""
    delays: list[float] = []
    delay, total = FIRST_DELAY, 0.0
    while not delays or total + delay <= budget:
        delays.append(delay)
        total += delay
        delay = min(MAX_DELAY, delay * 2)
    return delays


def set_wal_mode(conn: sqlite3.Connection, *, budget: float) -> str:
    """Run ``PRAGMA journal_mode = WAL`` on ``conn``, retrying while the file is busy.

    Blocks the calling thread (up to about ``budget`` seconds): call it where the
    connection is opened, off the event loop.

    Returns:
        The journal mode now in force (``"wal"``; ``"memory"`` for ``:memory:``).

    Raises:
        sqlite3.Error: the switch failed for another reason than a busy file, or the
            file stayed busy for ``budget`` seconds.
    """
    pause = threading.Event()  # never set: wait() is a sleep that reads no clock
    for delay in [*retry_delays(budget), None]:
        try:
            row = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if delay is None or not _is_busy(exc):
                raise
            pause.wait(delay)
            continue
        return str(row[0]) if row else ""
    raise AssertionError("unreachable")  # pragma: no cover
