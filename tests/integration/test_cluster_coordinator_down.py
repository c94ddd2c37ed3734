# SPDX-License-Identifier: Apache-2.0
"""A coordinator that goes away never produces a duplicate: claims deliver nothing, the
node gives up its lease by its own clock, and a start against a dead server fails clean.

Real servers and real time (bounded waits); outcomes asserted, never speed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket

import pytest
from tests.integration.redis_server import temporary_server

from tocsin.clock import SystemClock
from tocsin.cluster import Cluster, ClusterNode
from tocsin.errors import CoordinatorError

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Real seconds to wait for an outcome on a busy machine.
WAIT = 30.0


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


def _node(url: str, lost: list[int]) -> ClusterNode:
    return ClusterNode(
        Cluster(url, lease=1.0),
        name="n1",
        address="n1",
        clock=SystemClock(),
        publish=lambda event: None,
        on_lease_lost=lambda: lost.append(1),
    )


@pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("TOCSIN_REQUIRE_REDIS") != "1",
    reason="redis-server not installed",
)
async def test_a_redis_coordinator_that_dies_delivers_nothing_and_the_lease_is_given_up() -> None:
    lost: list[int] = []
    with temporary_server() as url:
        node = _node(url, lost)
        await node.start()
        try:
            fire = await node.coordinator.now()
            assert await node.cron_claims.claim("r", fire, 60) is True
        except BaseException:
            await node.stop()
            raise
    # The server is gone from here on.
    try:
        assert await node.cron_claims.claim("r", fire + 60, 60) is False
        assert node.metrics().claims_failed == 1
        deadline = asyncio.get_running_loop().time() + WAIT
        while node.membership.holds_lease():
            assert asyncio.get_running_loop().time() < deadline, "lease never given up"
            await asyncio.sleep(0.05)
        assert lost == [1]
        assert node.metrics().renew_failures >= 1
    finally:
        await node.stop()  # leave fails (logged); nothing raises


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
async def test_starting_against_a_dead_server_raises_and_leaves_nothing_open(scheme: str) -> None:
    port = _closed_port()
    url = (
        f"postgresql://postgres@127.0.0.1:{port}/x"
        if scheme == "postgresql"
        else f"redis://127.0.0.1:{port}/0"
    )
    node = _node(url, [])
    with pytest.raises(CoordinatorError, match="open failed"):
        await node.start()
    assert not node.membership.holds_lease()
    await node.stop()  # a no-op: it never started
