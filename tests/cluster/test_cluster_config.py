# SPDX-License-Identifier: Apache-2.0
"""``Cluster(...)``: a frozen config, checked where it is written; coordinator URLs."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

import tocsin
from tocsin import Cluster, InvalidCoordinatorURLError
from tocsin.cluster import open_coordinator
from tocsin.cluster._memory import MemoryCoordinator
from tocsin.cluster._sqlite import SQLiteCoordinator


def test_the_cluster_names_of_the_contract_are_exported_from_tocsin() -> None:
    for name in ["Cluster", "NodeJoined", "NodeLeft", "ScheduleReferenceRequiredError"]:
        assert name in tocsin.__all__
    assert tocsin.NodeLeft("n", "a", "left").reason == "left"


def test_defaults_and_the_renewal_period() -> None:
    config = Cluster("memory://shop")
    assert (config.lease, config.poll_interval, config.renew_every) == (10.0, 1.0, 10.0 / 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lease = 3.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("lease", "message"),
    [
        (0, "`lease` must be between 0.5 and 3600.0 seconds, got 0"),
        (-1, "`lease` must be between"),
        (0.1, "`lease` must be between"),
        (7200, "`lease` must be between"),
        (math.nan, "`lease` must be a finite number of seconds, got nan"),
        (math.inf, "finite"),
        (True, "finite number of seconds, got True"),
        ("10", "finite number of seconds, got '10'"),
    ],
)
def test_a_bad_lease_is_refused_with_what_was_given(lease: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Cluster("memory://", lease=lease)  # type: ignore[arg-type]


def test_max_skew_defaults_to_one_second_and_is_checked() -> None:
    assert Cluster("memory://").max_skew == 1.0
    assert Cluster("memory://", max_skew=5).max_skew == 5.0
    for bad in (0, -1, math.nan, math.inf, 7200, True):
        with pytest.raises(ValueError, match="`max_skew` must be"):
            Cluster("memory://", max_skew=bad)


def test_the_default_poll_interval_never_exceeds_a_short_lease() -> None:
    assert Cluster("memory://", lease=0.5).poll_interval == 0.5
    assert Cluster("memory://", lease=30).poll_interval == 1.0


def test_poll_interval_is_checked_against_the_lease() -> None:
    assert Cluster("memory://", lease=3, poll_interval=3).poll_interval == 3.0
    with pytest.raises(ValueError, match=r"`poll_interval` must be between 0\.05 and 3\.0"):
        Cluster("memory://", lease=3, poll_interval=4)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("mysql://db/x", "unknown scheme 'mysql'"),
        ("no-scheme", "has no scheme"),
        ("sqlite://", "no shareable file path"),
        ("sqlite:///:memory:", "no shareable file path"),
        ("postgresql://", "names no server"),
        ("redis://", "names no server"),
        ("memory://a/b", "memory://NAME"),
    ],
)
def test_a_bad_coordinator_url_is_refused_at_the_line_that_wrote_it(
    url: str, fragment: str
) -> None:
    with pytest.raises(InvalidCoordinatorURLError, match=fragment) as info:
        Cluster(url)
    assert "allowed" in str(info.value) or "memory://NAME" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_coordinator_that_is_not_a_url_is_refused() -> None:
    with pytest.raises(InvalidCoordinatorURLError, match="got int"):
        Cluster(42)  # type: ignore[arg-type]


def test_urls_open_the_matching_backend(tmp_path: Path) -> None:
    memory = open_coordinator("memory://shop")
    assert isinstance(memory, MemoryCoordinator)
    assert memory.url == "memory://shop"
    sqlite = open_coordinator(f"sqlite:///{tmp_path}/c.db")
    assert isinstance(sqlite, SQLiteCoordinator)
    assert sqlite.path == f"{tmp_path}/c.db"
    assert open_coordinator("sqlite:///rel.db").path == "rel.db"  # type: ignore[attr-defined]
    from tocsin.cluster._postgres import PostgresCoordinator
    from tocsin.cluster._redis import RedisCoordinator

    pg = open_coordinator("postgresql://u:secret@db/shop?schema=cl")
    assert isinstance(pg, PostgresCoordinator)
    assert pg.schema == "cl"
    assert "secret" not in pg.url
    redis = open_coordinator("redis://:secret@cache:6379/0?prefix=shop:")
    assert isinstance(redis, RedisCoordinator)
    assert redis.prefix == "shop:"
    assert "secret" not in redis.url
    assert isinstance(Cluster(memory).coordinator, MemoryCoordinator)


async def test_plain_memory_url_is_shared_by_the_systems_of_one_process() -> None:
    a, b = open_coordinator("memory://"), open_coordinator("memory://")
    private = MemoryCoordinator()
    for c in (a, b, private):
        await c.open()
    try:
        await a.set_cron_paused("r", True)
        assert await b.paused_crons() == frozenset({"r"})
        assert await private.paused_crons() == frozenset()
    finally:
        for c in (a, b, private):
            await c.close()
