# SPDX-License-Identifier: Apache-2.0
"""The cluster side of one node: what ``system.cluster`` is.

It composes the coordinator, membership (the lease), the directory (durable identities)
and the cron claims, behind the calls of the contract: ``members()``, ``pause_cron``,
``resume_cron``, ``metrics()``. The actor system creates it, starts it before anything
may claim, and stops it last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import final

from ..clock import Clock, OffsetClock
from ..triggers import check_note
from ._membership import Membership
from ._placement import Directory
from ._protocol import Coordinator, PauseNote
from ._single_fire import CronClaims
from ._time import ClusterTime
from ._url import open_coordinator
from ._values import Cluster, ClusterMetrics, Counters, Member

__all__ = ["ClusterNode"]


def _reference(reference: object) -> str:
    if not isinstance(reference, str):
        raise TypeError(f"`reference` must be a str, got {type(reference).__name__}")
    if not reference:
        raise ValueError("`reference` must be a non-empty str, got ''")
    return reference


@final
class ClusterNode:
    """One node's membership, directory and cron claims (``system.cluster``).

    Users never construct it: ``ActorSystem(..., cluster=Cluster(...))`` does.

    Args:
        config: the :class:`Cluster` configuration.
        name: this node's name (the system name); unique in the cluster.
        address: where peers reach it (the remoting address; the name for ``memory://``).
        clock: the system's clock. An :class:`~tocsin.clock.OffsetClock` (cluster mode
            gives one) is this node's cluster clock: its offset is set to the measured
            offset to the coordinator's clock at each lease renewal; a ``memory://`` or
            ``sqlite://`` coordinator opened from a URL reads its inner clock.
        publish: publishes :class:`NodeJoined` / :class:`NodeLeft` (``system.events``).
        on_lease_lost: called when this node loses its lease (stop durable activations).
        zone: the IANA zone this node evaluates cron in (``ActorSystem(timezone=...)``);
            it must be the live members' zone.
    """

    def __init__(
        self,
        config: Cluster,
        *,
        name: str,
        address: str,
        clock: Clock,
        publish: Callable[[object], None],
        on_lease_lost: Callable[[], None] | None = None,
        zone: str = "UTC",
    ) -> None:
        self.config = config
        self._name = name
        self._clock = clock  # the cluster clock: a pause note's time
        # The coordinator judges on the node's own clock (memory, SQLite), never on the
        # corrected one: the correction is measured against it.
        own = clock.inner if isinstance(clock, OffsetClock) else clock
        if isinstance(config.coordinator, str):
            self.coordinator: Coordinator = open_coordinator(config.coordinator, clock=own)
            self._owns_coordinator = True
        else:
            self.coordinator = config.coordinator
            self._owns_coordinator = False
        self._counters = Counters()
        self.time = ClusterTime(
            clock,
            node=name,
            max_skew=config.max_skew,
            lease=config.lease,
            coordinator_now=self.coordinator.now,
            counters=self._counters,
        )
        self.membership = Membership(
            self.coordinator,
            name=name,
            address=address,
            lease=config.lease,
            clock=clock,
            publish=publish,
            counters=self._counters,
            on_lease_lost=on_lease_lost,
            watch_every=config.poll_interval,
            zone=zone,
            time=self.time,
        )
        self.directory = Directory(self.coordinator, self.membership, self._counters)
        self.cron_claims = CronClaims(
            self.coordinator,
            node=name,
            counters=self._counters,
            clock=clock,
            delivery_lease=config.delivery_lease,
            claim_retention=config.claim_retention,
            not_early=self.time.not_early,
            # Half of max_skew: the other half covers this node's offset uncertainty,
            # so a claim sent ahead is never refused as early.
            ahead=min(config.claim_ahead, config.max_skew / 2),
            trusted=self.time.trusted,
        )
        self._started = False

    @property
    def name(self) -> str:
        """This node's name."""
        return self.membership.name

    async def start(self) -> None:
        """Open the coordinator (if made from a URL) and join. On failure nothing is left
        open or joined.

        Raises:
            CoordinatorError: the coordinator cannot be reached.
            NodeNameTakenError: another live node uses this name.
            TimezoneMismatchError: the live members evaluate cron in another zone.
        """
        if self._started:
            return
        if self._owns_coordinator:
            await self.coordinator.open()
        self.time.start()
        try:
            await self.membership.start()
        except BaseException:
            self.time.stop()
            if self._owns_coordinator:
                await self.coordinator.close()
            raise
        self._started = True

    async def stop(self) -> None:
        """Leave the cluster (the lease is deleted: this node's identities may move at
        once) and close the coordinator if this node opened it."""
        if not self._started:
            return
        self._started = False
        try:
            await self.cron_claims.close()
            await self.membership.stop()
        finally:
            self.time.stop()
            if self._owns_coordinator:
                await self.coordinator.close()

    @property
    def offset(self) -> float:
        """Seconds to add to this node's own wall clock to read the coordinator's
        (negative: this node's clock is fast), as measured at the last lease renewal
        good enough to apply (within half its round trip); 0.0 before the first.

        In cluster mode the system's clock already adds it (``system.clock.wall()`` is
        the cluster's time): cron instants, claims and durable due times follow the
        coordinator's clock. Beyond ``Cluster(max_skew=...)`` the node warns once a
        minute (``docs/cluster.md``, "Cluster time")."""
        return self.time.offset

    def members(self) -> list[Member]:
        """Live nodes, this one included, sorted by name: a snapshot as of the last lease
        renewal or view read (at most ``min(lease / 3, poll_interval)`` seconds old)."""
        return self.membership.members()

    async def pause_cron(self, reference: str, note: str | None = None) -> None:
        """Pause the cron schedule ``reference`` on every node, nodes that join later
        included: no node claims its ticks until :meth:`resume_cron`. Pausing a paused
        reference is a no-op (its first note stays); an unknown one is paused all the
        same (a node may register it later). ``note`` (why), with when and by which node,
        is kept on the coordinator: :meth:`pause_notes`, ``tocsin cluster members``.

        Raises:
            TypeError, ValueError: ``reference`` is not a non-empty str, ``note`` not a
                str or None, or longer than 4,096 bytes.
            CoordinatorError: the coordinator failed (the pause may or may not be set).
        """
        reference = _reference(reference)
        note = check_note(note)
        coordinator = self.coordinator
        if reference in await coordinator.paused_crons():
            return
        await coordinator.set_cron_paused(reference, True)
        pause = PauseNote(note, self._clock.wall(), self._name)
        await coordinator.set_pause_note(reference, pause)
        self.cron_claims.remember_pause(reference, pause)

    async def resume_cron(self, reference: str) -> None:
        """Undo :meth:`pause_cron`: ticks are claimed again from the next fire time on;
        the pause note is forgotten.

        Raises:
            TypeError, ValueError: ``reference`` is not a non-empty str.
            CoordinatorError: the coordinator failed.
        """
        reference = _reference(reference)
        await self.coordinator.set_cron_paused(reference, False)
        await self.coordinator.set_pause_note(reference, None)
        self.cron_claims.remember_pause(reference, None)

    async def pause_notes(self) -> dict[str, PauseNote]:
        """Why, when and by which node each reference was paused cluster-wide."""
        return await self.coordinator.pause_notes()

    async def paused_crons(self) -> frozenset[str]:
        """The cron references paused cluster-wide."""
        return await self.coordinator.paused_crons()

    def count_fenced_write(self) -> None:
        """Count one durable write refused by the fence (``metrics().fenced_writes``)."""
        self._counters.fenced_writes += 1

    def count_handed_over(self) -> None:
        """Count one identity handed to another node (``metrics().handed_over``)."""
        self._counters.handed_over += 1

    def metrics(self) -> ClusterMetrics:
        """This node's cluster counters (a snapshot)."""
        return self._counters.snapshot()
