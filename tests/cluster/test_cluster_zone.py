# SPDX-License-Identifier: Apache-2.0
"""Cluster cron honours ``ActorSystem(timezone=...)`` (issue 19 item 7).

Every member evaluates cron in the system's zone, recorded with its lease; a node whose
zone differs from the live members' refuses to join (``TimezoneMismatchError``), and
coordinator tables made before the zone was recorded are migrated in place.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    Cluster,
    ManualClock,
    ReceiveContext,
    Remoting,
    TimezoneMismatchError,
)
from tocsin.cluster._sqlite import SQLiteCoordinator
from tocsin.cron._zones import same_zone

SECRET = b"cluster-zone-test-secret"
# A winter day: Paris is UTC+1, so 02:00 Paris is 01:00 UTC.
START = datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC)


class Stamp(Actor):
    """Records (node, wall time) of every message."""

    def __init__(self, log: list[tuple[str, datetime]], node: str) -> None:
        self.log = log
        self.node = node

    async def receive(self, ctx: ReceiveContext) -> None:
        self.log.append((self.node, datetime.fromtimestamp(ctx.system.clock.wall(), UTC)))


async def test_a_paris_zone_cluster_fires_at_two_in_paris_once_cluster_wide() -> None:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    log: list[tuple[str, datetime]] = []
    systems = [
        # A long lease: a day of renewals is all this simulation would otherwise cost.
        ActorSystem(n, clock=clock, timezone="Europe/Paris", cluster=Cluster(url, lease=60.0))
        for n in ("a", "b")
    ]
    try:
        for system in systems:
            await system.start()
            pid = await system.spawn(partial(Stamp, log, system.name), "stamp")
            await system.schedule_cron("nightly", pid, "0 0 2 * * ?", reference="nightly")
        info = next(i for i in systems[0].list_schedules() if i.reference == "nightly")
        assert info.timezone == "Europe/Paris"
        assert info.next_fire_at == datetime(2030, 1, 2, 1, 0, tzinfo=UTC)
        # Up to 02:00 UTC and a bit: one tick, at 01:00 UTC (02:00 Paris), never at 02:00 UTC.
        await clock.advance((datetime(2030, 1, 2, 2, 1, tzinfo=UTC) - START).total_seconds())
        assert [when for _, when in log] == [datetime(2030, 1, 2, 1, 0, tzinfo=UTC)]
    finally:
        for system in systems:
            await system.stop()


async def test_a_node_of_another_zone_refuses_to_join_a_memory_cluster() -> None:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    paris = ActorSystem("a", clock=clock, timezone="Europe/Paris", cluster=Cluster(url))
    await paris.start()
    try:
        utc = ActorSystem("b", clock=clock, timezone="UTC", cluster=Cluster(url))
        with pytest.raises(TimezoneMismatchError) as caught:
            await utc.start()
        text = str(caught.value)
        assert "'UTC'" in text
        assert "'Europe/Paris' (a)" in text
        assert "ActorSystem(timezone=...)" in text
        assert not utc.running
        # It left again: the live members never count on it.
        _, rows = await paris.cluster.coordinator.leases()
        assert [row.node for row in rows] == ["a"]
        # The same zone joins.
        also_paris = ActorSystem("c", clock=clock, timezone="Europe/Paris", cluster=Cluster(url))
        await also_paris.start()
        await also_paris.stop()
    finally:
        await paris.stop()


async def test_another_name_of_the_same_zone_joins() -> None:
    # A machine set to UTC reports "Etc/UTC" (/etc/localtime's target); an explicit "UTC"
    # and the leases of versions before the zone was recorded read "UTC": one zone.
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    systems = [
        ActorSystem(n, clock=clock, timezone=z, cluster=Cluster(url))
        for n, z in (("a", "UTC"), ("b", "Etc/UTC"), ("c", "Zulu"))
    ]
    try:
        for system in systems:
            await system.start()
        await clock.advance(1.0)  # a's next read of the members
        assert [m.name for m in systems[0].cluster.members()] == ["a", "b", "c"]
    finally:
        for system in systems:
            await system.stop()


def test_zones_are_compared_by_their_data_not_their_names() -> None:
    assert same_zone("Europe/Paris", "Europe/Paris")
    assert same_zone("UTC", "Etc/UTC")
    assert same_zone("Asia/Calcutta", "Asia/Kolkata")
    assert not same_zone("UTC", "Europe/London")  # equal offsets in winter, not in summer
    assert not same_zone("UTC", "No/Such_Zone")
    assert not same_zone("UTC", "../../etc/passwd")


async def test_a_node_of_another_zone_refuses_to_join_a_sqlite_cluster(tmp_path: Path) -> None:
    def node(name: str, zone: str) -> ActorSystem:
        return ActorSystem(
            name,
            timezone=zone,
            remoting=Remoting("tcp://127.0.0.1:0", SECRET),
            cluster=Cluster(f"sqlite:///{tmp_path / 'coordinator.db'}"),
        )

    first = node("a", "Europe/Paris")
    await first.start()
    try:
        second = node("b", "America/New_York")
        with pytest.raises(TimezoneMismatchError, match=r"'America/New_York'.*'Europe/Paris'"):
            await second.start()
        assert not second.running
        assert [m.name for m in first.cluster.members()] == ["a"]
        coordinator = SQLiteCoordinator(tmp_path / "coordinator.db")
        await coordinator.open()
        try:
            _, rows = await coordinator.leases()
            assert [(row.node, row.zone) for row in rows] == [("a", "Europe/Paris")]
        finally:
            await coordinator.close()
    finally:
        await first.stop()


# -- coordinator tables made before the zone was recorded -------------------------------

_OLD_LEASES = """
CREATE TABLE tocsin_cluster_leases (
    node TEXT PRIMARY KEY, incarnation TEXT NOT NULL, address TEXT NOT NULL,
    joined REAL NOT NULL, renewed REAL NOT NULL, expires REAL NOT NULL)
