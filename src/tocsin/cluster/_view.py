# SPDX-License-Identifier: Apache-2.0
"""``system.cluster``: the user's view of this node's side of the cluster (DESIGN.md "One
vocabulary on every surface"), not the internal :class:`~._node.ClusterNode`.

What an application or an operator asks of the cluster: who is in it
(:meth:`ClusterView.members`), cron references paused cluster-wide
(:meth:`ClusterView.pause_cron`, :meth:`ClusterView.resume_cron`,
:meth:`ClusterView.pause_notes`), this node's clock offset to the coordinator
(:attr:`ClusterView.offset`) and its counters (:meth:`ClusterView.metrics`), and the
coordinator's directory (:attr:`ClusterView.coordinator`, e.g. ``owner(kind, id)``).
Membership, placement and claims stay the node's own business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from ._node import ClusterNode
    from ._protocol import Coordinator, PauseNote
    from ._values import Cluster, ClusterMetrics, Member

__all__ = ["ClusterView"]


@final
class ClusterView:
    """This node's side of the cluster, as users see it: ``system.cluster``.

    Made by the system (no public constructor); valid while the system runs.
    """

    __slots__ = ("_node",)

    def __init__(self, node: ClusterNode) -> None:
        self._node = node

    @property
    def name(self) -> str:
        """This node's name (its system's)."""
        return self._node.name

    @property
    def config(self) -> Cluster:
        """The :class:`~tocsin.Cluster` options this node runs with (``poll_interval``
        always a float once constructed)."""
        return self._node.config

    @property
    def incarnation(self) -> str:
        """This run of the node (a restart with the same name is a new incarnation)."""
        return self._node.membership.incarnation

    @property
    def coordinator(self) -> Coordinator:
        """The coordinator this node uses (its directory: ``await owner(kind, id)``)."""
        return self._node.coordinator

    def members(self) -> list[Member]:
        """Live nodes, this one included, sorted by name: a snapshot as of the last lease
        renewal or view read (at most ``min(lease / 3, poll_interval)`` seconds old)."""
        return self._node.members()

    async def pause_cron(self, reference: str, note: str | None = None) -> None:
        """Pause the cron schedule ``reference`` on every node, nodes that join later
        included, until :meth:`resume_cron`; ``note`` (why, at most 4,096 bytes), with
        when and by which node, shows on every node's ``list_schedules()``.

        Raises:
            TypeError, ValueError: a bad ``reference`` or ``note``.
            CoordinatorError: the coordinator failed (the pause may or may not be set).
        """
        await self._node.pause_cron(reference, note)

    async def resume_cron(self, reference: str) -> None:
        """Undo :meth:`pause_cron`: ticks are claimed again from the next fire time on.

        Raises:
            TypeError, ValueError: ``reference`` is not a non-empty str.
            CoordinatorError: the coordinator failed.
        """
        await self._node.resume_cron(reference)

    async def pause_notes(self) -> dict[str, PauseNote]:
        """Why, when and by which node each reference is paused cluster-wide (read from
        the coordinator)."""
        return await self._node.pause_notes()

    @property
    def offset(self) -> float:
        """Seconds to add to this node's wall clock to read the coordinator's (negative:
        this node's clock is fast), as measured at the last lease renewal; 0.0 before the
        first (``docs/cluster.md``, "Cluster time")."""
        return self._node.offset

    @property
    def offset_bound(self) -> float:
        """The error bound of :attr:`offset` (half the round trip it was measured in)."""
        return self._node.time.bound

    def metrics(self) -> ClusterMetrics:
        """This node's cluster counters (a snapshot)."""
        return self._node.metrics()

    def __repr__(self) -> str:
        return f"<ClusterView of node {self._node.name!r}>"
