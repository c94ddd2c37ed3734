# SPDX-License-Identifier: Apache-2.0
"""How tocsin opens and calls SQLite: the one engine under the SQLite store and the SQLite
coordinator (``cluster/_sqlite.py``, through :mod:`tocsin.stores._spi`).

Two connections per file, one rule: **what can wait runs on a worker thread; what cannot
wait and is small runs on the loop thread.**

* :func:`open_connection` opens the worker thread's connection: ``busy_timeout`` of
  :data:`BUSY_TIMEOUT_MS`, WAL mode with the open-race retry (:func:`set_wal_mode`), the
  caller's ``synchronous`` and page cache, then the caller's schema in one ``BEGIN
  IMMEDIATE`` transaction (processes opening a new file at once create it in turn).
* :class:`LoopConnection` is the loop-side one: ``busy_timeout = 0``, so it never waits
  for a lock; a locked file answers :data:`BUSY` at once and the caller sends the call to
  the worker thread (:class:`~tocsin.stores._sqlite_thread.Worker`), which may wait.

Why a loop-side connection at all. On a VM, handing a call to a thread and getting the
answer back costs about 130–250 µs (two thread wake-ups; ``bench/durable.py``'s notes),
while a point read on SQLite costs ~4 µs and a one-row commit in WAL mode with
``synchronous=NORMAL`` ~20 µs (no fsync: WAL commits at NORMAL only append to the log).
Running those on the loop thread blocks it for less time than the hand-off alone would.

One busy timeout: 5 s, for the store and the coordinator alike (they had 5 s and 10 s).
A lock is held for microseconds (every transaction of both is one short step), so a wait
that long means a holder that is frozen or stuck, and waiting longer only delays the
error. For the coordinator it is also the bound that fits the lease: with the default
10 s lease renewed every ``lease/3``, a renewal that waited 10 s could not fail before
the lease was lost, while one that fails after 5 s leaves the next renewal inside it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar, final

from ._files import check_owned_for_writing, create_private_file

__all__ = [
    "BUSY",
    "BUSY_TIMEOUT_MS",
    "FIRST_DELAY",
    "MAX_DELAY",
    "Busy",
    "LoopConnection",
    "execute_script",
    "is_busy",
    "open_connection",
    "retry_delays",
    "set_wal_mode",
    "transaction",
]

T = TypeVar("T")

#: How long a worker thread's write waits for another connection holding the file's write
#: lock (the CLI, another process of ``tocsin run``) before failing with "database is
#: locked". The one busy timeout of every tocsin SQLite file (see the module docstring).
BUSY_TIMEOUT_MS: Final = 5_000

#: SQLite's primary result codes for "someone else holds the lock" (the low byte of an
#: extended code such as SQLITE_BUSY_SNAPSHOT).
_BUSY_CODES: Final = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED


def is_busy(exc: sqlite3.Error) -> bool:
    """True if ``exc`` means "locked by another connection, try again later"."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _BUSY_CODES


