# SPDX-License-Identifier: Apache-2.0
"""Three node processes, one coordinator, 100 references firing every second: every
instant is delivered by exactly one node (``bench/cluster_load.py``'s run, short), and
on PostgreSQL a renewal is answered while every claim connection waits on a lock.

Outcomes only (delivered once, none lost, no claim failed), never speed: lateness is the
benchmark's business.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tocsin.cluster._postgres import PostgresCoordinator
from tocsin.cluster._protocol import ClaimOutcome

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cluster_load.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("cluster_load", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cluster_load", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("coordinator", ["postgres", "redis"])
def test_three_nodes_deliver_every_instant_of_100_references_exactly_once(
    coordinator: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_dsn" if coordinator == "postgres" else "redis_url")
    if coordinator == "postgres":
        url += ("&" if "?" in url else "?") + f"schema=load_{uuid.uuid4().hex[:12]}"
    row = _bench().run_once(url, 100, 4, 3)
    assert row["expected"] == 400
    assert (row["delivered"], row["duplicated"], row["lost"]) == (400, 0, 0)
    assert row["claims_failed"] == 0


async def test_a_postgres_renewal_is_answered_while_every_claim_connection_waits(
    postgres_dsn: str,
) -> None:
    import asyncpg

    schema = f"c_{uuid.uuid4().hex[:16]}"
    coordinator = PostgresCoordinator(postgres_dsn, schema=schema)
    await coordinator.open()
    blocker = await asyncpg.connect(postgres_dsn, server_settings={"search_path": schema})
    try:
        assert await coordinator.join("n1", "inc-a", "addr", 10.0) is not None
        now = await coordinator.now()
        first = await coordinator.claim_tick(f"r@{now - 1}", "r", now - 1, 60.0, "n1")
        assert first.outcome is ClaimOutcome.WON  # the fence row of "r" exists
        lock = blocker.transaction()
        await lock.start()
        await blocker.execute(
            "SELECT * FROM tocsin_cluster_fences WHERE reference = 'r' FOR UPDATE"
        )
        claims = [
            asyncio.ensure_future(coordinator.claim_tick(f"r@{now + i}", "r", now + i, 60.0, "n1"))
            for i in range(8)  # twice the claim pool: every claim connection waits
        ]
        await asyncio.sleep(0.2)  # real I/O: let the claims reach the server and wait
        assert not any(claim.done() for claim in claims)
        renewed = await asyncio.wait_for(coordinator.renew("n1", "inc-a", 10.0), 5.0)
        assert renewed is not None
        leases = await asyncio.wait_for(coordinator.leases(), 5.0)
        assert [row.node for row in leases[1]] == ["n1"]
        assert not any(claim.done() for claim in claims)  # still waiting: renewal went past
        await lock.rollback()
        results = await asyncio.wait_for(asyncio.gather(*claims), 10.0)
        assert [r.outcome for r in results] == [ClaimOutcome.WON] * 8
    finally:
        await blocker.close()
        await coordinator.close()
