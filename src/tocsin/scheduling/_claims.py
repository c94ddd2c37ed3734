# SPDX-License-Identifier: Apache-2.0
"""Cluster mode: cron ticks (and manual and backfilled ones) delivered only by the node
that claims them on the coordinator (internal).

:class:`Claims` owns the cluster gate (``tocsin.cluster.CronClaims``, set when the system
joins a cluster) and turns a claim's answer into a delivery through the tick path, or an
outcome in the schedule's history. The claim key, TTL and lateness rules are the gate's
(``cluster/_single_fire.py``, DESIGN.md "Cron single fire"); the policies the winner
applies are the engine's (:mod:`tocsin.triggers`, through ``TickPath.offer``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, final

from ..actor._spi import Outcome

if TYPE_CHECKING:
    from ._cron import CronState
    from ._record import ScheduleRecord
    from ._ticks import Claim, TickPath

__all__ = ["CANCELLED", "MANUAL_KEY", "Claims", "CronGate", "PausedNote"]

#: Suffix of the claim key of a manual tick in cluster mode (``trigger_schedule``): its
#: own key space, so it never takes a regular tick's claim.
MANUAL_KEY = "#manual"
#: The detail of an ``at_most_once`` tick this node won whose schedule was cancelled
#: (or replaced) before it was delivered.
CANCELLED = "the schedule was cancelled after this node won the tick's claim"


class PausedNote(Protocol):
    """A cluster-wide pause as the gate knows it (``tocsin.cluster.PauseNote``)."""

    @property
    def note(self) -> str | None: ...

    @property
    def paused_at(self) -> float: ...

    @property
    def paused_by(self) -> str: ...


class CronGate(Protocol):
    """Cluster mode: whether this node delivers a cron tick (``tocsin.cluster.CronClaims``).

    ``deliver_if_won`` never blocks: it claims the tick ``reference@fire_at`` (the
    *nominal* instant, whatever jitter delays its delivery: every node builds the same
    key) on the coordinator in the background, then calls ``deliver(fence, finished)``
    if this node won, else ``skipped(outcome, detail)`` (docs/cluster.md, "Cron single
    fire"):

    * ``deliver(fence, finished)`` hands the tick to its target, the claim's ``fence``
      in ``ctx.tick.fence``, and returns whether it was handed over (``False``: the
      schedule was cancelled meanwhile, or the target refused it; an ``at_least_once``
      claim is then left to lapse, so another node delivers it). ``finished`` is
      ``None`` for ``at_most_once``; for ``at_least_once`` it must be called once the
      target's ``receive`` for the tick has returned (the claim is marked done; until
      then it is renewed).
    * ``skipped(outcome, detail)``: this node does not deliver the tick. ``outcome`` is
      the :class:`~tocsin.Outcome` its history records: ``CLAIMED_ELSEWHERE`` (another
      node won; for ``at_least_once``, once that node marked it done),
      ``CLAIM_LATE`` (reached after the instant's window), ``CLAIM_ERROR`` (detail: the
      coordinator's error), ``PAUSED`` (paused cluster-wide), ``COALESCED`` (``at_most_once``
      only: a later tick of the reference came while this one waited for a claim in
      flight; ``at_least_once`` ticks all wait and are claimed), or
      ``None`` (the node is stopping: nothing to record).

    Keywords:
        delivery: ``"at_most_once"`` (default) or ``"at_least_once"``.
        at: the monotonic time (the system clock's) the tick is to be delivered at,
            when the claim is asked ahead of it (:meth:`lead` seconds before, at
            most): a won tick is handed over at that time (``None``: at once).
        backfill: an instant of the past, for ``backfill_schedule``: claimed with the
            same key as its regular tick, with no lateness check and never coalesced
            (call it once per instant, oldest first). A claim still kept on the
            coordinator (``Cluster(claim_retention=...)``, at least the TTL) makes it
            ``CLAIMED_ELSEWHERE``: an instant that fired within the retention is never
            delivered twice. Claims older than the retention may be gone: such an
            instant is delivered.
    """

    def pause_note(self, reference: str) -> PausedNote | None:
        """Why, when and by which node ``reference`` is paused cluster-wide, as far as
        this node knows (``ScheduleInfo.note``, ``.paused_at``, ``.paused_by``)."""
        ...

    def lead(self, period: float) -> float:
        """Seconds before a tick's delivery time its claim may be asked (``period``:
        the gap to the tick after it); 0: at the delivery time."""
        ...

    def deliver_if_won(
        self,
        reference: str,
        fire_at: float,
        period: float,
        deliver: Callable[[int, Callable[[], None] | None], bool],
        skipped: Callable[[Outcome | None, str | int | None], object] | None = None,
        *,
        delivery: str = "at_most_once",
        backfill: bool = False,
        at: float | None = None,
    ) -> None: ...


@final
class Claims:
    """The cluster claims of one scheduler (internal; see the module).

    Args:
        path: the tick path won ticks go through.
        loop: the system's event loop (a manual tick's claim is awaited).
    """

    def __init__(self, path: TickPath, loop: asyncio.AbstractEventLoop) -> None:
        self._path = path
        self._loop = loop
        # Cluster mode: set by the system when it joins a cluster (`set_gate`).
        self._gate: CronGate | None = None

    @property
    def path(self) -> TickPath:
        """The tick path won ticks go through."""
        return self._path

    @property
    def gate(self) -> CronGate | None:
        """The coordinator's cron claims, or ``None`` outside a cluster."""
        return self._gate

    @property
    def clustered(self) -> bool:
        """Whether cron ticks are claimed cluster-wide (a gate is set)."""
        return self._gate is not None

    def pause_note(self, reference: str) -> PausedNote | None:
        """The cluster-wide pause of ``reference`` this node knows of, or ``None``."""
        gate = self._gate
        return None if gate is None else gate.pause_note(reference)

    def lead(self, state: CronState) -> float:
        """Seconds before the delivery time of ``state``'s next tick its timer fires,
        to claim it ahead (the gate's :meth:`CronGate.lead`; 0 outside a cluster)."""
        gate = self._gate
        if gate is None:
            return 0.0
        nxt = state.following(state.next_wall)
        return gate.lead(math.inf if nxt is None else nxt - state.next_wall)

    def set_gate(self, gate: CronGate | None) -> None:
        """Join (or, with ``None``, leave) the cluster's cron claims."""
        self._gate = gate

    def claimed(
        self, record: ScheduleRecord, fire_at: float, claim: Claim | None = None
    ) -> bool | None:
        """This node won the claim of the tick ``fire_at``: deliver it (``claim``: its
        fence, done call and backfill flag; see ``TickPath.send``). Returns how it went
        (see ``TickPath.offer``)."""
        path = self._path
        policy = record.policy
        delivered: bool | None
        if policy is None:
            delivered = path.send(record, fire_at, claim)
        else:
            late = path.native_now(record) - fire_at
            delivered = path.offer(record, policy, fire_at, late, claim)
        if delivered is not True and not record.send_to.alive():
            path.retire(record)
        return delivered

    def deliver_if_claimed(
        self,
        record: ScheduleRecord,
        state: CronState,
        fire_at: float,
        *,
        backfill: bool = False,
        at: float | None = None,
    ) -> None:
        """Cluster mode: deliver this tick only if this node claims it (the claim runs in
        the background; the schedule is re-armed meanwhile, as without a cluster).

        ``fire_at`` is the nominal instant (the claim key on every node). The won tick
        goes through the schedule's policies and travels as a ``TickItem`` carrying the
        claim's fence (``ctx.tick.fence``) and, for ``at_least_once``, the call that
        marks the claim done once ``receive`` has returned (every target calls
        ``finished()`` on a tracked item: a local cell when ``receive`` returns, a remote
        target on the completion frame). ``at``: the tick's (jittered) delivery time on
        the monotonic clock, when the claim is asked ahead of it (:meth:`lead`): a won
        tick is delivered then."""
        gate = self._gate
        assert gate is not None
        # The fire time after this one: `fire_cron` has just asked the same question of
        # the state, which remembers the answer (one next-fire computation per tick).
        nxt = state.following(fire_at)
        period = math.inf if nxt is None else nxt - fire_at
        pending = _Pending(self, record, fire_at, backfill)
        gate.deliver_if_won(
            record.reference,
            fire_at,
            period,
            pending.deliver,
            pending.skipped,
            delivery=state.delivery,
            backfill=backfill,
            at=at,
        )

    async def claim_then(
        self,
        record: ScheduleRecord,
        fire_at: float,
        won: Callable[[], bool | None],
    ) -> None:
        """Claim the manual tick ``<reference>#manual@fire_at`` cluster-wide and, if this
        node won, call ``won()`` (which delivers it); return once decided."""
        gate = self._gate
        assert gate is not None
        path = self._path
        decided: asyncio.Future[None] = self._loop.create_future()

        def deliver(fence: int, finished: Callable[[], None] | None) -> bool:
            try:
                delivered = not record.dead and won()
                if finished is not None:
                    finished()  # a manual tick is not re-delivered by another node
                return delivered is True
            finally:
                if not decided.done():
                    decided.set_result(None)

        def lost(outcome: Outcome | None, detail: str | int | None) -> None:
            if outcome is not None and not record.dead:
                path.outcome(record, fire_at, outcome, "manual" if detail is None else detail)
            if not decided.done():
                decided.set_result(None)

        gate.deliver_if_won(f"{record.reference}{MANUAL_KEY}", fire_at, math.inf, deliver, lost)
        await decided


