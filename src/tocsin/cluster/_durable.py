# SPDX-License-Identifier: Apache-2.0
"""Cluster-wide durable actors: the directory behind the durable runtime's ownership gate.

The durable layer asks two questions (:class:`~tocsin.durable._ownership.OwnershipGate`):

* ``claim``: an activation is about to start here. A live owner in the directory keeps the
  identity (the messages are forwarded to it; it never forwards further, so there is no
  loop); otherwise this node claims it by compare-and-set, the epoch growing by one (or
  to the ``floor`` the durable store asks for: one above the highest epoch it fenced,
  so a coordinator that lost its directory never wedges an identity), and activates with
  that epoch. A node without a live lease claims nothing. An owner this node's member
  list does not know yet (it joined after the last read) is looked up again at once.
* ``may_run``: the due-task poll found work for an identity. Only its live owner arms the
  alarm, or, when its owner is gone, the node the rendezvous hash prefers: two nodes never
  race to run one passivated identity's tasks (and if their views of the members differ
  for a moment, the compare-and-set still lets only one activate).

Nodes of one process on ``memory://`` without remoting reach each other through
:data:`_IN_PROCESS` (address -> that system's path lookup), as the contract promises. A
route added with :func:`add_in_process_route` stands between them: the simulated network
of ``tocsin.testing.Simulation`` delays, drops and partitions what crosses it there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, final

from ..durable._spi import Claim
from ..errors import CoordinatorError, CoordinatorUnavailableError, NotOwnerError
from ._rendezvous import rendezvous_owner

if TYPE_CHECKING:
    from ..actor._spi import PID
    from ._node import ClusterNode

__all__ = [
    "ClusterOwnership",
    "InProcessRoute",
    "add_in_process_route",
    "durable_path",
    "in_process_pid",
    "register_in_process",
]

#: Systems of this process on a memory:// cluster without remoting, by address.
_IN_PROCESS: dict[str, Callable[[str], PID | None]] = {}

#: ``route(origin, pid) -> PID``: what a node at address ``origin`` sends to instead of
#: ``pid`` (a peer's local PID), e.g. a PID whose target is a simulated network link.
InProcessRoute = Callable[[str, "PID"], "PID"]

#: The routes in force, in the order added (a list: adding and removing keep order).
_ROUTES: list[InProcessRoute] = []


def add_in_process_route(route: InProcessRoute) -> Callable[[], None]:
    """Send what crosses between in-process nodes through ``route``; returns the remove
    function. Routes apply in the order added."""
    _ROUTES.append(route)

    def remove() -> None:
        if route in _ROUTES:
            _ROUTES.remove(route)

    return remove


def durable_path(kind: str, identity: str) -> str:
    """The path of a durable identity's PID on every node."""
    return f"/durable/{kind}/{identity}"


def register_in_process(address: str, lookup: Callable[[str], PID | None]) -> Callable[[], None]:
    """Make this process's system at ``address`` reachable by its in-process peers;
    returns the unregister function."""
    _IN_PROCESS[address] = lookup

    def remove() -> None:
        if _IN_PROCESS.get(address) is lookup:
            del _IN_PROCESS[address]

    return remove


def in_process_pid(address: str, path: str, origin: str | None = None) -> PID | None:
    """The PID at ``path`` of the in-process system at ``address`` (None if not here).

    Args:
        origin: the address of the node that will send to it: the PID is then the one
            the routes give (:func:`add_in_process_route`). ``None``: the peer's own PID.
    """
    lookup = _IN_PROCESS.get(address)
    pid = None if lookup is None else lookup(path)
    if pid is not None and origin is not None:
        for route in _ROUTES:
            pid = route(origin, pid)
    return pid


