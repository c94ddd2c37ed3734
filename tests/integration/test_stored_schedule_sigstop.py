# SPDX-License-Identifier: Apache-2.0
"""Stored schedules across three real processes (the store: PostgreSQL) on SQLite,
PostgreSQL and Redis coordinators, with the node in the middle of a run SIGSTOPped for
longer than its leases (``lease=3``, ``delivery_lease=2``), then SIGCONTed with its held
run released (woken, the node finds its lease lost and stops the shard's activation; the
run finishes first or is cut short, as timing falls):

* ``at_most_once``: no instant's handler starts twice: another node finds the frozen
  node's stored run started once the shard's lease lapses and does not run it again (its
  ledger row says ``failed``, interrupted, written by that node), and the frozen node,
  woken, starts no run another node had taken;
* ``at_least_once``: no instant is lost: the frozen run is run again by another node
  (the same stored run, or the instant re-claimed with a larger fence), and only runs the
  frozen node had started are run twice;
* either way the ledger holds exactly one row per instant.

The scenario and its checks are the SIGKILL test's (``test_stored_schedule_processes``),
the kill replaced by a freeze. Real processes and real time: bounded waits, outcomes
asserted, not speed.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.integration._stored_jobs import release_mark
from tests.integration.test_stored_schedule_processes import (
    coordinator,  # noqa: F401  (the fixture: sqlite, postgres, redis)
    scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LEASE = 3.0  # _stored_worker.py's Cluster(lease=...)
DELIVERY_LEASE = 2.0  # and delivery_lease=...
#: Real seconds the nodes run after the frozen one is woken (the instants checked:
#: those due until then).
AFTER_WAKE = 8.0


def _freeze(proc: subprocess.Popen[str], log: Path, node: str, second: int) -> None:
    proc.send_signal(signal.SIGSTOP)
    # Past its shard's lease and its claim's delivery lease: the scenario's length, not
    # a wait for an outcome.
    time.sleep(LEASE + DELIVERY_LEASE)
    # Released while stopped: the held run may finish as soon as the node runs again.
    Path(release_mark(str(log), node, second)).touch()
    proc.send_signal(signal.SIGCONT)
    time.sleep(AFTER_WAKE)


@pytest.mark.parametrize("delivery", ["at_most_once", "at_least_once"])
def test_three_nodes_one_frozen_past_its_lease_mid_run(
    coordinator: str,  # noqa: F811
    postgres_dsn: str,
    delivery: str,
    tmp_path: Path,
) -> None:
    scenario(coordinator, postgres_dsn, delivery, tmp_path, _freeze, resumed=True)
