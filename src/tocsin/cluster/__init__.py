# SPDX-License-Identifier: Apache-2.0
"""Cluster: one logical system over many nodes, coordinated by an existing engine.

``Cluster(coordinator=URL, lease=10.0)`` configures it; the coordinator (PostgreSQL,
Redis, a SQLite file for the nodes of one machine, or ``memory://`` for the systems of
one process) holds node leases, the durable-actor directory and cron tick claims.
See ``docs/cluster.md`` for the guarantees and the failure table.

The public names are the ones the docs show; the machinery (membership, placement, tick
claims, the coordinator's records) stays in its private modules, and the layers above
import what they need from :mod:`tocsin.cluster._spi`.
"""

from __future__ import annotations

from ._node import ClusterNode
from ._protocol import Coordinator
from ._url import open_coordinator
from ._values import (
    Cluster,
    ClusterMetrics,
    LeaseLost,
    LeaseRegained,
    Member,
    NodeJoined,
    NodeLeft,
)
from ._view import ClusterView

__all__ = [
    "Cluster",
    "ClusterMetrics",
    "ClusterNode",
    "ClusterView",
    "Coordinator",
    "LeaseLost",
    "LeaseRegained",
    "Member",
    "NodeJoined",
    "NodeLeft",
    "open_coordinator",
]
