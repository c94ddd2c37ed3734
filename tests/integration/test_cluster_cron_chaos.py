# SPDX-License-Identifier: Apache-2.0
"""Cluster cron delivery modes across real processes (issue 23), on real SQLite,
PostgreSQL and Redis coordinators.

Three ``ActorSystem`` processes schedule the same every-second cron with a slow handler
(0.8 s). The node that is in the middle of a tick's ``receive`` is SIGKILLed (between
claim and ``receive`` returning); later another one, again mid-``receive``, is SIGSTOPped
past the delivery lease (2 s) and resumed. Over the run (``DURATION``, real seconds):

* ``delivery="at_least_once"``: no tick is lost (each instant has a ``receive`` that
  returned), the killed and the frozen node's ticks are delivered again by another node
  with a larger fence, fences of one instant never repeat, and the node never disturbed
  records ``claimed_elsewhere`` for the instants it did not deliver;
* ``delivery="at_most_once"``: no instant is delivered twice; the killed node's tick is
  lost, and the surviving nodes' history says ``claimed_elsewhere`` for it.

Real processes and real time are the point: bounded waits, outcomes asserted, not speed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import IO

import pytest
from tests.integration.test_cluster_processes import (
    WAIT,
    coordinator_url,  # noqa: F401  (the fixture: sqlite, postgres, redis)
    kill_all,
    spawn,
)
from tests.procs import ready_line

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Real seconds the three nodes run (shortened from the issue's 60 s: each backend and
#: mode runs it, on a busy 2-core machine).
DURATION = 24.0
DELAY = 0.8
DELIVERY_LEASE = 2.0  # the workers' Cluster(delivery_lease=...)


def _lines(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text().splitlines() if line.strip()]


def _wait_start(log: Path, names: tuple[str, ...], after: float) -> tuple[str, int, int]:
    """The first ``start`` by one of ``names`` for an instant at or after ``after`` (a
    tick whose ``receive`` is running now): the node, the instant and the fence. Any of
    them: which node wins each instant is a race (a node whose clock reads slightly
    ahead may win most of them)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        lines = _lines(log)
        for line in lines:
            started = line[0] == "start" and line[1] in names and int(line[2]) >= after
            if started and ["done", *line[1:]] not in lines:
                return line[1], int(line[2]), int(line[3])
        time.sleep(0.02)
    raise AssertionError(f"{names} started no tick within {WAIT} s: {_lines(log)[-20:]}")


def _run(
    url: str, delivery: str, tmp_path: Path
) -> tuple[list[list[str]], dict[str, int], dict[str, str]]:
    log = tmp_path / "deliveries.log"
    names = ("a", "b", "c")
    errs: dict[str, IO[bytes]] = {n: (tmp_path / f"{n}.stderr").open("w+b") for n in names}
    procs: dict[str, subprocess.Popen[str]] = {}
    marks: dict[str, int] = {}
    who: dict[str, str] = {}
    try:
        for name in names:
            procs[name] = spawn(
                "chaos", url, name, delivery, str(DELAY), str(log), stderr=errs[name]
            )
        for name, proc in procs.items():
            assert json.loads(ready_line(proc, f"chaos node {name}"))["event"] == "ready"
        started = time.time()
        marks["from"] = int(started) + 2
        time.sleep(2.0)
        # SIGKILL the node in the middle of a receive (claimed, not returned).
        who["killed"], marks["killed"], marks["killed_fence"] = _wait_start(log, names, started)
        procs[who["killed"]].send_signal(signal.SIGKILL)
        time.sleep(1.0)
        # SIGSTOP another one in the middle of a receive, past the delivery lease, then
        # resume it.
        alive = tuple(n for n in names if n != who["killed"])
        who["frozen"], marks["frozen"], marks["frozen_fence"] = _wait_start(log, alive, time.time())
        procs[who["frozen"]].send_signal(signal.SIGSTOP)
        time.sleep(DELIVERY_LEASE + 2.0)
        procs[who["frozen"]].send_signal(signal.SIGCONT)
        [who["calm"]] = [n for n in alive if n != who["frozen"]]
        time.sleep(max(0.0, started + DURATION - time.time()))
        marks["to"] = int(time.time()) - 1
        # Let the last ticks' receives return and their re-claims happen.
        time.sleep(DELIVERY_LEASE + DELAY + 2.0)
    except BaseException:
        for name, file in errs.items():
            file.seek(0)
            print(name, file.read()[-3000:].decode(errors="replace"))
        raise
    finally:
        kill_all(procs.values(), errs.values())
    return _lines(log), marks, who


