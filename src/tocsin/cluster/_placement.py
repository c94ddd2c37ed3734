# SPDX-License-Identifier: Apache-2.0
"""Placement: where the one activation of a durable identity lives.

The preferred owner of ``(kind, identity)`` is a rendezvous (highest-random-weight) hash
over the live nodes (:mod:`._rendezvous`): every node and coordinator computes the same
answer from the same member list, and when a node joins or leaves only the identities it
wins or held move (about 1/N of them), unlike ``hash % N``. A free identity is placed by
the coordinator, in the claim's own atomic step, over the leases live at that step: never
on this node's member list, which may be ``poll_interval`` old (issue 19). The preference
only spreads load; the *owner* is whoever holds the directory entry, claimed by
compare-and-set with a growing epoch (above the store's fence: ``floor``), and taken over
only once the owner's lease has expired on the coordinator's clock, or handed over by the
owner itself when rebalancing (:mod:`._rebalance`).

Unknown outcomes. A claim that raises may have been written: the next step re-reads the
directory and never assumes "nobody owns it" (GoAkt's users report duplicate activations
from treating a timed-out activation as a failure).

Prior art: Thaler & Ravishankar's rendezvous hashing (as in Orleans' and Akka's
consistent placement), Orleans' grain directory with activation epochs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from ..errors import CoordinatorError
from ._membership import Membership
from ._protocol import Coordinator, Ownership
from ._rendezvous import rendezvous_owner
from ._values import Counters

__all__ = ["Directory", "Placement", "rendezvous_owner"]


@final
@dataclass(frozen=True, slots=True)
class Placement:
    """Where to send a message for an identity.

    Attributes:
        node: the node the directory entry names (it activates, or already has; a
            placed node that has not activated yet finds the entry its own on arrival).
        epoch: the ownership epoch of that entry.
        local: whether ``node`` is this node *and* this node owns the entry (activate
            here, fencing writes with ``epoch``).
    """

    node: str
    epoch: int
    local: bool


@final
class Directory:
    """Single activation of durable identities across the cluster (one per node)."""

    def __init__(
        self, coordinator: Coordinator, membership: Membership, counters: Counters
    ) -> None:
        self._coordinator = coordinator
        self._membership = membership
        self._counters = counters

    def mine(self, entry: Ownership) -> bool:
        """Whether ``entry`` names this node (this incarnation) as the owner."""
        return (entry.node, entry.incarnation) == (
            self._membership.name,
            self._membership.incarnation,
        )

    def _placement(self, entry: Ownership) -> Placement:
        return Placement(entry.node, entry.epoch, self.mine(entry) and entry.alive)

    async def locate(self, kind: str, identity: str, *, floor: int = 0) -> Placement | None:
        """Where the activation of ``(kind, identity)`` is, or where it should go.

        A live owner wins. Otherwise the identity is placed in one compare-and-set step
        on the coordinator (:meth:`acquire` with ``place=True``): on the node the
        rendezvous hash prefers among the leases live *at that step*, never on this
        node's member list, which may be up to ``poll_interval`` old (an identity placed
        one millisecond after a node joined may land on it). The entry then names that
        node with its epoch; it finds the entry its own when the first message arrives
        and activates. ``floor``: the least epoch of a new entry (one above the store's
        fence). ``None`` when this node holds no lease (nothing may be decided).

        Raises:
            CoordinatorError: the coordinator failed (nothing was decided).
        """
        entry = await self._coordinator.owner(kind, identity)
        if entry is not None and entry.alive:
            return self._placement(entry)
        acquired = await self.acquire(kind, identity, previous=entry, floor=floor, place=True)
        return None if acquired is None else self._placement(acquired)

    async def acquire(
        self,
        kind: str,
        identity: str,
        *,
        previous: Ownership | None = None,
        floor: int = 0,
        place: bool = False,
    ) -> Ownership | None:
        """Claim ``(kind, identity)`` if its owner is not live: for this node, or with
        ``place=True`` for the rendezvous choice among the coordinator's live leases.
        ``floor`` is the least epoch to take (one above the store's fence); this node's
        own entry below it is lifted to it.

        Returns the entry after the claim: this node's (activate here with its epoch),
        another live owner's (forward to it), or ``None`` (this node holds no lease:
        nothing may activate here).

        Raises:
            CoordinatorError: the claim *and* the read-back of its outcome failed.
        """
        if not self._membership.holds_lease():
            return None
        self._counters.ownership_claims += 1
        try:
            entry = await self._coordinator.claim_owner(
                kind,
                identity,
                self._membership.name,
                self._membership.incarnation,
                floor=floor,
                place=place,
            )
        except CoordinatorError:
            # Unknown outcome: the claim may have been written. Read what is there.
            entry = await self._coordinator.owner(kind, identity)
        if (
            entry is not None
            and self.mine(entry)
            and previous is not None
            and not self.mine(previous)
        ):
            self._counters.takeovers += 1
        return entry
