# SPDX-License-Identifier: Apache-2.0
"""Actors and helpers shared by the scheduling tests (a plain module, not a conftest).

Async fixtures are not available (no pytest-asyncio), so tests build their system with
:func:`running_system` and spawn the actors defined here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tocsin import (
    Actor,
    ActorSystem,
    DeadLetter,
    ManualClock,
    Outcome,
    ReceiveContext,
    Tick,
)
from tocsin.actor import SystemView

#: A fixed wall time for tests that look at ``next_fire_at``/``created_at``.
EPOCH = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass
class Received:
    """One message as a :class:`Recorder` saw it."""

    message: Any
    sender: Any
    at: float  # monotonic
    wall: float  # epoch seconds


@dataclass
class Log:
    """What a :class:`Recorder` (and its restarts) received, in order."""

    received: list[Received] = field(default_factory=list)

    @property
    def messages(self) -> list[Any]:
        return [r.message for r in self.received]

    @property
    def times(self) -> list[float]:
        return [r.at for r in self.received]

    @property
    def walls(self) -> list[float]:
        return [r.wall for r in self.received]

    def count(self, message: Any) -> int:
        return sum(1 for r in self.received if r.message == message)


class Recorder(Actor):
    """Records every message with the monotonic time it was received at.

    Messages ``("block", event)`` make it wait on ``event`` (so that ticks queue up behind
    it); ``("fail", exc)`` makes it raise ``exc``.
    """

    def __init__(self, log: Log) -> None:
        self.log = log

    async def receive(self, ctx: ReceiveContext) -> None:
        message = ctx.message
        if isinstance(message, tuple) and message and message[0] == "block":
            await message[1].wait()
            return
        if isinstance(message, tuple) and message and message[0] == "fail":
            raise message[1]
        clock = ctx.system.clock
        self.log.received.append(Received(message, ctx.sender, clock.monotonic(), clock.wall()))


def recorder(log: Log) -> Any:
    """A factory for :class:`Recorder` sharing ``log`` across restarts."""
    return lambda: Recorder(log)


@asynccontextmanager
async def running_system(
    wall: float | datetime = EPOCH, timezone: str = "UTC"
) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    """A started system on a fresh :class:`ManualClock`, stopped on exit."""
    clock = ManualClock(wall=wall)
    system = ActorSystem("test", clock=clock, timezone=timezone)
    await system.start()
    try:
        yield system, clock
    finally:
        await system.stop()


def capture_dead_letters(system: ActorSystem) -> list[DeadLetter]:
    """Subscribe to dead letters; return the list they are appended to."""
    letters: list[DeadLetter] = []
    system.events.subscribe(letters.append, DeadLetter)
    return letters


def blocker() -> tuple[tuple[str, asyncio.Event], asyncio.Event]:
    """A ``("block", event)`` message for :class:`Recorder`, and the event that releases it."""
    event = asyncio.Event()
    return ("block", event), event


def record_outcomes(system: ActorSystem) -> list[tuple[str, float, Outcome, Any]]:
    """Wrap the scheduler's one not-delivered hook (``TickPath.outcome``): return the
    list of ``(reference, instant_wall, outcome, detail)`` it is called with."""
    runtime = system._runtime
    assert runtime is not None
    scheduler: Any = runtime.schedules.tick_path  # type: ignore[union-attr]
    seen: list[tuple[str, float, Outcome, Any]] = []
    original = scheduler.outcome

    def outcome(record: Any, instant_wall: float, what: Outcome, detail: Any = None) -> None:
        seen.append((record.reference, instant_wall, what, detail))
        original(record, instant_wall, what, detail)

    scheduler.outcome = outcome
    return seen


class TickRecorder(Actor):
    """Records ``(message, ctx.tick, monotonic time)``; a message ``("slow", s)`` or a
    tick whose message is ``"slow"`` sleeps on the clock (``hold`` seconds) first."""

    def __init__(self, log: list[tuple[Any, Tick | None, float]], hold: float = 0.0) -> None:
        self.log = log
        self.hold = hold

    async def receive(self, ctx: ReceiveContext) -> None:
        clock = ctx.system.clock
        self.log.append((ctx.message, ctx.tick, clock.monotonic()))
        if self.hold and ctx.tick is not None:
            await sleep(ctx.system, self.hold)
        if ctx.message == "ask":
            ctx.respond("ok")


async def sleep(system: SystemView, seconds: float) -> None:
    """Sleep on the system's clock (a handler that takes ``seconds`` of ManualClock time)."""
    assert isinstance(system, ActorSystem)
    runtime = system._runtime
    assert runtime is not None
    await runtime.sleep(seconds)
