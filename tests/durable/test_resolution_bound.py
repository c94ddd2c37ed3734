# SPDX-License-Identifier: Apache-2.0
"""``system.durable(..., timeout=)``: the caller's budget bounds the resolution too, during
a store freeze (issue 31, item 8: an ask with a 2 s budget took 10-13 s, waiting out the
resolution's own 10 s bound first)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tocsin import ActorSystem, AskTimeoutError, ManualClock
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore, Op


class FreezingStore:
    """A memory store whose reads and writes hang while ``frozen`` (a store freeze)."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.url = self.inner.url
        self.frozen = False
        self.thawed = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _wait(self) -> None:
        if self.frozen:
            await self.thawed.wait()

    async def apply(self, ops: Sequence[Op]) -> None:
        await self._wait()
        await self.inner.apply(ops)

    async def next_due(self, kind: str, identity: str) -> float | None:
        await self._wait()
        return await self.inner.next_due(kind, identity)

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None:
        await self._wait()
        return await self.inner.get_state(kind, identity, key)

    async def list_state(self, kind: str, identity: str, prefix: str = "") -> Any:
        await self._wait()
        return await self.inner.list_state(kind, identity, prefix)


class Account(DurableActor):
    kind = "ResolutionBoundAccount"

    async def pre_start(self, ctx: Any) -> None:
        self.balance = await self.storage.get("balance", 0)

    async def read(self, payload: Any) -> int:
        balance: int = self.balance
        return balance


async def test_a_frozen_store_fails_the_resolution_within_the_callers_budget() -> None:
    clock = ManualClock()
    store = FreezingStore()
    async with ActorSystem(clock=clock, store=store) as system:
        store.frozen = True
        call = asyncio.ensure_future(system.durable(Account, "a", timeout=2))
        await clock.advance(1.9)
        assert not call.done()
        await clock.advance(0.2)
        with pytest.raises(AskTimeoutError, match="not resolved within 2 s"):
            await call
        # The store comes back: the activation the first call started serves the next.
        store.frozen = False
        store.thawed.set()
        pid = await system.durable(Account, "a", timeout=2)
        assert await pid.ask(Call("read"), timeout=2) == 0


async def test_a_resolution_within_its_budget_returns_the_pid() -> None:
    async with ActorSystem(clock=ManualClock(), store=MemoryStore()) as system:
        pid = await system.durable(Account, "b", timeout=5)
        assert await pid.ask(Call("read"), timeout=5) == 0
        with pytest.raises(ValueError, match="`timeout`"):
            await system.durable(Account, "b", timeout=-1)
