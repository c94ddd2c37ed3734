# SPDX-License-Identifier: Apache-2.0
"""Cluster: one logical system over many nodes, coordinated by an existing engine."""

from __future__ import annotations

from ._protocol import ClaimOutcome, Coordinator, LeaseRow, Ownership
from ._url import open_coordinator

__all__ = ["ClaimOutcome", "Coordinator", "LeaseRow", "Ownership", "open_coordinator"]