"""


async def test_an_old_sqlite_lease_table_gains_the_zone_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute(_OLD_LEASES)
    old.execute(
        "INSERT INTO tocsin_cluster_leases VALUES ('old', 'i', 'addr', ?, ?, ?)",
        (START.timestamp(), START.timestamp(), START.timestamp() + 10),
    )
    old.commit()
    old.close()
    clock = ManualClock(wall=START)
    coordinator = SQLiteCoordinator(path, clock=clock)
    await coordinator.open()
    try:
        _, rows = await coordinator.leases()
        assert [(row.node, row.zone) for row in rows] == [("old", "UTC")]
        row = await coordinator.join("new", "j", "addr2", 10.0, "Europe/Paris")
        assert row is not None
        renewed = await coordinator.renew("new", "j", 10.0)
        assert renewed is not None
        assert renewed.zone == "Europe/Paris"
    finally:
        await coordinator.close()
    # Opening again (the column exists now) changes nothing.
    again = SQLiteCoordinator(path, clock=clock)
    await again.open()
    try:
        _, rows = await again.leases()
        assert [(row.node, row.zone) for row in rows] == [("new", "Europe/Paris"), ("old", "UTC")]
    finally:
        await again.close()


async def test_an_old_postgres_lease_table_gains_the_zone_column(postgres_dsn: str) -> None:
    import asyncpg

    from tocsin.cluster._postgres import PostgresCoordinator

    schema = f"old_{uuid.uuid4().hex[:12]}"
    conn: Any = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        await conn.execute(f'SET search_path TO "{schema}"')
        await conn.execute(_OLD_LEASES.replace("REAL", "float8").replace("TEXT", "text"))
        await conn.execute("INSERT INTO tocsin_cluster_leases VALUES ('old', 'i', 'addr', 1, 1, 2)")
    finally:
        await conn.close()
    coordinator = PostgresCoordinator(postgres_dsn, schema=schema)
    await coordinator.open()
    try:
        _, rows = await coordinator.leases()
        assert [(row.node, row.zone) for row in rows] == [("old", "UTC")]
        row = await coordinator.join("new", "j", "addr2", 10.0, "Europe/Paris")
        assert row is not None
        assert row.zone == "Europe/Paris"
    finally:
        await coordinator.close()
    again = PostgresCoordinator(postgres_dsn, schema=schema)
    await again.open()  # the column exists: nothing to do, no error
    await again.close()
