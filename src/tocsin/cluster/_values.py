# SPDX-License-Identifier: Apache-2.0
"""The cluster's public values: :class:`Cluster` (config), events, snapshots, counters."""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Final, Literal, final

from .._keywords import keyword_only
from ._protocol import Coordinator
from ._url import check_coordinator_url

__all__ = [
    "MAX_CLAIM_RETENTION",
    "MAX_DELIVERY_LEASE",
    "MAX_LEASE",
    "MIN_LEASE",
    "Cluster",
    "ClusterMetrics",
    "Counters",
    "Member",
    "NodeJoined",
    "NodeLeft",
]

#: Shortest lease accepted, seconds: renewals every lease/3 must fit a coordinator round
#: trip on a busy machine with room to spare.
MIN_LEASE: Final = 0.5
#: Longest lease accepted, seconds (an hour: a dead node's identities would wait that long).
MAX_LEASE: Final = 3600.0
#: Longest delivery lease accepted, seconds: the shortest claim TTL (60 s), so a tick whose
#: winner died is re-claimed within the instant's window.
MAX_DELIVERY_LEASE: Final = 60.0
#: Longest claim retention accepted, seconds (a year).
MAX_CLAIM_RETENTION: Final = 366 * 86_400.0


def _seconds(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"`{name}` must be a finite number of seconds, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"`{name}` must be between {low} and {high} seconds, got {value!r}")
    return float(value)


@final
@keyword_only("coordinator")
@dataclass(frozen=True, slots=True)
class Cluster:
    """Cluster mode for an :class:`~tocsin.ActorSystem`: ``ActorSystem(..., cluster=Cluster(...))``.

    ``coordinator`` may be given by position; every other option is keyword-only (the
    positional form still works for one release, with a ``DeprecationWarning``).

    Args:
        coordinator: a coordinator URL (``postgresql://…``, ``redis://…``,
            ``sqlite:///path``, ``memory://NAME``) or a
            :class:`~tocsin.cluster.Coordinator` instance (which the node uses as is:
            open it before starting the system and close it after). URL query options
            are a closed list (PostgreSQL ``?schema=`` and ``?connect_timeout=``, Redis
            ``?prefix=``, and the drivers' own); any other is refused here, as is a
            Redis database that is not a number.
        lease: seconds a node stays a member without renewing; it renews every
            ``lease/3``. A node not renewed within ``lease`` is dead: its durable
            identities may activate elsewhere. Between :data:`MIN_LEASE` and
            :data:`MAX_LEASE`.
        poll_interval: seconds between two reads of the member list besides the
            renewals (used when shorter than ``lease/3``): a dead node is noticed
            (``NodeLeft``) within ``poll_interval`` of its lease's expiry, and every node
            then looks for its identities' due tasks, so they run elsewhere within
            ``lease + poll_interval``. Between 0.05 s and ``lease``; ``None`` (the
            default) means ``min(1.0, lease)``. Always a float once constructed.
        rebalance_rate: identities per second a node hands over when a node joins and
            is now the preferred owner of some of its idle identities (they passivate
            here and activate there at their next message or due task); busy ones move
            once idle. A positive finite number; always a float once constructed.
        delivery_lease: seconds a ``schedule_cron(..., delivery="at_least_once")`` tick's
            claim stays held without news from its winner: the winner renews it every
            ``delivery_lease / 3`` while the target's ``receive`` runs and marks it done
            when it returns; a winner that died or froze is replaced by another node
            once the lease has passed (a later tick's duplicate carries a larger
            ``ctx.tick.fence``). Between :data:`MIN_LEASE` and
            :data:`MAX_DELIVERY_LEASE` (60 s, the shortest claim TTL); default 5 s.
        claim_retention: seconds a tick claim is kept after its instant (at least its
            TTL, the gap to the next instant clamped to [60 s, 24 h]), so a
            ``backfill_schedule`` never delivers again an instant whose claim is kept.
            Between 0 and :data:`MAX_CLAIM_RETENTION`; default a day. Kept claims cost
            one row (key) per reference and instant on the coordinator.
        max_skew: seconds this node's clock may be off the coordinator's before it warns
            (once a minute), and by which a cron claim may precede its instant on the
            coordinator's clock (a claim earlier than that waits for the instant). The
            offset is measured at each lease renewal and corrected whatever its size
            (``docs/cluster.md``, "Cluster time"). Between 0.001 and 3600; default 1.
        claim_ahead: seconds before a cron tick's (or a stored schedule's instant's)
            delivery time a node may send its claim, so the coordinator's round trip is
            paid before the instant and the winner delivers at the instant from its own
            timer. Used up to half of ``max_skew`` (never refused as early) and a
            quarter of the tick's period. A tick won ahead whose node stops, or whose
            local schedule is cancelled, before its time is not delivered there:
            ``at_least_once``, another node delivers it once the delivery lease has
            passed; ``at_most_once``, it is lost (as when a winner dies right after
            its claim). ``docs/cluster.md``, "Claim ahead". Between 0 (claim at the
            delivery time) and 60; default 0.25.

    Raises:
        InvalidCoordinatorURLError: a malformed coordinator URL (checked here, so the
            mistake shows at the line that wrote it).
        ValueError: ``lease``, ``poll_interval``, ``rebalance_rate``, ``max_skew``,
            ``delivery_lease``, ``claim_retention`` or ``claim_ahead`` out of range.
    """

    coordinator: str | Coordinator
    _: KW_ONLY
    lease: float = 10.0
    poll_interval: float | None = None
    rebalance_rate: float = 100.0
    delivery_lease: float = 5.0
    claim_retention: float = 86_400.0
    max_skew: float = 1.0
    claim_ahead: float = 0.25

    def __post_init__(self) -> None:
        if not isinstance(self.coordinator, Coordinator):
            check_coordinator_url(self.coordinator)
        lease = _seconds("lease", self.lease, MIN_LEASE, MAX_LEASE)
        object.__setattr__(self, "lease", lease)
        given = min(1.0, lease) if self.poll_interval is None else self.poll_interval
        poll = _seconds("poll_interval", given, 0.05, lease)
        object.__setattr__(self, "poll_interval", poll)
        rate = self.rebalance_rate
        if (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not math.isfinite(rate)
            or rate <= 0
        ):
            raise ValueError(
                "`rebalance_rate` must be a positive finite number of identities per "
                f"second, got {rate!r}"
            )
        object.__setattr__(self, "rebalance_rate", float(rate))
        delivery = _seconds("delivery_lease", self.delivery_lease, MIN_LEASE, MAX_DELIVERY_LEASE)
        object.__setattr__(self, "delivery_lease", delivery)
        retention = _seconds("claim_retention", self.claim_retention, 0.0, MAX_CLAIM_RETENTION)
        object.__setattr__(self, "claim_retention", retention)
        skew = _seconds("max_skew", self.max_skew, 0.001, 3600.0)
        object.__setattr__(self, "max_skew", skew)
        ahead = _seconds("claim_ahead", self.claim_ahead, 0.0, 60.0)
        object.__setattr__(self, "claim_ahead", ahead)

    @property
    def renew_every(self) -> float:
        """Seconds between two lease renewals (``lease / 3``)."""
        return self.lease / 3


@final
@dataclass(frozen=True, slots=True)
class Member:
    """One live node, as ``system.cluster.members()`` reports it (a snapshot).

    Attributes:
        name: the node's name (its system name).
        address: where peers reach it (its remoting address; the name for ``memory://``).
        joined: when this life of the node joined (aware UTC, coordinator's clock).
        last_seen: its last lease renewal (aware UTC, coordinator's clock).
    """

    name: str
    address: str
    joined: datetime
    last_seen: datetime


@final
@dataclass(frozen=True, slots=True)
class NodeJoined:
    """Published on ``system.events`` when another node joins the cluster.

    Nodes already up when this node joins are listed by ``members()``, not announced.
    """

    name: str
    address: str


@final
@dataclass(frozen=True, slots=True)
class NodeLeft:
    """Published on ``system.events`` when a node leaves the cluster.

    ``reason`` is ``"left"`` for a graceful leave (its lease was removed) and ``"expired"``
    for a node that stopped renewing its lease (crashed, frozen, partitioned).
    """

    name: str
    address: str
    reason: Literal["left", "expired"]


@final
@dataclass(frozen=True, slots=True)
class LeaseLost:
    """Published on ``system.events`` when *this* node loses its own lease.

    From then on it claims nothing and its durable activations stop (another node may
    own their identities now); asks to identities it cannot reach fail with
    :class:`~tocsin.NotOwnerError` until :class:`LeaseRegained`. ``reason`` says why
    (not renewed in time by this node's clock, refused by the coordinator, or the
    coordinator lost its data).
    """

    name: str
    reason: str


@final
@dataclass(frozen=True, slots=True)
class LeaseRegained:
    """Published on ``system.events`` when *this* node holds a lease again after a
    :class:`LeaseLost` (it joined again); the node looks for its due durable work at
    once (``docs/cluster.md``, "Outages heal by themselves")."""

    name: str


@final
@dataclass(frozen=True, slots=True)
class ClusterMetrics:
    """Cluster counters of one node (``system.cluster.metrics()``), a snapshot.

    Attributes:
        leases_renewed: lease renewals the coordinator accepted.
        leases_lost: times this node lost its lease (renewal refused, or not renewed
            within ``lease`` by its own clock); it then rejoins as a new incarnation.
        renew_failures: renewals that raised (coordinator unreachable); outcome unknown.
        claims_won: cron ticks this node claimed (and so delivers).
        claims_lost: cron ticks another node claimed first.
        claims_skipped_late: ticks reached more than their TTL late: not claimed.
        claims_skipped_paused: ticks of references paused cluster-wide: not claimed.
        claims_failed: claims that raised: the tick is not delivered by this node.
        claims_coalesced: ticks not claimed because a claim of the same reference was
            in flight (a frozen coordinator) and a later tick came: coalesced into it.
        claims_reclaimed: ``at_least_once`` ticks this node claimed again after their
            winner's delivery lease passed undone (it died or froze): delivered here
            with a larger fence (also counted in ``claims_won``).
        claims_finished: ``at_least_once`` claims this node marked done (``receive``
            returned).
        claims_superseded: ``at_least_once`` claims of this node re-claimed by another
            node before this one could renew or finish them (it was frozen or cut off):
            that tick was delivered twice, the other delivery with a larger fence.
        ownership_claims: directory claims made for durable identities.
        takeovers: identities this node took over from an owner whose lease had expired.
        fenced_writes: durable writes of this node refused because a newer ownership
            epoch holds the identity (a zombie's writes; each stops its activation).
        handed_over: idle identities this node passivated and handed to the node that
            now prefers them (rebalancing after a join).
        claims_early: cron ticks whose claim waited because their instant had not yet
            come on the coordinator's clock (by more than ``max_skew``).
    """

    leases_renewed: int
    leases_lost: int
    renew_failures: int
    claims_won: int
    claims_lost: int
    claims_skipped_late: int
    claims_skipped_paused: int
    claims_failed: int
    ownership_claims: int
    takeovers: int
    fenced_writes: int = 0
    handed_over: int = 0
    claims_coalesced: int = 0
    claims_reclaimed: int = 0
    claims_finished: int = 0
    claims_superseded: int = 0
    claims_early: int = 0


@final
class Counters:
    """The mutable counters behind :class:`ClusterMetrics` (one set per node)."""

    __slots__ = (
        "claims_coalesced",
        "claims_early",
        "claims_failed",
        "claims_finished",
        "claims_lost",
        "claims_reclaimed",
        "claims_skipped_late",
        "claims_skipped_paused",
        "claims_superseded",
        "claims_won",
        "fenced_writes",
        "handed_over",
        "leases_lost",
        "leases_renewed",
        "ownership_claims",
        "renew_failures",
        "takeovers",
    )

    def __init__(self) -> None:
        self.leases_renewed = 0
        self.leases_lost = 0
        self.renew_failures = 0
        self.claims_won = 0
        self.claims_lost = 0
        self.claims_skipped_late = 0
        self.claims_skipped_paused = 0
        self.claims_failed = 0
        self.claims_coalesced = 0
        self.claims_reclaimed = 0
        self.claims_finished = 0
        self.claims_superseded = 0
        self.claims_early = 0
        self.ownership_claims = 0
        self.takeovers = 0
        self.fenced_writes = 0
        self.handed_over = 0

    def snapshot(self) -> ClusterMetrics:
        return ClusterMetrics(
            leases_renewed=self.leases_renewed,
            leases_lost=self.leases_lost,
            renew_failures=self.renew_failures,
            claims_won=self.claims_won,
            claims_lost=self.claims_lost,
            claims_skipped_late=self.claims_skipped_late,
            claims_skipped_paused=self.claims_skipped_paused,
            claims_failed=self.claims_failed,
            claims_coalesced=self.claims_coalesced,
            claims_reclaimed=self.claims_reclaimed,
            claims_finished=self.claims_finished,
            claims_superseded=self.claims_superseded,
            claims_early=self.claims_early,
            ownership_claims=self.ownership_claims,
            takeovers=self.takeovers,
            fenced_writes=self.fenced_writes,
            handed_over=self.handed_over,
        )
