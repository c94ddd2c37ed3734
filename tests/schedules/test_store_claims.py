# SPDX-License-Identifier: Apache-2.0
"""The claim step of stored schedules without a cluster: a tick's batch of claims is one
store call, decided as the single claims would be (lateness on this node's clock)."""

from __future__ import annotations

from typing import Any

from tocsin.clock import ManualClock
from tocsin.cluster._protocol import ClaimOutcome, TickRequest, claim_ticks
from tocsin.schedules._store_claims import StoreClaims
from tocsin.stores import MemoryStore

NOW = 1_800_000_000.0


class _Counting:
    """A MemoryStore recording its claim calls."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def claim_schedule_tick(self, *args: Any, **kwargs: Any) -> bool:
        self.calls.append("single")
        return bool(await self.inner.claim_schedule_tick(*args, **kwargs))

    async def claim_schedule_ticks(self, *args: Any, **kwargs: Any) -> list[bool]:
        self.calls.append("batch")
        return list(await self.inner.claim_schedule_ticks(*args, **kwargs))


async def test_a_batch_is_one_store_call_with_the_single_claims_answers() -> None:
    store = _Counting(MemoryStore())
    clock = ManualClock(wall=NOW)
    # Typed as the scheduler holds it: the part of a coordinator the cron claims use.
    claims: Any = StoreClaims(store, clock)
    requests = [
        TickRequest("a@1", "a", NOW - 1, 60.0),
        TickRequest("late@1", "late", NOW - 120, 60.0),
        TickRequest("old@1", "old", NOW - 120, 60.0, backfill=True),
        TickRequest("a@1", "a", NOW - 1, 60.0),
    ]
    answers = await claim_ticks(claims, requests, "n1")
    assert [a.outcome for a in answers] == [
        ClaimOutcome.WON,
        ClaimOutcome.LATE,
        ClaimOutcome.WON,
        ClaimOutcome.LOST,
    ]
    assert store.calls == ["batch"]
    again = await claim_ticks(claims, requests[:1], "n2")
    assert [a.outcome for a in again] == [ClaimOutcome.LOST]
    only_late = await claim_ticks(claims, requests[1:2], "n2")
    assert [a.outcome for a in only_late] == [ClaimOutcome.LATE]
    assert store.calls == ["batch", "batch"]  # nothing to ask the store for a late tick