def test_at_least_once_loses_no_tick_across_a_sigkill_and_a_zombie(
    coordinator_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    lines, marks, who = _run(coordinator_url, "at_least_once", tmp_path)
    starts: dict[int, list[tuple[str, int]]] = defaultdict(list)
    done: dict[int, list[tuple[str, int]]] = defaultdict(list)
    outcomes: dict[str, dict[int, str]] = defaultdict(dict)
    for line in lines:
        if line[0] == "outcome":
            outcomes[line[1]][int(line[2])] = line[3]
        else:
            (starts if line[0] == "start" else done)[int(line[2])].append((line[1], int(line[3])))
    window = range(marks["from"], marks["to"])
    lost = [s for s in window if not done[s]]
    assert lost == [], f"ticks lost: {lost}; marks {marks}"
    for second in window:
        fences = [fence for _, fence in starts[second]]
        assert len(fences) == len(set(fences)), (second, starts[second])
    # The killed node's tick and the frozen node's were delivered again, each by another
    # node with a larger fence than the delivery it replaced.
    for what in ("killed", "frozen"):
        node = who[what]
        second, fence = marks[what], marks[f"{what}_fence"]
        again = [(n, f) for n, f in done[second] if n != node]
        assert again, (what, second, starts[second], done[second])
        assert all(f > fence for _, f in again), (what, fence, again)
    # The node never disturbed accounts for every instant: delivered, or lost to another.
    calm = who["calm"]
    calm_started = {s for s, by in starts.items() for n, _ in by if n == calm}
    unaccounted = [s for s in window if s not in calm_started and s not in outcomes[calm]]
    assert unaccounted == [], (unaccounted, outcomes[calm])
    # What it did not deliver, it lost to another node, and its history says so.
    lost_by_calm = {s: outcomes[calm][s] for s in window if s not in calm_started}
    assert set(lost_by_calm.values()) <= {"claimed_elsewhere"}, lost_by_calm
    survivors = (calm, who["frozen"])
    elsewhere = [s for n in survivors for s, w in outcomes[n].items() if w == "claimed_elsewhere"]
    assert elsewhere  # (which node wins each instant is a race: no share is asserted)


def test_at_most_once_never_delivers_twice_and_the_lost_tick_is_in_the_history(
    coordinator_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    lines, marks, who = _run(coordinator_url, "at_most_once", tmp_path)
    starts: dict[int, list[str]] = defaultdict(list)
    outcomes: dict[str, dict[int, str]] = defaultdict(dict)
    for line in lines:
        if line[0] == "start":
            starts[int(line[2])].append(line[1])
        elif line[0] == "outcome":
            outcomes[line[1]][int(line[2])] = line[3]
    doubled = {s: who for s, who in starts.items() if len(who) > 1}
    assert doubled == {}, f"ticks delivered twice: {doubled}"
    killed = marks["killed"]
    assert starts[killed] == [who["killed"]]  # its receive never returned: the tick is lost
    assert outcomes[who["calm"]].get(killed) == "claimed_elsewhere"
    window = range(marks["from"], marks["to"])
    missed = [s for s in window if not starts[s]]
    assert len(missed) <= 2, missed  # at most one claimed-then-killed tick per victim
