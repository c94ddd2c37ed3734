# SPDX-License-Identifier: Apache-2.0
"""Stored schedules across three real processes on SQLite, PostgreSQL and Redis
coordinators (the store: PostgreSQL), with the node in the middle of a run SIGKILLed:

* every instant is decided once and its job run stored (a durable job run); another node
  finds the killed node's run once its shard's lease lapses;
* ``at_most_once``: no instant's handler starts twice: the killed run is not run again,
  its ledger row says ``failed`` (interrupted); ``at_least_once``: no instant is lost:
  the killed run is run again (the same stored run, or the instant re-claimed with a
  larger fence), and only it ran twice;
* either way the ledger holds exactly one row per instant, written by the node that
  decided it, then kept by the worker that ran it.

Real processes and real time are the point: bounded waits, outcomes asserted, not speed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import IO, Any

import pytest
from tests.integration.test_cluster_processes import kill_all
from tests.procs import ready_line

from tocsin.jobs._worker import INTERRUPTED
from tocsin.stores.postgres import PostgresStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WORKER = Path(__file__).with_name("_stored_worker.py")
ROOT = Path(__file__).resolve().parents[2]
#: Real seconds the nodes run after the kill.
AFTER_KILL = 10.0
DELAY = 0.6
DELIVERY_LEASE = 2.0
LEASE = 3.0
WAIT = 30.0


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def coordinator(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/coordinator.db"
    if request.param == "postgres":
        dsn: str = request.getfixturevalue("postgres_dsn")
        return f"{dsn}?schema=c_{uuid.uuid4().hex[:12]}"
    url: str = request.getfixturevalue("redis_url")
    return f"{url}?prefix=s{uuid.uuid4().hex[:12]}:"


def _lines(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text().splitlines() if line.strip()]


def _spawn(*args: str, stderr: IO[bytes]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
    )


def _running(log: Path, after: float) -> tuple[str, int, int]:
    """A node in the middle of a run (started, not done) of an instant >= ``after``."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        lines = _lines(log)
        for line in lines:
            if line[0] == "start" and int(line[2]) >= after and ["done", *line[1:]] not in lines:
                return line[1], int(line[2]), int(line[3])
        time.sleep(0.02)
    raise AssertionError(f"no run started within {WAIT} s: {_lines(log)[-20:]}")


async def _ledger(store_url: str) -> list[Any]:
    dsn, _, schema = store_url.partition("?schema=")
    store = PostgresStore(dsn, schema=schema)
    await store.open()
    try:
        return await store.schedule_ticks("every-second")
    finally:
        await store.close()


def _run(coordinator: str, store: str, delivery: str, tmp_path: Path) -> tuple[Any, ...]:
    log = tmp_path / "runs.log"
    names = ("a", "b", "c")
    errs = {n: (tmp_path / f"{n}.stderr").open("w+b") for n in names}
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for name in names:
            procs[name] = _spawn(
                coordinator, store, name, delivery, str(DELAY), str(log), stderr=errs[name]
            )
        for name, proc in procs.items():
            assert json.loads(ready_line(proc, f"stored node {name}"))["event"] == "ready"
        start = time.time() + 1.0
        killed, second, fence = _running(log, start)
        procs[killed].send_signal(signal.SIGKILL)
        time.sleep(AFTER_KILL)
        end = int(time.time()) - 1
        time.sleep(DELIVERY_LEASE + DELAY + 2.0)  # re-claims of the last instants land
    except BaseException:
        for name, file in errs.items():
            file.seek(0)
            print(name, file.read()[-3000:].decode(errors="replace"))
        raise
    finally:
        kill_all(procs.values(), errs.values())
    return _lines(log), killed, second, fence, int(start), end


@pytest.mark.parametrize("delivery", ["at_most_once", "at_least_once"])
def test_three_nodes_one_killed_mid_run(
    coordinator: str, postgres_dsn: str, delivery: str, tmp_path: Path
) -> None:
    store = f"{postgres_dsn}?schema=s_{uuid.uuid4().hex[:12]}"
    lines, killed, second, fence, first, end = _run(coordinator, store, delivery, tmp_path)
    starts: dict[int, list[tuple[str, int]]] = defaultdict(list)
    done: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for kind, node, instant, fence_text in lines:
        (starts if kind == "start" else done)[int(instant)].append((node, int(fence_text)))
    window = range(first, end)
    doubled = {s: by for s, by in starts.items() if len(by) > 1}
    ledger = {round(r.instant): r for r in asyncio.run(_ledger(store))}
    row = ledger[second]
    assert row.started is not None
    if delivery == "at_most_once":
        # Another node found the killed node's stored run once the shard's lease lapsed,
        # already started: it did not run it again, and its row records the loss.
        assert doubled == {}, f"instants run twice: {doubled}"
        assert [n for n, _ in starts[second]] == [killed], starts[second]
        assert done[second] == []
        assert (row.outcome, row.detail) == ("failed", INTERRUPTED), row
    else:
        # The killed node's run is run again by another node: the same stored run, or
        # the instant re-claimed with a larger fence. The other instants ran once each.
        assert set(doubled) <= {second}, f"instants run twice: {doubled}"
        again = [(n, f) for n, f in done[second] if n != killed]
        assert again, (second, starts[second], done[second])
        assert all(f >= fence for _, f in again), (fence, again)
        assert row.outcome in ("delivered", "retried"), row
    # Runs of one schedule run one after another on its shard: while the killed node's
    # shard lease runs out (LEASE), BUFFER_ONE keeps one instant waiting and records the
    # others skipped_overlap. Nothing else goes without a finished run.
    unrun = {
        s: ledger[s].outcome if s in ledger else None
        for s in window
        if not done[s] and not (delivery == "at_most_once" and s == second)
    }
    lost = {
        s: what
        for s, what in unrun.items()
        if what != "skipped_overlap" or not second < s <= second + LEASE + DELAY + 2
    }
    assert lost == {}, f"instants lost: {lost} (killed at {second})"
    rows = asyncio.run(_ledger(store))
    instants = [round(r.instant) for r in rows]
    assert len(instants) == len(set(instants))  # one row per instant
    assert set(window) <= set(instants), sorted(set(window) - set(instants))
    assert {r.node for r in rows} <= {"a", "b", "c"}
