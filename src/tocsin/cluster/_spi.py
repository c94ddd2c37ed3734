# SPDX-License-Identifier: Apache-2.0
"""The cluster's face for the layers above it (the facade, ``tocsin run``'s workers),
beside the public :mod:`tocsin.cluster`: they import these names from here and from no
other ``cluster._*`` module (DESIGN.md "Layers"). Re-exports only.

``ClusterOwnership`` is the durable-ownership backend the facade installs in a cluster;
``register_in_process`` / ``in_process_pid`` let nodes of one process find each other's
actors, through the routes ``add_in_process_route`` adds (the simulated network);
``open_coordinator`` makes a coordinator from its URL;
``bind_store`` / ``warn_if_clustered`` check the store's cluster record;
``CronClaims`` (with ``Counters``, ``TickClaim``, ``TickRequest``, ``ClaimOutcome``,
``ClaimsInBatches`` and ``claim_ttl``) is the claim path stored schedules share with cluster cron
(``tocsin.schedules``).
"""

from __future__ import annotations

from ._durable import (
    ClusterOwnership,
    InProcessRoute,
    add_in_process_route,
    in_process_pid,
    register_in_process,
)
from ._identity import bind_store, warn_if_clustered
from ._protocol import ClaimOutcome, ClaimsInBatches, PauseNote, TickClaim, TickRequest
from ._rebalance import Rebalancer
from ._single_fire import CronClaims, claim_ttl
from ._url import open_coordinator
from ._values import Counters

__all__ = [
    "ClaimOutcome",
    "ClaimsInBatches",
    "ClusterOwnership",
    "Counters",
    "CronClaims",
    "InProcessRoute",
    "PauseNote",
    "Rebalancer",
    "TickClaim",
    "TickRequest",
    "add_in_process_route",
    "bind_store",
    "claim_ttl",
    "in_process_pid",
    "open_coordinator",
    "register_in_process",
    "warn_if_clustered",
]