@final
class ClusterOwnership:
    """The :class:`~tocsin.durable._ownership.OwnershipGate` of one cluster node.

    Args:
        node: this node's cluster side.
        pid_at: the PID at ``(address, path)`` of another node (remoting, or in-process).
        fenced: the highest epoch the durable store has fenced for ``(kind, identity)``
            (``Store.fence_epoch``): every new ownership takes an epoch above it.
    """

    def __init__(
        self,
        node: ClusterNode,
        pid_at: Callable[[str, str], PID | None],
        fenced: Callable[[str, str], Awaitable[int]],
    ) -> None:
        self._node = node
        self._pid_at = pid_at
        self._fenced = fenced

    def owner_pid(self, node: str, kind: str, identity: str) -> PID | None:
        """The identity's PID at ``node`` (None if ``node`` is not a known live member)."""
        address = self._node.membership.address_of(node)
        if address is None:
            return None
        return self._pid_at(address, durable_path(kind, identity))

    async def resolve(self, node: str, kind: str, identity: str) -> PID | None:
        """:meth:`owner_pid`, reading the member list again when ``node`` is not in this
        node's view (it joined after the last read: the directory named it first)."""
        pid = self.owner_pid(node, kind, identity)
        if pid is None and node != self._node.membership.name:
            await self._node.membership.refresh()
            pid = self.owner_pid(node, kind, identity)
        return pid

    async def place(self, kind: str, identity: str) -> None:
        """Place a free identity on the coordinator's view (``system.durable``): the
        entry may name another node, with an epoch above the store's fence.

        Bounded (issue 20, item 6): every coordinator and store call it makes is (the
        drivers' timeouts), and it fails fast with a typed error rather than "stopped".

        Raises:
            NotOwnerError: this node holds no lease (lost, not regained yet).
            CoordinatorUnavailableError: the coordinator failed or did not answer.
            StoreError: the durable store failed.
        """
        if not self._node.membership.holds_lease():
            raise NotOwnerError(
                f"durable {durable_path(kind, identity)}: node {self._node.name!r} holds no "
                "cluster lease (lost, not yet regained): it can neither place the identity "
                "nor find its owner; it joins again by itself (LeaseRegained)"
            )
        floor = await self._fenced(kind, identity) + 1
        try:
            await self._node.directory.locate(kind, identity, floor=floor)
        except CoordinatorUnavailableError:
            raise
        except CoordinatorError as exc:
            raise CoordinatorUnavailableError(
                f"durable {durable_path(kind, identity)}: placing it failed: {exc}"
            ) from exc

    def holder(self) -> str:
        """This node's owner identity in the store's fence: name and incarnation."""
        membership = self._node.membership
        return f"{membership.name}/{membership.incarnation}"

    async def claim(self, kind: str, identity: str, *, refused: int | None = None) -> Claim:
        directory = self._node.directory
        membership = self._node.membership
        entry = await self._node.coordinator.owner(kind, identity)
        if entry is not None and entry.alive and not directory.mine(entry):
            return await self._elsewhere(entry.node, kind, identity)
        # Every epoch fenced so far is at most this, so an ownership created above it
        # never shares its epoch with an older owner (a fence written after this read is
        # a newer owner's, whose live entry the compare-and-set below then finds).
        fence = await self._fenced(kind, identity)
        if refused is not None:
            # The fence refused this node's epoch `refused` (another holder wrote it,
            # e.g. after the coordinator lost the directory): equal is not enough.
            fence = max(fence, refused)
        if entry is None or not entry.alive:
            # Free (never owned, or its owner's lease is gone): placed in one
            # compare-and-set on the coordinator's view of the live nodes.
            entry = await directory.acquire(
                kind, identity, previous=entry, floor=fence + 1, place=True
            )
        elif directory.mine(entry) and entry.epoch < fence:
            # This node's own entry below the store's fence (the coordinator lost its
            # data): lifted above it.
            entry = await directory.acquire(kind, identity, previous=entry, floor=fence + 1)
        elif (
            directory.mine(entry)
            and rendezvous_owner(kind, identity, membership.member_names()) != membership.name
        ):
            # A passivated identity of this node that a node joined since prefers: it
            # moves now, at its next activation (nothing is active here to stop).
            moved = await self._node.coordinator.hand_over(
                kind, identity, membership.name, membership.incarnation, floor=fence + 1
            )
            if moved is not None and not directory.mine(moved):
                self._node.count_handed_over()
                entry = moved
        if entry is None:
            return Claim(None)  # no lease here: nothing may activate on this node
        if directory.mine(entry):
            return Claim(entry.epoch, holder=self.holder())
        return await self._elsewhere(entry.node, kind, identity)

    async def _elsewhere(self, node: str, kind: str, identity: str) -> Claim:
        """The identity is owned by a live lease of ``node`` that is not this node's.

        When ``node`` is this node's own name, the lease is another incarnation of it:
        one whose join the coordinator granted but whose answer never came back (a
        timeout, a cut), or an older one not expired yet. Its PID is this node's PID:
        forwarding there would deliver to this very handle, which would claim and
        forward again, for ever and without waiting (found by the simulator, seed 4036
        on four nodes at lease 4). Nothing runs here and no owner is known until that
        lease lapses: the caller fails with ``NotOwnerError`` and retries later.
        """
        if node == self._node.membership.name:
            return Claim(None)
        return Claim(None, await self.resolve(node, kind, identity))

    def fenced(self, kind: str, identity: str) -> None:
        self._node.count_fenced_write()

    async def may_run(self, kind: str, identity: str) -> bool:
        membership = self._node.membership
        if not membership.holds_lease():
            return False
        entry = await self._node.coordinator.owner(kind, identity)
        if entry is not None and entry.alive:
            return self._node.directory.mine(entry)
        names = membership.member_names()
        if entry is not None:  # its owner's lease is gone, even if the view lags
            names = [name for name in names if name != entry.node or name == membership.name]
        return rendezvous_owner(kind, identity, names) == membership.name
