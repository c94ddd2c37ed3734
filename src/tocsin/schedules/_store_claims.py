# SPDX-License-Identifier: Apache-2.0
"""The claim step of stored schedules without a cluster: put-if-absent in the store.

:class:`StoreClaims` answers the part of the coordinator protocol the cron claims use
(``claim_tick``, ``renew_tick``, ``finish_tick``), so one node's stored schedules go
through the same claim path as a cluster's (``cluster/_single_fire.CronClaims``): the
same coalescing of a waiting claim, the same callbacks. Only the step differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, final

from ..cluster._spi import ClaimOutcome, TickClaim, TickRequest
from ..stores import ScheduleStore

if TYPE_CHECKING:
    from ..clock import Clock

__all__ = ["StoreClaims"]


@final
class StoreClaims:
    """The claim step of a coordinator, on the store (one node, or processes sharing one
    store without a cluster): put-if-absent, the lateness judged on this node's clock.

    ``at_least_once`` has no delivery lease here: a claim is done once won (a process
    that dies mid-run loses that instant, as ``at_most_once``); cluster mode has both.
    """

    def __init__(self, store: ScheduleStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.url = "store"

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
        """Won, lost or late, as ``Coordinator.claim_tick`` answers (never paused)."""
        now = self.clock.wall()
        if not backfill and now - fire_at > ttl:
            return TickClaim(ClaimOutcome.LATE)
        expires = max(now, fire_at) + max(ttl, keep or 0.0)
        won = await self.store.claim_schedule_tick(key, node, now, expires)
        return TickClaim(ClaimOutcome.WON if won else ClaimOutcome.LOST)

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        """:meth:`claim_tick` for each request, the store's part in one call (one
        transaction) when the store has a batch (``claim_schedule_ticks``)."""
        batch = getattr(self.store, "claim_schedule_ticks", None)
        if batch is None:  # a store without the batch: one claim at a time
            return [
                await self.claim_tick(
                    r.key, r.reference, r.fire_at, r.ttl, node, keep=r.keep, backfill=r.backfill
                )
                for r in requests
            ]
        now = self.clock.wall()
        answers: list[TickClaim | None] = []
        claims: list[tuple[str, float]] = []
        for r in requests:
            if not r.backfill and now - r.fire_at > r.ttl:
                answers.append(TickClaim(ClaimOutcome.LATE))
            else:
                answers.append(None)
                claims.append((r.key, max(now, r.fire_at) + max(r.ttl, r.keep or 0.0)))
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
