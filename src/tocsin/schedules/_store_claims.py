# SPDX-License-Identifier: Apache-2.0
"""The claim step of stored schedules without a cluster: put-if-absent in the store.

:class:`StoreClaims` answers the part of the coordinator protocol the cron claims use
(``claim_tick``, ``renew_tick``, ``finish_tick``), so one node's stored schedules go
through the same claim path as a cluster's (``cluster/_single_fire.CronClaims``): the
same coalescing of a waiting claim, the same callbacks. Only the step differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, final

from ..cluster._spi import ClaimOutcome, ClaimsInBatches, TickClaim, TickRequest
from ..stores import ScheduleStore

if TYPE_CHECKING:
    from ..clock import Clock

__all__ = ["MANUAL", "PREFIX", "StoreClaims"]

#: Claim references of stored schedules (``_runner.CLAIM_PREFIX``, which imports this
#: module, says the same).
PREFIX: Final = "schedule:"
#: What a manual run's claim reference adds (``schedule:<id>@manual``; ids hold no ``@``).
MANUAL: Final = "@manual"


@final
class StoreClaims(ClaimsInBatches):
    """The claim step of a coordinator, on the store (one node, or processes sharing one
    store without a cluster): put-if-absent, the lateness judged on this node's clock.

    Every target's run is durable once stored (a job run, a durable task row): a process
    that dies mid-run runs it again after its restart, whatever ``delivery``. What
    ``at_least_once`` adds here is the step before: a process that died between winning
    an instant and storing its run left a claim and no ledger row; without a cluster one
    system owns the store, so that claim is its own previous life's, and the instant,
    claimed again at start (overdue, under ``misfire``) or by a backfill, is won again.
    ``at_most_once`` leaves it lost.
    """

    def __init__(self, store: ScheduleStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.url = "store"

    async def _claim_one(self, request: TickRequest, node: str) -> TickClaim:
        """Won, lost or late, as ``Coordinator.claim_tick`` answers (never paused)."""
        now = self.clock.wall()
        if request.late(now):
            return TickClaim(ClaimOutcome.LATE)
        won = await self.store.claim_schedule_tick(request.key, node, now, request.expiry(now))
        reference = request.reference
        if (
            not won
            and request.lease is not None
            and request.backfill
            and reference.startswith(PREFIX)
        ):
            # at_least_once, an instant asked for again (overdue at start, a backfill):
            # claimed, never decided (no ledger row) means its claimer died first.
            sid = reference[len(PREFIX) :]
            manual = sid.endswith(MANUAL)
            if manual:
                sid = sid[: -len(MANUAL)]
            won = await self.store.schedule_tick(sid, request.fire_at, manual=manual) is None
        return TickClaim(ClaimOutcome.WON if won else ClaimOutcome.LOST)

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        """:meth:`claim_tick` for each request, the store's part in one call (one
        transaction) when the store has a batch (``claim_schedule_ticks``)."""
        batch = getattr(self.store, "claim_schedule_ticks", None)
        if batch is None or any(r.backfill and r.lease is not None for r in requests):
            # One claim at a time: a store without the batch, or an at_least_once instant
            # asked for again, whose lost claim _claim_one checks against the ledger.
            return [await self._claim_one(r, node) for r in requests]
        now = self.clock.wall()
        answers: list[TickClaim | None] = []
        claims: list[tuple[str, float]] = []
        for r in requests:
            if r.late(now):
                answers.append(TickClaim(ClaimOutcome.LATE))
            else:
                answers.append(None)
                claims.append((r.key, r.expiry(now)))
        won = iter(await batch(claims, node, now) if claims else [])
        return [
            answer
            if answer is not None
            else TickClaim(ClaimOutcome.WON if next(won) else ClaimOutcome.LOST)
            for answer in answers
        ]

    async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
        return True

    async def finish_tick(self, key: str, fence: int) -> bool:
        return True