@final
class Busy:
    """The type of :data:`BUSY`: what a loop-side call answers instead of waiting."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "BUSY"


#: "The file was locked; nothing was done": run the call on the worker thread instead.
BUSY: Final = Busy()


def transaction(
    conn: sqlite3.Connection,
    fn: Callable[[sqlite3.Connection], T],
    *,
    begin: str = "BEGIN IMMEDIATE",
) -> T:
    """``begin``, ``fn(conn)``, ``COMMIT`` and ``fn``'s result; on any error, roll back and
    re-raise.

    The one transaction shape of the worker (a group of one), the loop-side connection and
    the coordinator's steps (``begin="BEGIN"`` for a read). A failed ``BEGIN`` leaves
    nothing to roll back.
    """
    conn.execute(begin)
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a schema script statement by statement inside the caller's transaction
    (``executescript`` would commit it first)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""


# --- WAL mode, when other processes open the file too ------------------------------------
#
# ``PRAGMA journal_mode = WAL`` can fail with ``SQLITE_BUSY`` ("database is locked") at
# once, whatever ``busy_timeout`` says: the switch reads the file under a SHARED lock and
# then needs an EXCLUSIVE one, and SQLite does not wait for a lock upgrade another
# connection might be waiting on too (waiting could deadlock; it returns BUSY instead).
# Two processes opening a *new* file at the same instant hit it: one of them failed its
# start-up (issue 13: ``tocsin run`` workers joining the SQLite coordinator together, one
# exited 0.0 s after its start about once in 30 runs on a busy machine; 6 rounds in 50 of
# four processes racing in a plain ``sqlite3`` script).
#
# The fix is to retry the switch itself: by then the other connection has finished its
# own switch (it holds the lock for microseconds), and the pragma finds WAL already set.
# Delays are a fixed doubling series, not clock readings (only :mod:`tocsin.clock` reads
# time), summing to about the connection's busy timeout.

#: Seconds before the first retry, doubling up to :data:`MAX_DELAY`.
FIRST_DELAY: Final = 0.001
MAX_DELAY: Final = 0.05


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
            if delay is None or not is_busy(exc):
                raise
            pause.wait(delay)
            continue
        return str(row[0]) if row else ""
    raise AssertionError("unreachable")  # pragma: no cover


# --- opening --------------------------------------------------------------------------


def _connect(path: str) -> sqlite3.Connection:
    # Files are ours (stores/_files.py): created 0600 before SQLite sees them (its -wal
    # and -shm take that mode), never through a symlink, never by another user.
    create_private_file(path)
    check_owned_for_writing(path)
    # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never implicit.
    # check_same_thread=False: a connection may be opened in one task and used from another
    # loop in the same thread (asyncio.run twice); it is never used from two threads at once.
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def open_connection(
    path: str,
    *,
    synchronous: str,
    cache_kib: int | None = None,
    check: Callable[[sqlite3.Connection], object] | None = None,
    schema: Callable[[sqlite3.Connection], object] | None = None,
) -> sqlite3.Connection:
    """Open the worker thread's connection to ``path`` the tocsin way.

    In order: ``busy_timeout`` = :data:`BUSY_TIMEOUT_MS`; ``check(conn)`` (before anything
    is written: the coordinator refuses a file that is not its own here, so WAL mode is
    never set on another application's database); WAL mode, retried while another process
    opens the file (:func:`set_wal_mode`; ``:memory:`` stays ``"memory"``);
    ``synchronous``; ``cache_size`` (SQLite's negative "KiB" form) when given; then
    ``schema(conn)`` in one ``BEGIN IMMEDIATE`` transaction. Blocks (call it off the loop).

    Raises:
        sqlite3.Error, OSError: the file cannot be opened, switched or given its schema
            (the connection is closed again); whatever ``check`` or ``schema`` raise.
    """
    conn = _connect(path)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if check is not None:
            check(conn)
        set_wal_mode(conn, budget=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        if cache_kib is not None:
            conn.execute(f"PRAGMA cache_size = {int(cache_kib)}")
        if schema is not None:
            transaction(conn, schema)
    except BaseException:
        conn.close()
        raise
    return conn


@final
class LoopConnection:
    """A connection used only from the event loop thread; calls answer :data:`BUSY` (or
    ``None``/``False``) instead of waiting when the database is locked.

    What makes it safe to run on the loop thread:

    * ``busy_timeout = 0``: it never waits for a lock (see the module docstring).
    * ``synchronous = NORMAL``: its commits in WAL mode never fsync. A store at
      ``synchronous=FULL`` sends every write to the worker thread instead.
    * ``autocheckpoint=False`` (the store): its commits never run a checkpoint (which
      fsyncs); the owner asks the worker thread for checkpoints instead. The coordinator,
      whose file stays small, keeps SQLite's automatic checkpoint.
    * Only bounded work comes here: point reads, reads with a ``LIMIT``, small batches.

    Open it after the worker's connection: that one sets WAL mode (kept in the file) and
    creates the schema, so this one finds both.
    """

    __slots__ = ("commits", "conn")

    def __init__(
        self, path: str, *, cache_kib: int | None = None, autocheckpoint: bool = True
    ) -> None:
        conn = _connect(path)
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            if not autocheckpoint:
                conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute("PRAGMA synchronous = NORMAL")
            if cache_kib is not None:
                conn.execute(f"PRAGMA cache_size = {int(cache_kib)}")
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        #: Transactions committed on this connection (by :meth:`write_one`/:meth:`write`).
        self.commits = 0

    def attempt(self, fn: Callable[[sqlite3.Connection], T]) -> T | Busy:
        """``fn(conn)``'s result, or :data:`BUSY` if the database was locked (then ``fn``
        must leave nothing done: a statement in autocommit, or a :func:`transaction`)."""
        try:
            return fn(self.conn)
        except sqlite3.Error as exc:
            if is_busy(exc):
                return BUSY
            raise

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
