# SPDX-License-Identifier: Apache-2.0
"""Simulated time is cheap on memory://: renewals are the only upkeep, each O(1).

Outcomes only (STYLE: tests never assert speed; the figures are in docs/performance.md,
from ``bench/simulated_cluster.py``): every renewal happened, no lease was lost, every
node sees the others, and no member list was read while nobody joined or left.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tocsin import ActorSystem, ManualClock
from tocsin.cluster import Cluster

DEFAULT_LEASE = 10.0
WEEK = 7 * 86_400.0


async def run_nodes(seconds: float, nodes: int = 3) -> dict[str, Any]:
    clock = ManualClock(wall=1_800_000_000.0)
    url = f"memory://{uuid.uuid4().hex}"
    systems = [ActorSystem(f"n{i}", clock=clock, cluster=Cluster(url)) for i in range(nodes)]
    for system in systems:
        await system.start()
    await clock.advance(0)  # the reads the joins caused are done
    reads = 0
    for system in systems:
        coordinator = system.cluster.coordinator
        leases = coordinator.leases

        async def counted(leases: Any = leases) -> Any:
            nonlocal reads
            reads += 1
            return await leases()

        coordinator.leases = counted  # type: ignore[method-assign]
    try:
        await clock.advance(seconds)
        return {
            "renewals": [s.cluster.metrics().leases_renewed for s in systems],
            "lost": [s.cluster.metrics().leases_lost for s in systems],
            "members": [[m.name for m in s.cluster.members()] for s in systems],
            "reads": reads,
        }
    finally:
        for system in systems:
            await system.stop()


def expected_renewals(seconds: float) -> int:
    return int(seconds / (DEFAULT_LEASE / 3))


async def test_six_simulated_hours_of_three_nodes_cost_only_their_renewals() -> None:
    seconds = 6 * 3600.0
    result = await run_nodes(seconds)
    # The last renewal lands on the end instant, give or take a float's rounding.
    assert all(n >= expected_renewals(seconds) - 1 for n in result["renewals"])
    assert result["lost"] == [0, 0, 0]
    assert result["members"] == [["n0", "n1", "n2"]] * 3
    assert result["reads"] == 0  # nobody joined or left: the view was never read again


@pytest.mark.slow  # a long simulation: two weeks, over a million renewals
# Its CPU work (about 20 s, twice that under coverage) is not a hang: the default guard
# of 120 real seconds failed it at a load of 15 on the 2-core machine.
@pytest.mark.tocsin(timeout=900)
async def test_two_simulated_weeks_of_three_nodes_at_the_default_lease() -> None:
    seconds = 2 * WEEK
    result = await run_nodes(seconds)
    assert all(n >= expected_renewals(seconds) - 1 for n in result["renewals"])
    assert expected_renewals(seconds) == 362_880
    assert result["lost"] == [0, 0, 0]
    assert result["members"] == [["n0", "n1", "n2"]] * 3
    assert result["reads"] == 0
