# SPDX-License-Identifier: Apache-2.0
"""A node SIGSTOPped past its cluster lease, then SIGCONTed, on real SQLite, PostgreSQL
and Redis coordinators.

Three ``ActorSystem`` processes run two every-second crons at once: ``most``
(``at_most_once``) and ``least`` (``at_least_once``), each with a slow handler (0.6 s).
One node is frozen in the middle of a ``least`` tick's ``receive`` for longer than its
lease (3 s; the delivery lease is 2 s), then resumed. Over the run:

* ``most``: no instant is delivered twice (the frozen node's claims were its own; the
  instants it reaches late on waking are lost to the others);
* ``least``: no instant is lost (each has a ``receive`` that returned), and the frozen
  one was delivered again by another node with a larger fence;
* the fences refuse the stale node's writes: on waking it finds its lease lost
  (``leases_lost``) and its hold on the tick it was delivering refused
  (``claims_superseded``: its renewal or done step carried the old fence).

Real processes and real time: every wait is bounded, outcomes asserted, not speed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import IO, Any

import pytest
from tests.integration.test_cluster_processes import (
    WAIT,
    coordinator_url,  # noqa: F401  (the fixture: sqlite, postgres, redis)
    kill_all,
    spawn,
)
from tests.procs import ready_line

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Real seconds the three nodes run after the first tick.
DURATION = 16.0
DELAY = 0.6
LEASE = 3.0  # the workers' Cluster(lease=...)
DELIVERY_LEASE = 2.0  # and delivery_lease=...
NAMES = ("a", "b", "c")


def _lines(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text().splitlines() if line.strip()]


def _running_least(log: Path, after: float) -> tuple[str, int, int]:
    """A ``least`` tick whose ``receive`` is running now, for an instant at or after
    ``after``: its node, instant and fence."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        lines = _lines(log)
        for line in lines:
            running = ["done", *line[1:]] not in lines
            if line[0] == "start" and line[2] == "least" and int(line[3]) >= after and running:
                return line[1], int(line[3]), int(line[4])
        time.sleep(0.02)
    raise AssertionError(f"no least tick started within {WAIT} s: {_lines(log)[-20:]}")


def _wait_for_least(log: Path, window: range, instant: int, frozen: str) -> None:
    """Return once every ``least`` instant of ``window`` has a ``receive`` that returned
    and the frozen one has one on another node; or after ``WAIT`` real seconds, when the
    assertions that follow name what is missing. The outcome is waited for, never a guess
    of how long re-claims take (lease, handler, a loaded machine)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        done = {(line[1], int(line[3])) for line in _lines(log) if line[:3:2] == ["done", "least"]}
        seconds = {second for _, second in done}
        elsewhere = any(node != frozen and second == instant for node, second in done)
        if elsewhere and all(s in seconds for s in window):
            return
        time.sleep(0.05)


def _metrics(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """SIGTERM a node; its metrics line (bounded by the pipe's end: it exits at once)."""
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=WAIT)
    events: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines() if line]
    [metrics] = [e for e in events if e.get("event") == "metrics"]
    return metrics


def test_a_node_frozen_past_its_lease_neither_doubles_nor_loses_a_tick(
    coordinator_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    log = tmp_path / "deliveries.log"
    errs: dict[str, IO[bytes]] = {n: (tmp_path / f"{n}.stderr").open("w+b") for n in NAMES}
    procs: dict[str, subprocess.Popen[str]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    try:
        for name in NAMES:
            procs[name] = spawn("freeze", coordinator_url, name, str(DELAY), str(log),
                                stderr=errs[name])  # fmt: skip
        for name, proc in procs.items():
            assert json.loads(ready_line(proc, f"freeze node {name}"))["event"] == "ready"
        started = time.time()
        first = int(started) + 2
        time.sleep(2.0)
        frozen, instant, fence = _running_least(log, started)
        procs[frozen].send_signal(signal.SIGSTOP)
        time.sleep(LEASE + 2.0)  # past its lease, and the delivery lease of its tick
        procs[frozen].send_signal(signal.SIGCONT)
        time.sleep(max(0.0, started + DURATION - time.time()))
        last = int(time.time()) - 1
        _wait_for_least(log, range(first, last), instant, frozen)
        for name in NAMES:
            metrics[name] = _metrics(procs[name])
    except BaseException:
        for name, file in errs.items():
            file.seek(0)
            print(name, file.read()[-3000:].decode(errors="replace"))
        raise
    finally:
        kill_all(procs.values(), errs.values())

    starts: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)
    done: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)
    for kind, node, reference, second, fence_text in _lines(log):
        (starts if kind == "start" else done)[reference, int(second)].append(
            (node, int(fence_text))
        )
    window = range(first, last)
    doubled = {s: starts["most", s] for s in window if len(starts["most", s]) > 1}
    assert doubled == {}, f"at_most_once instants delivered twice: {doubled}"
    lost = [s for s in window if not done["least", s]]
    assert lost == [], f"at_least_once instants lost: {lost}"
    for s in window:  # each delivery of one instant has a fence of its own
        fences = [f for _, f in starts["least", s]]
        assert len(fences) == len(set(fences)), (s, starts["least", s])
    again = [(n, f) for n, f in done["least", instant] if n != frozen]
    assert again, ("the frozen tick was not delivered again", starts["least", instant])
    assert all(f > fence for _, f in again), (fence, again)
    assert metrics[frozen]["leases_lost"] >= 1, metrics
    assert metrics[frozen]["claims_superseded"] >= 1, metrics
    assert sum(m["claims_reclaimed"] for n, m in metrics.items() if n != frozen) >= 1, metrics
