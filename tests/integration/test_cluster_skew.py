# SPDX-License-Identifier: Apache-2.0
"""Cluster time across real processes (issue 20, item 5): a node whose clock is 30 s off
(libfaketime, Debian's ``faketime``) measures its offset to the coordinator's clock and
follows it, so an every-second cluster cron on two nodes delivers each instant once, on
the coordinator's clock (before the fix the fast node delivered every tick 30 s early and
won every claim).

Real processes, a real Redis or PostgreSQL coordinator, real time: bounded waits,
outcomes asserted (no instant twice or missing, none early, the offset reported), never
speed beyond a generous lateness bound that a 30 s skew would break.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import pytest
from tests.procs import close_pipes, ready_line

WORKER = Path(__file__).with_name("_skew_worker.py")
ROOT = Path(__file__).resolve().parents[2]
#: libfaketime's preload library (Debian: /usr/lib/<triplet>/faketime/).
LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), None)
#: Seconds the cron runs with both nodes up.
RUN = 8.0
LEASE = 3.0
MAX_SKEW = 1.0
#: Seconds after its instant by which a tick must have reached its actor, on the
#: coordinator's clock: a busy 2-core machine is slow, not 30 s slow.
LATE = 5.0
#: The cluster's default poll interval with LEASE (``min(1.0, lease)``).
POLL_INTERVAL = 1.0
#: Seconds a busy 2-core machine may add to the failover bound (a 30 s skew is far beyond).
SLACK = 3.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.skipif(
        LIBFAKETIME is None and os.environ.get("TOCSIN_REQUIRE_FAKETIME") != "1",
        reason="libfaketime not installed (apt-get install faketime)",
    ),
]


@pytest.fixture(params=["redis", "postgres"])
def coordinator_url(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        dsn: str = request.getfixturevalue("postgres_dsn")
        return f"{dsn}?schema=s_{uuid.uuid4().hex[:12]}"
    url: str = request.getfixturevalue("redis_url")
    return f"{url}?prefix=s{uuid.uuid4().hex[:12]}:"


def spawn(
    url: str, name: str, log: Path, stderr: IO[bytes], skew: int, *more: str
) -> subprocess.Popen[str]:
    """A node (``_skew_worker.py``): ``cron`` mode, or the mode and arguments in ``more``,
    with its wall clock ``skew`` seconds off."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    if skew:
        assert LIBFAKETIME is not None, "TOCSIN_REQUIRE_FAKETIME=1 but no libfaketime.so.1"
        # Wall time only: the event loop's monotonic clock stays true.
        env |= {
            "LD_PRELOAD": LIBFAKETIME,
            "FAKETIME": f"{skew:+d}",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }
    return subprocess.Popen(
        [sys.executable, str(WORKER), *(more or ("cron", url, name, str(LEASE), str(log)))],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
    )


def _stop(procs: Sequence[subprocess.Popen[str]], files: Sequence[IO[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        close_pipes(proc)
    for file in files:
        file.close()


def _tail(path: Path) -> str:
    return path.read_bytes()[-4000:].decode(errors="replace")


@pytest.mark.parametrize("skew", [30, -30])
def test_a_node_30_s_off_delivers_each_cron_instant_once_on_the_coordinators_clock(
    coordinator_url: str, skew: int, tmp_path: Path
) -> None:
    log = tmp_path / "deliveries.log"
    errs = [(tmp_path / f"{name}.stderr").open("wb") for name in ("a", "b")]
    a = spawn(coordinator_url, "a", log, errs[0], 0)
    b = spawn(coordinator_url, "b", log, errs[1], skew)
    offsets: list[dict[str, Any]] = []
    try:
        for name, proc in (("a", a), ("b", b)):
            line = ready_line(proc, f"node {name}")
            assert line, f"node {name} exited:\n{_tail(tmp_path / f'{name}.stderr')}"
            assert json.loads(line)["event"] == "ready", line
        deadline = time.monotonic() + RUN
        while time.monotonic() < deadline:  # b's offset lines, one per renewal period
            offsets.append(json.loads(ready_line(b, "node b's offset")))
    finally:
        _stop([a, b], errs)

    # The skewed node really ran 30 s off, and measured it (sign: coordinator - own).
    last = offsets[-1]
    assert last["event"] == "offset"
    assert abs(last["wall"] - time.time() - skew) < 5, last
    assert abs(last["offset"] + skew) < MAX_SKEW, offsets

    deliveries = [line.split() for line in log.read_text().splitlines()]
    instants = sorted(float(instant) for _, instant, _ in deliveries)
    assert instants, "no tick delivered"
    assert len(instants) == len(set(instants)), "an instant delivered twice"
    first, final = round(instants[0]), round(instants[-1])
    assert [round(i) for i in instants] == list(range(first, final + 1)), "an instant missed"
    assert final - first >= RUN - 2
    for node, instant, now in deliveries:
        lateness = float(now) - float(instant)  # on the coordinator's clock
        assert -MAX_SKEW <= lateness <= LATE, (node, instant, now, skew)
    assert {node for node, _, _ in deliveries} <= {"a", "b"}


@pytest.mark.parametrize("skew", [30, -30])
def test_a_dead_skewed_nodes_durable_tasks_run_elsewhere_within_lease_and_poll_interval(
    coordinator_url: str, skew: int, tmp_path: Path
) -> None:
    # Issue 20: after a node 30 s fast died, its identity's `every` task waited 30.5 s
    # (its due times were written on its own clock), against the bound of lease +
    # poll_interval. SIGKILL the skewed node: its identities tick on the survivor within
    # that bound (plus slack for a busy machine), no count written twice.
    log, store = tmp_path / "ticks.log", f"sqlite:///{tmp_path}/store.db"
    errs = [(tmp_path / f"{name}.stderr").open("wb") for name in ("a", "b")]
    args = {n: ("durable", coordinator_url, store, n, str(LEASE), str(log)) for n in "ab"}
    b = spawn(coordinator_url, "b", log, errs[1], skew, *args["b"], "0")
    a = spawn(coordinator_url, "a", log, errs[0], 0, *args["a"], "2")
    try:
        for name, proc in (("b", b), ("a", a)):
            line = ready_line(proc, f"node {name}")
            assert line, f"node {name} exited:\n{_tail(tmp_path / f'{name}.stderr')}"
        time.sleep(4.0)  # a few ticks of every identity, on its owner
        b.kill()
        b.wait(timeout=30)
        killed = time.time()  # this machine's clock: the coordinator's (same machine)
        victims = {line.split()[1] for line in log.read_text().splitlines() if line[0] == "b"}
        assert len(victims) == 2, log.read_text()
        deadline = time.monotonic() + 30.0
        resumed: dict[str, float] = {}
        while len(resumed) < len(victims) and time.monotonic() < deadline:
            time.sleep(0.2)
            for node, identity, _, now in (line.split() for line in log.read_text().splitlines()):
                if node == "a" and identity in victims and float(now) > killed:
                    resumed.setdefault(identity, float(now))
    finally:
        _stop([a, b], errs)
    assert sorted(resumed) == sorted(victims), log.read_text()
    bound = LEASE + POLL_INTERVAL + SLACK
    for identity, at in resumed.items():
        assert at - killed <= bound, (identity, at - killed, skew)
    counts = [tuple(line.split()[1:3]) for line in log.read_text().splitlines()]
    assert len(counts) == len(set(counts)), "a count written twice"
