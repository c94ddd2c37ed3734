# SPDX-License-Identifier: Apache-2.0
"""A durable actor's ``storage`` and ``transaction()``, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import ActorSystem, CodecError, ManualClock
from tocsin.durable import Call, DurableActor, TaskRecord

T0 = 1_700_000_000.0
RUNS: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Cart(DurableActor):
    async def put(self, kv: tuple[str, Any]) -> None:
        await self.storage.put(kv[0], kv[1])

    async def get(self, key: str) -> Any:
        return await self.storage.get(key, "<default>")

    async def delete(self, key: str) -> bool:
        return await self.storage.delete(key)

    async def list(self, prefix: str) -> dict[str, Any]:
        return await self.storage.list(prefix)

    async def bad(self, which: str) -> str:
        try:
            if which == "value":
                await self.storage.put("k", object())
            else:
                await self.storage.put(1, "v")  # type: ignore[arg-type]
        except CodecError:
            return "CodecError"
        except TypeError:
            return "TypeError"
        return "ok"

    async def checkout(self, fail: bool) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        try:
            async with self.transaction():
                await self.storage.put("status", "checking-out")
                await self.storage.delete("draft")
                await self.queue("charge", {"amount": 42}, id="charge")
                async with self.transaction():  # nested: joins the outer block
                    await self.storage.put("nested", True)
                seen["status"] = await self.storage.get("status")
                seen["draft"] = await self.storage.get("draft", "gone")
                seen["list"] = await self.storage.list()
                if fail:
                    raise RuntimeError("abort")
        except RuntimeError:
            seen["aborted"] = True
        return seen

    async def charge(self, payload: Any) -> None:
        RUNS.append(payload)

    async def tasks(self, payload: Any) -> builtins.list[TaskRecord]:  # list: the method above
        return await self.list_schedules()


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem("storage", clock=clock, store=backend.make()) as system:
        yield system, clock


VALUES: list[Any] = [
    None,
    True,
    2**100,
    1.5,
    "text",
    [1, [2]],
    (1, "two"),
    {"a": {"b": 1}},
    {1, 2},
    frozenset({"x"}),
    b"\x00\xff",
    datetime(2024, 3, 1, 12, 30, tzinfo=UTC),
]


async def test_put_then_get_round_trips_every_codec_safe_value(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        for n, value in enumerate(VALUES):
            await pid.ask(Call("put", (f"k{n}", value)))
        for n, value in enumerate(VALUES):
            assert await pid.ask(Call("get", f"k{n}")) == value


async def test_get_of_a_missing_key_returns_the_default(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        assert await pid.ask(Call("get", "missing")) == "<default>"


async def test_put_replaces_and_delete_reports_whether_the_key_existed(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        await pid.ask(Call("put", ("k", 1)))
        await pid.ask(Call("put", ("k", 2)))
        assert await pid.ask(Call("get", "k")) == 2
        assert await pid.ask(Call("delete", "k")) is True
        assert await pid.ask(Call("delete", "k")) is False
        assert await pid.ask(Call("get", "k")) == "<default>"


async def test_list_returns_keys_with_the_prefix_sorted(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        for key in ("item:b", "item:a", "other", "item:c"):
            await pid.ask(Call("put", (key, key.upper())))
        listed = await pid.ask(Call("list", "item:"))
        assert list(listed) == ["item:a", "item:b", "item:c"]
        assert listed["item:a"] == "ITEM:A"
        assert len(await pid.ask(Call("list", ""))) == 4


async def test_bad_value_raises_codec_error_and_bad_key_type_error(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        assert await pid.ask(Call("bad", "value")) == "CodecError"
        assert await pid.ask(Call("bad", "key")) == "TypeError"
        assert await pid.ask(Call("list", "")) == {}


async def test_storage_is_separate_per_identity_and_per_kind(backend: Backend) -> None:
    class OtherCart(Cart):
        kind = "StorageOtherCart"

    async with running(backend) as (system, _clock):
        a = await system.durable(Cart, "a")
        b = await system.durable(Cart, "b")
        other = await system.durable(OtherCart, "a")
        await a.ask(Call("put", ("k", "A")))
        assert await b.ask(Call("get", "k")) == "<default>"
        assert await other.ask(Call("get", "k")) == "<default>"


async def test_storage_survives_passivation(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Cart, "c", passivate_after=1)
        await pid.ask(Call("put", ("k", [1, 2, 3])))
        await clock.advance(2)
        assert await pid.ask(Call("get", "k")) == [1, 2, 3]


async def test_storage_survives_a_system_restart_on_the_same_store(
    persistent_backend: Backend,
) -> None:
    async with running(persistent_backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        await pid.ask(Call("put", ("k", {"kept": True})))
    async with running(persistent_backend) as (system, _clock):
        pid = await system.durable(Cart, "c")
        assert await pid.ask(Call("get", "k")) == {"kept": True}


async def test_transaction_commits_storage_writes_and_queued_tasks_together(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Cart, "c")
        await pid.ask(Call("put", ("draft", "d")))
        seen = await pid.ask(Call("checkout", False))
        assert seen == {
            "status": "checking-out",  # reads inside the block see its writes
            "draft": "gone",
            "list": {"nested": True, "status": "checking-out"},
        }
        assert await pid.ask(Call("list", "")) == {"nested": True, "status": "checking-out"}
        assert [r.id for r in await pid.ask(Call("tasks"))] == ["charge"]
        await clock.advance(0)
        assert RUNS == [{"amount": 42}]


async def test_transaction_that_raises_writes_nothing(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Cart, "c")
        await pid.ask(Call("put", ("draft", "d")))
        seen = await pid.ask(Call("checkout", True))
        assert seen["aborted"] is True
        assert await pid.ask(Call("list", "")) == {"draft": "d"}
        assert await pid.ask(Call("tasks")) == []
        await clock.advance(10)
        assert RUNS == []
