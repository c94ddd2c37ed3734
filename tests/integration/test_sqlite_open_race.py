# SPDX-License-Identifier: Apache-2.0
"""Processes that open one new SQLite file at the same instant all succeed.

Regression for the ``tocsin run`` start-up flake (issue 13): two workers opened the
SQLite coordinator file together and one failed with "database is locked" at
``PRAGMA journal_mode = WAL``, which does not wait for ``busy_timeout``. Each round
forks a few processes that wait on a barrier, then open the same fresh file as a
coordinator and as a store; every one must open. Without the retry, about one round in
eight had a failure here, so 30 rounds miss it with a probability near 2%.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tocsin.cluster._sqlite import SQLiteCoordinator
from tocsin.stores._sqlite_engine import MAX_DELAY, retry_delays, set_wal_mode
from tocsin.stores.sqlite import SQLiteStore

#: Left out of `make check` (real processes); `make test` runs it.
pytestmark = pytest.mark.slow

ROUNDS = 30
PROCESSES = 4
#: Real seconds a round may take before it counts as hung (not a speed limit).
JOIN = 60.0


async def _open_both(directory: str) -> None:
    coordinator = SQLiteCoordinator(Path(directory) / "coordinator.db")
    store = SQLiteStore(str(Path(directory) / "store.db"))
    await coordinator.open()
    await store.open()
    await store.close()
    await coordinator.close()


def _opener(directory: str, barrier: Any, results: Any) -> None:
    try:
        barrier.wait(JOIN)
        asyncio.run(_open_both(directory))
    except BaseException as exc:  # the parent reports it
        results.put(f"{type(exc).__name__}: {exc}")
    else:
        results.put("ok")


@pytest.mark.integration
@pytest.mark.skipif(sys.platform == "win32", reason="forks")
def test_processes_opening_one_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    failures: list[str] = []
    for round_ in range(ROUNDS):
        directory = tmp_path / f"round-{round_}"
        directory.mkdir()
        barrier = context.Barrier(PROCESSES)
        results = context.Queue()
        procs = [
            context.Process(target=_opener, args=(str(directory), barrier, results))
            for _ in range(PROCESSES)
        ]
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=JOIN) for _ in procs]
        for proc in procs:
            proc.join(JOIN)
        failures += [f"round {round_}: {o}" for o in outcomes if o != "ok"]
    assert failures == []


class _BusyTwice:
    """Stands in for a connection whose file is busy for the first two attempts."""

    def __init__(self, error: sqlite3.OperationalError, fails: int) -> None:
        self.error, self.fails, self.calls = error, fails, 0

    def execute(self, sql: str) -> Any:
        assert sql == "PRAGMA journal_mode = WAL"
        self.calls += 1
        if self.calls <= self.fails:
            raise self.error
        return sqlite3.connect(":memory:").execute("SELECT 'wal'")


def _busy() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = 5
    return error


def test_a_busy_wal_switch_is_retried_until_it_succeeds() -> None:
    conn = _BusyTwice(_busy(), fails=2)
    assert set_wal_mode(conn, budget=1.0) == "wal"  # type: ignore[arg-type]
    assert conn.calls == 3


def test_a_wal_switch_busy_for_the_whole_budget_raises_the_busy_error() -> None:
    conn = _BusyTwice(_busy(), fails=10_000)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        set_wal_mode(conn, budget=0.01)  # type: ignore[arg-type]
    assert conn.calls == len(retry_delays(0.01)) + 1


def test_a_wal_switch_failing_for_another_reason_is_not_retried() -> None:
    conn = _BusyTwice(sqlite3.OperationalError("disk I/O error"), fails=1)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        set_wal_mode(conn, budget=1.0)  # type: ignore[arg-type]
    assert conn.calls == 1


def test_retry_delays_double_up_to_the_cap_and_fit_the_budget() -> None:
    delays = retry_delays(5.0)
    assert delays[:3] == [0.001, 0.002, 0.004]
    assert max(delays) == MAX_DELAY
    assert sum(delays) <= 5.0
    assert retry_delays(0.0) == [0.001]  # at least one retry
