# SPDX-License-Identifier: Apache-2.0
"""Ownership: the hook through which a cluster decides where a durable identity lives.

The durable layer knows nothing of clusters (it sits below them). Outside cluster mode
there is no gate and every identity is this node's. In cluster mode the system installs
an :class:`OwnershipGate` (``tocsin.cluster`` implements it over its directory): before an
activation starts, the handle asks it for the identity; the answer is either this node's
ownership with its epoch (the fencing token every write then carries) or the PID of the
identity at its owner, to which the waiting messages are forwarded. The due-task poll
asks it which identities this node may run, so a passivated identity's tasks are run by
one node only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, final

if TYPE_CHECKING:
    from ..actor._spi import PID

__all__ = ["Claim", "OwnershipGate"]


@final
@dataclass(frozen=True, slots=True)
class Claim:
    """The gate's answer for one identity.

    Attributes:
        epoch: set when this node owns the identity: activate here, fencing every write
            with this epoch.
        owner: else the identity's PID at the node that owns it (or should claim it);
            ``None`` when no node can take it now (no live lease): messages dead-letter.
        holder: with ``epoch``: who owns it (this node's name and incarnation), written
            with the epoch into the store's fence, which refuses an equal epoch from
            another holder (issue 20, item 4).
    """

    epoch: int | None
    owner: PID | None = None
    holder: str = ""


class OwnershipGate(Protocol):
    """What a cluster gives the durable runtime (installed as ``DurableRuntime.gate``)."""

    async def claim(self, kind: str, identity: str, *, refused: int | None = None) -> Claim:
        """Own ``(kind, identity)`` here if it is free (or already this node's), else say
        where it lives. A new ownership's epoch is above the highest epoch the store has
        fenced for it (a coordinator that lost its directory restarts at 1), and above
        ``refused`` (an epoch of this node's the fence just refused: another holder
        fenced it). Raises only for an unknown outcome (the caller retries later)."""
        ...

    async def may_run(self, kind: str, identity: str) -> bool:
        """Whether this node owns ``(kind, identity)`` or is the node that should claim
        it (its owner is gone and it is the preferred node): the due-task poll arms
        alarms only for those, so two nodes never race to run one identity's tasks."""
        ...

    def fenced(self, kind: str, identity: str) -> None:
        """Count a write of ``(kind, identity)`` refused by the fence (``fenced_writes``)."""
        ...
