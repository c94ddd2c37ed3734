# SPDX-License-Identifier: Apache-2.0
"""Ops hook (issue 14): the kernel's part of the read-only view that :mod:`tocsin.metrics`
and :mod:`tocsin.console` take of a running system.

Read at scrape time (or on a console refresh), never on a hot path: the only thing the
kernel keeps for it is one int per cell (``Cell.depth_high``, the mailbox high-water mark,
compared once per drain batch). The scheduler's and the durable runtime's parts live in
their layers (``scheduling._introspect``, ``durable._runtime.durable_of``); everything is
reached through the :class:`~tocsin.actor._runtime.Runtime`, never the facade's privates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["ActorStat", "actor_stats"]


@dataclass(frozen=True, slots=True)
class ActorStat:
    """One live actor: its path, state, mailbox depth now and the deepest seen (messages)."""

    path: str
    state: str
    mailbox: int
    mailbox_high: int


def actor_stats(runtime: Runtime | None) -> list[ActorStat]:
    """A snapshot of every live actor, sorted by path (empty without a running runtime)."""
    if runtime is None or not runtime.running:
        return []
    # The mailbox deque holds message and sender alternately: two entries per message.
    return [
        ActorStat(path, cell.state.name.lower(), len(cell.mailbox or ()) // 2, cell.depth_high // 2)
        for path, cell in sorted(runtime.registry.items())
    ]
