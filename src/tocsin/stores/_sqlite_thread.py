# SPDX-License-Identifier: Apache-2.0
"""The SQLite worker thread (store and coordinator): one connection, jobs in arrival
order, group commit.

Everything that may wait runs here, never on the event loop: a write whose database is
locked by another connection (it waits up to ``busy_timeout``), a commit that fsyncs
(``synchronous=FULL``), a large batch, an unbounded listing, a WAL checkpoint.

Group commit. Writes that queue up while the thread is busy are committed together: one
``BEGIN IMMEDIATE … COMMIT`` wrapping one ``SAVEPOINT`` per job. A job whose statements
fail is rolled back to its savepoint alone and fails; the others still commit. Each job's
future resolves only after its data is committed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar, final

from .._idle import real_io
from ._sqlite_engine import transaction

__all__ = ["Job", "Worker", "in_savepoints"]

T = TypeVar("T")


@final
class Job:
    """One unit of work for the worker thread (slotted: one per call sent to it)."""

    __slots__ = ("fn", "future", "write")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any], *, write: bool) -> None:
        self.fn = fn
        self.write = write
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


_STOP: Final = Job(lambda conn: None, write=False)


@final
class Worker:
    """The thread owning one connection. ``commits`` counts the transactions it committed
    (a group of concurrent writes counts once)."""

    def __init__(self, name: str, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        #: Resolved as the thread's last act; never cancellable (``stop`` relies on it).
        self.stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.stopped.set_running_or_notify_cancel()
        self.commits = 0
        self.thread = threading.Thread(
            target=self._work,
            name=name,
            daemon=True,  # a forgotten close() must not hang interpreter exit
        )

    def start(self) -> None:
        self.thread.start()

    def submit(self, fn: Callable[[sqlite3.Connection], Any], *, write: bool) -> Job:
        job = Job(fn, write=write)
        self._jobs.put(job)
        return job

    async def call(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """Run ``fn(conn)`` on the thread and return its result (``None`` for a write,
        which runs in a transaction, possibly grouped with others). Cancelling the wait
        withdraws a job the thread has not started; a started one completes."""
        with real_io():  # the thread's work is invisible to the event loop
            result: T = await asyncio.wrap_future(self.submit(fn, write=write).future)
        return result

    def stop(self) -> None:
        """Ask the thread to finish every job already queued, close and exit."""
        self._jobs.put(_STOP)

    async def close(self) -> None:
        """:meth:`stop`, then wait until the thread has closed its connection and exited."""
        self.stop()  # after every job already queued: they finish first
        with real_io():
            await asyncio.shield(asyncio.wrap_future(self.stopped))
        # `stopped` is the thread's last act; the join waits out its final microseconds,
        # so that "closed" really means "no thread left".
        self.thread.join()

    def _work(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            if not self.ready.set_running_or_notify_cancel():
                return  # open() was cancelled before we started
            try:
                conn = self._connect()
            except BaseException as exc:
                self.ready.set_exception(exc)
                return
            self.ready.set_result(None)
            self._serve(conn)
        finally:
            if conn is not None:
                conn.close()
            self.stopped.set_result(None)

    def _serve(self, conn: sqlite3.Connection) -> None:
        jobs = self._jobs
        carry: Job | None = None
        while True:
            job = carry if carry is not None else jobs.get()
            carry = None
            if job is _STOP:
                return
            if not job.write:
                _run(job, conn)
                # Not held while waiting for the next job: its future keeps the result
                # (a poll's rows: megabytes) alive until then.
                del job
                continue
            group = [job]
            while True:  # group commit: take every write already waiting, in order
                try:
                    nxt = jobs.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP or not nxt.write:
                    carry = nxt  # a read waits for the group: it must see those writes
                    break
                group.append(nxt)
            self._commit(conn, group)

    def _commit(self, conn: sqlite3.Connection, group: list[Job]) -> None:
        live = [job for job in group if job.future.set_running_or_notify_cancel()]
        if not live:
            return
        if len(live) == 1:
            self._commit_one(conn, live[0])
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            outcomes = in_savepoints(conn, [job.fn for job in live])
            conn.execute("COMMIT")
            self.commits += 1
        except BaseException as exc:
            # BEGIN/SAVEPOINT/COMMIT itself failed (disk full, I/O error, busy timeout):
            # nothing of this group is committed, so every call in it fails.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for job in live:
                job.future.set_exception(exc)
            return
        for job, outcome in zip(live, outcomes, strict=True):
            if outcome is None:
                job.future.set_result(None)
            else:
                job.future.set_exception(outcome)

    def _commit_one(self, conn: sqlite3.Connection, job: Job) -> None:
        """A group of one (the common case when writes do not overlap): no savepoint is
        needed to isolate it from others, which saves two statements per commit."""
        try:
            transaction(conn, job.fn)
        except BaseException as exc:
            job.future.set_exception(exc)
            return
        self.commits += 1
        job.future.set_result(None)


def in_savepoints(
    conn: sqlite3.Connection, fns: list[Callable[[sqlite3.Connection], Any]]
) -> list[BaseException | None]:
    """Run each of ``fns`` in its own savepoint inside the caller's transaction (a group
    commit): one whose statements fail is rolled back alone, and its error is its
    outcome; the others' outcomes are ``None``."""
    outcomes: list[BaseException | None] = []
    for fn in fns:
        conn.execute("SAVEPOINT apply")
        try:
            fn(conn)
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK TO apply")
            outcomes.append(exc)
        else:
            outcomes.append(None)
        conn.execute("RELEASE apply")
    return outcomes


def _run(job: Job, conn: sqlite3.Connection) -> None:
    if not job.future.set_running_or_notify_cancel():
        return
    try:
        result = job.fn(conn)
    except BaseException as exc:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)
