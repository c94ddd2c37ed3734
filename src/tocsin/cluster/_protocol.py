# SPDX-License-Identifier: Apache-2.0
"""What a coordinator is: one small protocol and the frozen rows it returns.

A coordinator is an existing engine (PostgreSQL, Redis, a SQLite file, or memory for the
systems of one process) holding four things for a cluster:

* node leases (membership), judged on the coordinator's own clock;
* the directory: which node owns each durable identity ``(kind, identity)``, with an
  epoch that grows at every change of owner (the fencing token);
* cron tick claims: put-if-absent with a TTL, the lateness check in the same atomic step,
  a fence per grant (a per-reference counter), and for ``delivery="at_least_once"`` a short
  delivery lease the winner renews until it marks the claim done;
* cluster-wide flags: the cron references paused with ``pause_cron``.

Every method is one atomic step on the coordinator. Times are epoch seconds on the
coordinator's clock. A method that raises :class:`~tocsin.errors.CoordinatorError` has an
unknown outcome (the step may have happened): callers never read that as "nobody holds it".

Prior art: GoAkt's ``ClaimScheduleFire`` (put-if-absent with TTL on the cluster store),
procrastinate's connector protocol with its in-memory twin, the fencing tokens of
Kleppmann's "How to do distributed locking".
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, final, runtime_checkable

__all__ = [
    "EXPIRED_LEASE_RETENTION",
    "BatchCoordinator",
    "ClaimOutcome",
    "ClaimsInBatches",
    "Coordinator",
    "LeaseRow",
    "Ownership",
    "PauseNote",
    "TickClaim",
    "TickRequest",
    "claim_each",
    "claim_ticks",
    "least_fence",
]

#: Seconds an expired lease is kept (so peers can tell "expired" from "left", and
#: ``tocsin cluster members`` could show it) before a later ``join`` purges it.
EXPIRED_LEASE_RETENTION = 3600.0


class ClaimOutcome(enum.StrEnum):
    """How a cron tick claim ended (:meth:`Coordinator.claim_tick`)."""

    #: This node holds the claim: it, and only it, delivers the tick.
    WON = "won"
    #: Another node claimed this tick first.
    LOST = "lost"
    #: Reached more than the TTL after the fire instant: skipped, nothing written.
    LATE = "late"
    #: The reference is paused cluster-wide: skipped, nothing written.
    PAUSED = "paused"


def least_fence(now: float) -> int:
    """The least fence a claim granted at ``now`` (epoch seconds on the coordinator's
    clock) may carry: ``now`` in microseconds.

    Every coordinator grants ``max(last fence of the reference + 1, least_fence(now))``,
    so fences keep growing across a coordinator that lost its data (restarted empty,
    flushed, file deleted): its first grant of a reference after the loss is at least its
    clock in microseconds, above every fence it granted before, as long as its clock has
    not gone back and it never granted a reference more than one fence per microsecond
    on average (a reference's fences lead its clock by at most the grants of a burst, a
    large backfill, which the following microseconds absorb). The identities' epochs get
    the same guarantee from the durable store's fences (``floor``).
    """
    return int(now * 1_000_000)


@final
class TickClaim(NamedTuple):
    """What :meth:`Coordinator.claim_tick` answered.

    A ``NamedTuple`` rather than a frozen dataclass, as :class:`TickRequest`: one is made
    per tick per node (a thousand a second on each node of ``bench/cluster_load.py``),
    and a tuple is made in a fifth of the time.

    Attributes:
        outcome: a :class:`ClaimOutcome`.
        fence: ``WON``: the claim's token, larger than the last one the coordinator
            granted for the same reference (any key), so a re-claimed tick's new winner
            holds a larger one than the winner it replaces: one more than it, or the
            coordinator's clock in microseconds if that is larger (:func:`least_fence`),
            so fences keep growing across a coordinator that lost its data; else 0.
        retry_in: ``LOST`` to an ``at_least_once`` claim not marked done yet (asked with
            a ``lease``): seconds, on the coordinator's clock, until its delivery lease
            ends, when the caller may claim it again; else ``None`` (nothing to watch:
            done, or an ``at_most_once`` claim).
    """

    outcome: ClaimOutcome
    fence: int = 0
    retry_in: float | None = None


@final
class TickRequest(NamedTuple):
    """One tick to claim in a batch (:meth:`BatchCoordinator.claim_ticks`): the arguments
    of :meth:`Coordinator.claim_tick` but the node, with the same meaning (a
    ``NamedTuple``: one per tick per node, see :class:`TickClaim`)."""

    key: str
    reference: str
    fire_at: float
    ttl: float
    keep: float | None = None
    lease: float | None = None
    backfill: bool = False

    def late(self, now: float) -> bool:
        """The lateness check: reached more than the TTL after the instant at ``now`` (the
        claimer's clock), and not a backfill (which has none)."""
        return not self.backfill and now - self.fire_at > self.ttl

    def expiry(self, now: float) -> float:
        """When a claim won at ``now`` expires: ``max(ttl, keep)`` after the instant, or
        after ``now`` if the instant is still to come."""
        return max(now, self.fire_at) + max(self.ttl, self.keep or 0.0)


@final
@dataclass(frozen=True, slots=True)
class LeaseRow:
    """One node's lease as the coordinator holds it.

    ``alive`` is judged by the coordinator at the moment of the read (``expires`` later
    than its clock). ``incarnation`` tells a restarted node from its previous life.
    ``zone`` is the IANA zone the node evaluates cron in (``ActorSystem(timezone=...)``):
    every node of a cluster must have the same one, so all compute the same instants.
    Leases written before the zone was recorded read ``"UTC"``, the zone those versions
    used for cluster cron.
    """

    node: str
    incarnation: str
    address: str
    joined: float
    renewed: float
    expires: float
    alive: bool
    zone: str = "UTC"


@final
@dataclass(frozen=True, slots=True)
class PauseNote:
    """Who paused a cron reference cluster-wide, when, and why (``pause_cron(note=)``).

    ``paused_at`` is epoch seconds on the pausing node's (cluster) clock; ``paused_by``
    its node name; ``note`` the operator's text, or ``None``.
    """

    note: str | None
    paused_at: float
    paused_by: str


@final
@dataclass(frozen=True, slots=True)
class Ownership:
    """Who owns a durable identity, with the epoch of that ownership.

    ``epoch`` grows by one at every change of owner of ``(kind, identity)`` and never goes
    back: it is the fencing token every durable write of the owner carries. ``alive`` says
    whether the owner's lease (same incarnation) was live when this was read.
    """

    kind: str
    identity: str
    node: str
    incarnation: str
    epoch: int
    alive: bool


@runtime_checkable
class Coordinator(Protocol):
    """The cluster's shared state on an existing engine. Every method is one atomic step.

    Guarantees every implementation gives (``tests/cluster/test_coordinator_contract.py``
    runs the same suite on memory, SQLite, PostgreSQL and Redis):

    * Leases are judged on the coordinator's clock; an expired lease cannot be renewed.
    * :meth:`claim_owner` changes the owner only when the current owner's lease is not
      live, and only for a caller whose own lease is live; the epoch then grows (by one,
      or to the caller's ``floor``), and never goes back. With ``place=True`` the new
      owner is the rendezvous choice among the leases live in that same step.
    * :meth:`claim_tick` writes at most one claim per key until it expires (``keep``
      after the instant, at least its TTL); a tick reached more than ``ttl`` after
      ``fire_at`` (unless ``backfill``) or for a paused reference is refused without
      writing anything. Claims are never deleted before they expire. Each grant gets a
      fence larger than every earlier grant of the same reference.
    * An ``at_least_once`` claim (``lease`` given) is held until ``now + lease``; its
      holder extends it with :meth:`renew_tick` and ends it with :meth:`finish_tick`;
      once its lease has passed undone, the next ``claim_tick`` with a ``lease`` wins it
      again, with a new fence (the old holder's renew and finish then fail).
    """

    url: str

    async def open(self) -> None:
        """Connect and create the schema if needed (idempotent)."""
        ...

    async def close(self) -> None:
        """Release connections (idempotent)."""
        ...

    async def now(self) -> float:
        """The coordinator's clock, epoch seconds."""
        ...

    # -- membership ------------------------------------------------------------------

    async def join(
        self, node: str, incarnation: str, address: str, lease: float, zone: str = "UTC"
    ) -> LeaseRow | None:
        """Take the lease of ``node`` for ``lease`` seconds, recording its cron ``zone``.

        Returns the new lease, or ``None`` when a live lease of another incarnation holds
        the name (a previous life not yet expired, or another node using the name).
        Leases expired more than :data:`EXPIRED_LEASE_RETENTION` ago are purged. The
        zone is kept as given (renewals keep it); comparing zones is the caller's job.
        The row's ``renewed`` is the coordinator's clock read in this step (each node
        measures its clock offset from it: ``cluster/_time.py``).
        """
        ...

    async def renew(self, node: str, incarnation: str, lease: float) -> LeaseRow | None:
        """Extend a live lease to ``now + lease``; ``None`` if it expired or is gone.

        The row's ``renewed`` is ``now``, the coordinator's clock read in this step.
        """
        ...

    async def leave(self, node: str, incarnation: str) -> bool:
        """Delete the lease of this incarnation (graceful leave); whether it existed."""
        ...

    async def leases(self) -> tuple[float, list[LeaseRow]]:
        """The coordinator's clock and every lease it holds, live or expired, by node."""
        ...

    # -- directory -------------------------------------------------------------------

    async def owner(self, kind: str, identity: str) -> Ownership | None:
        """The directory entry of ``(kind, identity)``, or ``None`` if never owned."""
        ...

    async def claim_owner(
        self,
        kind: str,
        identity: str,
        node: str,
        incarnation: str,
        *,
        floor: int = 0,
        place: bool = False,
    ) -> Ownership | None:
        """Compare-and-set ownership of ``(kind, identity)``.

        One atomic step: if the caller's own lease is not live, nothing changes. If the
        entry is missing, or its owner's lease (same incarnation) is not live, it gets a
        new owner with the epoch ``max(epoch + 1, floor)`` (``max(1, floor)`` for a new
        entry): the caller, or with ``place=True`` the node the rendezvous hash prefers
        among the leases live at that step (the caller included; its incarnation is
        recorded), which claims nothing more on arrival: the entry already names it. If
        the caller already owns the entry and its epoch is below ``floor``, the epoch
        becomes ``floor`` (a durable store fenced a higher epoch than the directory
        knows: the coordinator lost its data). Otherwise nothing changes.

        ``floor`` is how a node keeps epochs growing across a coordinator that lost its
        directory (restarted empty, file deleted): it passes one more than the highest
        epoch its durable store has fenced for the identity.

        Returns:
            The entry after the step (the caller's, the placed node's or another live
            owner's), or ``None`` when there is no entry and the caller could not claim.
        """
        ...

    async def hand_over(
        self, kind: str, identity: str, node: str, incarnation: str, *, floor: int = 0
    ) -> Ownership | None:
        """Rebalancing: the caller owns ``(kind, identity)`` and has stopped its
        activation; give the entry to the node the rendezvous hash prefers among the
        leases live at this step, with the epoch ``max(epoch + 1, floor)``.

        One atomic step. Nothing changes when the caller does not own the entry, holds no
        live lease, or is itself the preferred node.

        Returns:
            The entry after the step (``None`` if there is none).
        """
        ...

    # -- cron single fire ------------------------------------------------------------

    async def claim_tick(
        self,
        key: str,
        reference: str,
        fire_at: float,
        ttl: float,
        node: str,
        *,
        keep: float | None = None,
        lease: float | None = None,
        backfill: bool = False,
    ) -> TickClaim:
        """Claim one cron tick put-if-absent, in one atomic step on the coordinator's clock.

        ``PAUSED`` if ``reference`` is paused, ``LATE`` if ``now - fire_at > ttl`` and not
        ``backfill`` (both write nothing), else ``WON`` if no unexpired claim holds ``key``,
        or, with a ``lease``, if the claim holding it is undone and its delivery lease has
        passed (a re-claim). A win writes the claim, kept until ``max(now, fire_at) +
        max(ttl, keep)`` (a re-claim keeps the claim's expiry), with the next fence of
        ``reference`` and, with a ``lease``, held undone until ``now + lease``. Else
        ``LOST`` (with ``retry_in`` for a caller with a ``lease`` when the holder is
        undone).

        Args:
            keep: seconds the claim is kept after the instant (``claim_retention``); at
                least ``ttl`` whatever is given.
            lease: ``at_least_once``: the delivery lease, seconds; ``None``:
                ``at_most_once`` (the claim is done as soon as it is won).
            backfill: no lateness check (an instant of the past, claimed with the same
                key as its regular tick: a claim still kept makes it ``LOST``).
        """
        ...

    async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
        """Extend the delivery lease of the undone claim ``key`` granted with ``fence``
        to ``now + lease``; ``False`` (nothing changed) if it is done or was re-claimed."""
        ...

    async def finish_tick(self, key: str, fence: int) -> bool:
        """Mark the claim ``key`` granted with ``fence`` done (never claimed again while
        kept); ``False`` (nothing changed) if it was re-claimed with another fence or is
        gone."""
        ...

    async def set_cron_paused(self, reference: str, paused: bool) -> None:
        """Pause (or resume) a cron reference cluster-wide."""
        ...

    async def paused_crons(self) -> frozenset[str]:
        """The cron references paused cluster-wide."""
        ...

    async def set_pause_note(self, reference: str, note: PauseNote | None) -> None:
        """Record (or, with ``None``, forget) why ``reference`` is paused cluster-wide."""
        ...

    async def pause_notes(self) -> dict[str, PauseNote]:
        """The notes of the references paused cluster-wide (a reference paused without
        one, or by an older version, has none)."""
        ...


@runtime_checkable
class BatchCoordinator(Coordinator, Protocol):
    """A coordinator that claims many ticks in one round trip (every built-in one).

    Kept apart from :class:`Coordinator` so a coordinator written before it still
    satisfies that protocol: :func:`claim_ticks` loops its single claim.
    """

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        """Claim every tick of ``requests`` for ``node`` in one round trip to the
        coordinator; the answers in the order of ``requests``.

        Each tick is decided exactly as :meth:`Coordinator.claim_tick` decides it (pause,
        lateness on the coordinator's clock, put-if-absent, fence, delivery lease), as if
        the claims were made one after another in the order given: two requests for one
        reference get two fences, in that order. A raise has an unknown outcome for every
        request of the batch (some may have been written), as for a single claim.
        """
        ...


class ClaimsInBatches(abc.ABC):
    """The single claim of a coordinator that claims in batches: :meth:`claim_tick` is a
    :meth:`claim_ticks` of one request (or the coordinator's own :meth:`_claim_one`), so
    the protocol's signature is spelled once for every built-in coordinator."""

    __slots__ = ()

    @abc.abstractmethod
    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        """:meth:`BatchCoordinator.claim_ticks`."""

    async def claim_tick(
        self, key: str, reference: str, fire_at: float, ttl: float, node: str, **options: Any
    ) -> TickClaim:
        """:meth:`Coordinator.claim_tick`: its keyword-only options (``keep``, ``lease``,
        ``backfill``) are :class:`TickRequest`'s fields of the same names."""
        return await self._claim_one(TickRequest(key, reference, fire_at, ttl, **options), node)

    async def _claim_one(self, request: TickRequest, node: str) -> TickClaim:
        """One claim: a batch of one, unless the coordinator has a cheaper single step."""
        return (await self.claim_ticks((request,), node))[0]


async def claim_ticks(
    coordinator: Coordinator, requests: Sequence[TickRequest], node: str
) -> list[TickClaim]:
    """Claim ``requests`` for ``node``: in one round trip on a :class:`BatchCoordinator`
    (or anything with its ``claim_ticks``), else one :meth:`Coordinator.claim_tick` after
    another (the protocol's default)."""
    batch = getattr(coordinator, "claim_ticks", None)  # also a partial one (StoreClaims)
    if batch is not None:
        answers: list[TickClaim] = await batch(requests, node)
        return answers
    return await claim_each(coordinator.claim_tick, requests, node)


async def claim_each(
    claim: Callable[..., Awaitable[TickClaim]], requests: Sequence[TickRequest], node: str
) -> list[TickClaim]:
    """``requests`` claimed for ``node`` one after another, in order, through ``claim``
    (a :meth:`Coordinator.claim_tick`): the batch of a coordinator that has none, and
    the fallback of one whose batch cannot take every request."""
    return [
        await claim(
            r.key,
            r.reference,
            r.fire_at,
            r.ttl,
            node,
            keep=r.keep,
            lease=r.lease,
            backfill=r.backfill,
        )
        for r in requests
    ]
