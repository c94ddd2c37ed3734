# SPDX-License-Identifier: Apache-2.0
"""Durable's face for the layers above it (remote, cluster, the facade, metrics, the
console), beside the public :mod:`tocsin.durable`: they import these names from here and
from no other ``durable._*`` module (DESIGN.md "Layers"). Re-exports only.

``DurableRuntime`` is the service the facade starts and ``durable_of`` finds it from a
runtime (its ``statistics()`` is a ``DurableStatistics``); ``Claim`` is what an ownership
backend grants; ``RunCounters`` counts task runs; ``CALL_EXTENSION`` carries a ``Call`` on the wire;
``trigger_row`` / ``backfill_instants`` / ``backfill_rows`` build the rows of manual and
backfilled runs (``tocsin tasks trigger/backfill`` writes them from another process).
"""

from __future__ import annotations

from ._handle import DurableHandle
from ._manual import BACKFILL_LIMIT, backfill_instants, backfill_rows, trigger_row
from ._ops import DurableStatistics, RunCounters
from ._outage import RETRY_CAP, Outage, retry_delay
from ._ownership import Claim
from ._records import CALL_EXTENSION
from ._runtime import DurableRuntime, durable_of
from ._tasks import tick_outcome

__all__ = [
    "BACKFILL_LIMIT",
    "CALL_EXTENSION",
    "RETRY_CAP",
    "Claim",
    "DurableHandle",
    "DurableRuntime",
    "DurableStatistics",
    "Outage",
    "RunCounters",
    "backfill_instants",
    "backfill_rows",
    "durable_of",
    "retry_delay",
    "tick_outcome",
    "trigger_row",
]
