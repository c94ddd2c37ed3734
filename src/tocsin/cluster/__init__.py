# SPDX-License-Identifier: Apache-2.0
"""Cluster: one logical system over many nodes, coordinated by an existing engine.

``Cluster(coordinator=URL, lease=10.0)`` configures it; the coordinator (PostgreSQL,
Redis, a SQLite file for the nodes of one machine, or ``memory://`` for the systems of
one process) holds node leases, the durable-actor directory and cron tick claims.
See ``docs/cluster.md`` for the guarantees and the failure table.
"""

from __future__ import annotations

from ._membership import Membership
from ._node import ClusterNode
from ._placement import Directory, Placement, rendezvous_owner
from ._protocol import ClaimOutcome, Coordinator, LeaseRow, Ownership
from ._single_fire import (
    MAX_TTL,
    MIN_TTL,
    CronClaims,
    claim_ttl,
    cron_period,
    require_reference,
    tick_key,
)
from ._url import open_coordinator
from ._values import (
    MAX_LEASE,
    MIN_LEASE,
    Cluster,
    ClusterMetrics,
    LeaseLost,
    LeaseRegained,
    Member,
    NodeJoined,
    NodeLeft,
)

__all__ = [
    "MAX_LEASE",
    "MAX_TTL",
    "MIN_LEASE",
    "MIN_TTL",
    "ClaimOutcome",
    "Cluster",
    "ClusterMetrics",
    "ClusterNode",
    "Coordinator",
    "CronClaims",
    "Directory",
    "LeaseLost",
    "LeaseRegained",
    "LeaseRow",
    "Member",
    "Membership",
    "NodeJoined",
    "NodeLeft",
    "Ownership",
    "Placement",
    "claim_ttl",
    "cron_period",
    "open_coordinator",
    "rendezvous_owner",
    "require_reference",
    "tick_key",
]
