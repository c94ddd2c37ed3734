# SPDX-License-Identifier: Apache-2.0
"""Stored schedules' face for the layers above them (the facade, the CLI, the console),
beside the public :mod:`tocsin.schedules`: they import these names from here and from no
other ``schedules._*`` module (DESIGN.md "Layers"). Re-exports only.

``Runner`` fires the stored schedules of one node; ``tick_outcome`` turns a ledger row
into the ``TickOutcome`` history returns; ``decode_spec`` reads a stored spec;
``trigger_of`` is a stored spec's trigger (the policy engine's).
"""

from __future__ import annotations

from ._instants import trigger_of
from ._runner import SERVICE as SCHEDULES_SERVICE
from ._runner import Runner, runner_of
from ._service import tick_outcome
from ._spec import decode_spec, diff, encode_spec, spec_to_wire

__all__ = [
    "SCHEDULES_SERVICE",
    "Runner",
    "decode_spec",
    "diff",
    "encode_spec",
    "runner_of",
    "spec_to_wire",
    "tick_outcome",
    "trigger_of",
]
