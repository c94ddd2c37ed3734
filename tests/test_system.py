# SPDX-License-Identifier: Apache-2.0
"""ActorSystem lifecycle (issue 10): a failed start leaves nothing running (item 3); a
system is used from the loop it started on, other loops get WrongEventLoopError, and
``tell_threadsafe`` is the way in from another thread (item 5)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from tests.eventually import eventually

from tocsin import (
    Actor,
    ActorSystem,
    ManualClock,
    ReceiveContext,
    StoreError,
    WrongEventLoopError,
)
from tocsin.durable import DurableActor
from tocsin.stores import MemoryStore


class FailsToOpenOnce(MemoryStore):  # type: ignore[misc]  # a test double of the final class
    def __init__(self) -> None:
        super().__init__()
        self.failures = 1
        self.opened = 0
        self.closed = 0

    async def open(self, *, exclusive: bool = False) -> None:
        if self.failures:
            self.failures -= 1
            raise StoreError("cannot open: disk on fire")
        self.opened += 1
        await super().open(exclusive=exclusive)

    async def close(self) -> None:
        self.closed += 1
        await super().close()


class Counter(DurableActor):
    kind = "SystemTestCounter"

    async def add(self, n: int) -> int:
        total = int(await self.storage.get("n", 0)) + n
        await self.storage.put("n", total)
        return total


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


class Recorder(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        SEEN.append(ctx.message)


SEEN: list[Any] = []


async def test_a_failed_start_leaves_nothing_running_and_can_be_retried() -> None:
    from tocsin import Call

    clock = ManualClock(wall=0)
    store = FailsToOpenOnce()
    system = ActorSystem("test", clock=clock, store=store)
    with pytest.raises(StoreError, match="disk on fire"):
        await system.start()
    assert not system.running
    assert clock.next_deadline() is None  # no timer left armed
    await clock.advance(1)  # and nothing waits on this system (it would hang here)
    await system.start()  # retried: not a silent no-op
    try:
        assert system.running
        pid = await system.durable(Counter, "c")
        assert await pid.ask(Call("add", 2)) == 2
    finally:
        await system.stop()
    assert store.opened == 1
    assert store.closed == 1


def _run_in_thread(coro_fn: Any) -> BaseException | None:
    """Run ``coro_fn()`` with ``asyncio.run`` in another thread; return what it raised."""
    box: list[BaseException | None] = [None]

    def target() -> None:
        try:
            asyncio.run(coro_fn())
        except BaseException as exc:
            box[0] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    return box[0]


async def test_calls_from_another_event_loop_raise_wrong_event_loop_error_naming_both() -> None:
    system = ActorSystem("test")
    async with system:
        pid = await system.spawn(Echo, "echo")
        mine = asyncio.get_running_loop()

        async def spawn() -> None:
            await system.spawn(Echo, "other")

        async def ask() -> None:
            await pid.ask("x", timeout=1)

        async def schedule() -> None:
            await system.schedule_once("x", pid, 1)

        async def tell() -> None:
            pid.tell("x")  # the actor is idle: waking it needs its own loop

        for call in (spawn, ask, schedule, tell):
            error = await asyncio.to_thread(_run_in_thread, call)
            assert isinstance(error, WrongEventLoopError), (call, error)
            assert isinstance(error, RuntimeError)
            assert repr(mine) in str(error)
            assert "runs on event loop" in str(error)
        assert await pid.ask("still fine") == "still fine"


async def test_tell_threadsafe_delivers_from_a_plain_thread() -> None:
    SEEN.clear()
    system = ActorSystem("test")
    async with system:
        pid = await system.spawn(Recorder, "rec")

        def tell_from_a_thread() -> None:
            for i in range(100):
                pid.tell_threadsafe(i)

        thread = threading.Thread(target=tell_from_a_thread)
        thread.start()
        await asyncio.to_thread(thread.join, 30)
        await eventually(lambda: len(SEEN) == 100, "the 100 tells from the thread handled")
        assert list(range(100)) == SEEN


def test_a_second_asyncio_run_gets_wrong_event_loop_error() -> None:
    system = ActorSystem("test")
    holder: dict[str, Any] = {}

    async def first() -> None:
        await system.start()
        holder["pid"] = await system.spawn(Echo, "echo")

    async def second() -> None:
        with pytest.raises(WrongEventLoopError):
            await system.spawn(Echo, "again")
        with pytest.raises(WrongEventLoopError):
            await holder["pid"].ask("x")
        with pytest.raises(WrongEventLoopError):
            await system.stop()

    asyncio.run(first())
    asyncio.run(second())
