# SPDX-License-Identifier: Apache-2.0
"""A graceful stop (SIGTERM, ``system.stop()``) of a cluster node loses no cron tick.

Three ``ActorSystem`` processes on one SQLite coordinator schedule the same every-second
``at_most_once`` cron (reference ``every-second``, the default ``claim_ahead`` of
0.25 s). Each round, two of them get SIGTERM 0.13 s before a whole second, inside the
window between the claim of that second's tick (asked 0.25 s ahead) and its delivery:
a node that won it ahead delivers it before it stops. Fresh nodes take their places (a
rolling restart). Every second of the run is delivered exactly once.

Real processes and real time are the point: every wait is bounded, and the test asserts
outcomes, never speed.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from tests.integration.test_cluster_processes import kill_all, spawn
from tests.procs import ready_line

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Real seconds a stopping node may take to exit (its stop waits at most 0.25 s for a
#: tick it won ahead; the rest is a busy 2-core machine).
EXIT_WAIT = 30.0
ROUNDS = 3


def _sleep_to_fraction(fraction: float) -> None:
    """Sleep until the wall clock's fractional second is ``fraction`` (0 <= it < 1)."""
    now = time.time()
    delay = (fraction - (now % 1.0)) % 1.0
    time.sleep(delay if delay > 0.05 else delay + 1.0)


def test_no_tick_is_lost_when_nodes_stop_gracefully_in_the_claim_ahead_window(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/coordinator.db"
    log = tmp_path / "deliveries.log"
    errs = []
    procs: dict[str, subprocess.Popen[str]] = {}
    every: list[subprocess.Popen[str]] = []

    def start(name: str) -> None:
        err = (tmp_path / f"{name}.stderr").open("wb")
        errs.append(err)
        proc = spawn("graceful", url, name, str(log), stderr=err)
        every.append(proc)
        assert json.loads(ready_line(proc, f"graceful node {name}"))["event"] == "ready"
        procs[name] = proc

    try:
        for name in ("a", "b", "c"):
            start(name)
        started = time.time()
        time.sleep(2.0)  # a lease renewal measured each node's offset: claims go ahead
        for round_ in range(ROUNDS):
            victims = sorted(procs)[:2]
            _sleep_to_fraction(0.87)  # after the claims (at .75), before the tick
            for name in victims:
                procs[name].terminate()  # SIGTERM: a graceful stop
            for name in victims:
                proc = procs.pop(name)
                out, _ = proc.communicate(timeout=EXIT_WAIT)
                assert proc.returncode == 0, out
                assert '"stopped"' in out
            for i, _ in enumerate(victims):
                start(f"n{round_}{i}")
            time.sleep(2.0)
        ended = time.time()
    finally:
        kill_all(every, errs)
    lines = [line.split() for line in log.read_text().splitlines()]
    delivered = [int(line[1]) for line in lines if line[0] != "outcome"]
    assert len(delivered) == len(set(delivered)), "a tick was delivered twice"
    lost = [line for line in lines if line[0] == "outcome" and line[3] != "claimed_elsewhere"]
    window = set(range(int(started) + 1, int(ended) - 1))
    missed = window - set(delivered)
    assert not missed, (sorted(missed), lost)