@final
class _Pending:
    """A cron tick whose claim is in flight: what the gate calls with the answer.

    One object per tick (and its two bound methods) rather than two closures and their
    cells: they live through the claim's round trip, long enough to be promoted to the
    collector's oldest generation, whose full passes then come more often (at 1,000 ticks
    a second on three nodes, a node spent about a quarter of its CPU collecting).
    """

    __slots__ = ("backfill", "claims", "fire_at", "record")

    def __init__(
        self, claims: Claims, record: ScheduleRecord, fire_at: float, backfill: bool
    ) -> None:
        self.claims = claims
        self.record = record
        self.fire_at = fire_at
        self.backfill = backfill

    def deliver(self, fence: int, finished: Callable[[], None] | None) -> bool:
        """This node won: hand the tick over through the policies (``CronGate``)."""
        record = self.record
        if record.dead:
            # Cancelled, replaced or retired while the claim ran (or, won ahead, before
            # its delivery time): not delivered, since a cancel promises no tick reaches
            # receive after it. at_least_once: the claim lapses and another node delivers
            # it. at_most_once: the other nodes recorded claimed_elsewhere, so no node
            # delivers it: recorded here, never silent.
            if finished is None:
                self.claims.path.outcome(record, self.fire_at, Outcome.DEAD_LETTER, CANCELLED)
            return False
        delivered = self.claims.claimed(record, self.fire_at, (fence, finished, self.backfill))
        if delivered is None and finished is not None:
            # The policies decided (excluded, missed, skipped, held): nothing is in
            # flight, so the claim is done; no other node delivers it either.
            finished()
        return delivered is not False

    def skipped(self, outcome: Outcome | None, detail: str | int | None) -> None:
        """This node does not deliver the tick: its outcome goes into the history."""
        record = self.record
        path = self.claims.path
        if outcome is not None and not record.dead:
            path.outcome(record, self.fire_at, outcome, detail)
        if record.final:
            path.retire(record)  # its last tick was another node's to deliver
