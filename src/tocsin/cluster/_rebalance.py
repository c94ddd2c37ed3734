# SPDX-License-Identifier: Apache-2.0
"""Rebalancing on join: idle identities move to the node that now prefers them.

Placement picks the rendezvous choice among the live nodes when an identity is first
placed; an activation never moved by itself afterwards, so a node that joined a running
cluster got only new identities (issue 19, item 3). Now, when a node joins, every node
looks at its active identities: those whose preferred owner is now another node move
there, at most ``Cluster.rebalance_rate`` per second:

1. only an idle activation moves (nothing in its mailbox or in a turn, no task running,
   no transaction); a busy one is looked at again a second later, until it is idle;
2. the activation stops here (a passivation: ``post_stop`` runs) while messages that
   arrive meanwhile wait on this node;
3. then, in one step on the coordinator, the directory entry goes to the node the
   rendezvous hash prefers among the leases live at that step (``hand_over``), with an
   epoch above the store's fence;
4. the waiting messages claim again and are forwarded to the new owner, which activates
   on arrival; a due task's alarm ringing here wakes the new owner the same way.

Never two activations: the new owner claims nothing itself; it finds the entry its own
only once this activation has fully stopped. No message is lost: none is dropped while
the identity moves, they wait and follow it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, final

from ..clock import Clock
from ._periodic import sleep
from ._rendezvous import rendezvous_owner

if TYPE_CHECKING:
    from ..durable._spi import DurableHandle, DurableRuntime
    from ._node import ClusterNode
    from ._protocol import Ownership

__all__ = ["BUSY_RETRY", "Rebalancer"]

#: Seconds between two looks at the identities that should move but were busy.
BUSY_RETRY = 1.0

_log = logging.getLogger("tocsin.cluster")


@final
class Rebalancer:
    """Moves this node's idle identities to the nodes that now prefer them (one per node).

    Args:
        node: this node's cluster side.
        durable: this node's durable runtime (its handles).
        fenced: the store's highest fenced epoch of an identity (the hand-over goes above).
        clock: the system's clock (the rate's pauses).
        rate: identities handed over per second at most.
    """

    def __init__(
        self,
        node: ClusterNode,
        durable: DurableRuntime,
        fenced: Callable[[str, str], Awaitable[int]],
        clock: Clock,
        rate: float,
    ) -> None:
        self._node = node
        self._durable = durable
        self._fenced = fenced
        self._clock = clock
        self._pause = 1.0 / rate
        self._again = False
        self._running = False

    def node_joined(self) -> None:
        """A node joined: look for identities that now prefer another node."""
        self._again = True
        if not self._running:
            self._running = self._durable.spawn(self._run()) is not None

    async def _run(self) -> None:
        try:
            while self._again:
                self._again = False
                while await self._pass() and not self._again:
                    await sleep(self._clock, BUSY_RETRY)  # busy ones: when idle
        except Exception:  # a bug must not end rebalancing for the node's life silently
            _log.exception("node %s: rebalancing failed", self._node.name)
        finally:
            self._running = False

    async def _pass(self) -> bool:
        """Move what may move now; returns whether busy identities still should."""
        durable, membership = self._durable, self._node.membership
        busy = False
        for handle in list(durable.handles.values()):
            if durable.stopping or not membership.holds_lease():
                return False
            if handle.epoch is None or handle.cell is None:
                continue
            names = membership.member_names()
            if rendezvous_owner(handle.kind, handle.identity, names) == membership.name:
                continue
            if not handle.idle():
                busy = True
                continue
            if await handle.move(partial(self._hand_over, handle)):
                await sleep(self._clock, self._pause)
        return busy

    async def _hand_over(self, handle: DurableHandle) -> Ownership | None:
        membership = self._node.membership
        floor = await self._fenced(handle.kind, handle.identity) + 1
        entry = await self._node.coordinator.hand_over(
            handle.kind, handle.identity, membership.name, membership.incarnation, floor=floor
        )
        if entry is not None and entry.node != membership.name:
            self._node.count_handed_over()
        return entry
