# SPDX-License-Identifier: Apache-2.0
"""Placement: where the one activation of a durable identity lives.

The preferred owner of ``(kind, identity)`` is a rendezvous (highest-random-weight) hash
over the live nodes: every node computes the same answer from the same member list, and
when a node joins or leaves only the identities it wins or held move (about 1/N of them),
unlike ``hash % N``. The preference only spreads load; the *owner* is whoever holds the
directory entry, claimed by compare-and-set with a growing epoch, and taken over only
once the owner's lease has expired on the coordinator's clock.

Unknown outcomes. A claim that raises may have been written: the next step re-reads the
directory and never assumes "nobody owns it" (GoAkt's users report duplicate activations
from treating a timed-out activation as a failure).

Prior art: Thaler & Ravishankar's rendezvous hashing (as in Orleans' and Akka's
consistent placement), Orleans' grain directory with activation epochs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import final

from ..errors import CoordinatorError
from ._membership import Membership
from ._protocol import Coordinator, Ownership
from ._values import Counters

__all__ = ["Directory", "Placement", "rendezvous_owner"]


def _weight(node: str, kind: str, identity: str) -> bytes:
    # blake2b, not hash(): the same on every node and every run (PYTHONHASHSEED).
    key = f"{len(kind)}:{kind}{len(identity)}:{identity}{node}".encode()
    return hashlib.blake2b(key, digest_size=8).digest()


def rendezvous_owner(kind: str, identity: str, nodes: Iterable[str]) -> str | None:
    """The node that ``(kind, identity)`` prefers among ``nodes`` (``None`` if empty).

    Deterministic across processes; ties (astronomically rare) go to the smaller name.
    """
    best: tuple[bytes, str] | None = None
    for node in nodes:
        candidate = (_weight(node, kind, identity), node)
        if (
            best is None
            or candidate[0] > best[0]
            or (candidate[0] == best[0] and candidate[1] < best[1])
        ):
            best = candidate
    return None if best is None else best[1]


@final
@dataclass(frozen=True, slots=True)
class Placement:
    """Where to send a message for an identity.

    Attributes:
        node: the node that holds (or should claim) the activation.
        epoch: the ownership epoch when ``node`` holds the directory entry; ``None`` when
            ``node`` is only the preferred node (it claims on arrival).
        local: whether ``node`` is this node *and* this node owns the entry (activate
            here, fencing writes with ``epoch``).
    """

    node: str
    epoch: int | None
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

    async def locate(self, kind: str, identity: str) -> Placement | None:
        """Where the activation of ``(kind, identity)`` is, or where it should go.

        A live owner wins. Otherwise the preferred node (rendezvous over the live
        members): this node claims the entry when it is the preferred one; another
        preferred node is returned with ``epoch=None`` and claims it when the message
        arrives (:meth:`acquire`). ``None`` when no node is live (not even this one).

        Raises:
            CoordinatorError: the coordinator failed (nothing was decided).
        """
        entry = await self._coordinator.owner(kind, identity)
        if entry is not None and entry.alive:
            return self._placement(entry)
        names = self._membership.member_names()
        if entry is not None:
            # The owner's lease is gone even if this node's view (up to lease/3 old)
            # still lists it: never prefer it.
            me = self._membership.name
            names = [name for name in names if name != entry.node or name == me]
        preferred = rendezvous_owner(kind, identity, names)
        if preferred is None or preferred == self._membership.name:
            acquired = await self.acquire(kind, identity, previous=entry)
            return None if acquired is None else self._placement(acquired)
        return Placement(preferred, None, False)

    async def acquire(
        self, kind: str, identity: str, *, previous: Ownership | None = None
    ) -> Ownership | None:
        """Claim ``(kind, identity)`` for this node if its owner is not live.

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
                kind, identity, self._membership.name, self._membership.incarnation
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
