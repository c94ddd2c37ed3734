# SPDX-License-Identifier: Apache-2.0
"""A change made on one node reaches the others through the store's change watch, not the
backstop: PostgreSQL's NOTIFY at once, SQLite's data_version look within a second; real
time, two nodes of one cluster."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from tests.eventually import eventually

from tocsin import ActorSystem, Cluster
from tocsin.schedules import Interval, Schedule

RECORD = "tests.schedules.jobs_for_tests.record"
#: Real seconds a change may take to reach the other node (NOTIFY is at once; bounded).
WAIT = 5.0


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'app.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    return f"{dsn}?schema=n_{uuid.uuid4().hex[:12]}"


async def test_a_pause_and_an_add_on_one_node_reach_the_other_through_the_change_watch(
    store: str,
) -> None:
    url = f"memory://{uuid.uuid4().hex}"
    a = ActorSystem("a", store=store, cluster=Cluster(url, lease=30.0))
    b = ActorSystem("b", store=store, cluster=Cluster(url, lease=30.0))
    async with a, b:
        await a.schedules.add(Schedule("r", Interval(3600), RECORD))
        runner = b._runner  # the node's own view of the stored schedules
        assert runner is not None

        # Within WAIT real seconds: well before the 60 s backstop.
        await eventually(lambda: "r" in runner.entries, "node b saw the add", within=WAIT)
        await a.schedules.pause("r", note="OPS-1")
        await eventually(lambda: runner.entries["r"].paused, "node b saw the pause", within=WAIT)
