# SPDX-License-Identifier: Apache-2.0
"""The showcase behind ``tocsin demo``: real time, about ten seconds, then it exits."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from ..actor import (
    Actor,
    ActorPassivated,
    ActorRestarted,
    ActorStopped,
    DeadLetter,
    ReceiveContext,
)
from ..clock import SystemClock
from ..durable import Call, DurableActor, TaskParked
from ..system import ActorSystem
from ._remote_hop import remote_hop

__all__ = ["run_demo"]

_clock = SystemClock()
_t0 = 0.0


def say(section: str, text: str) -> None:
    """One line of the tour, stamped with the seconds since it began."""
    sys.stdout.write(f"[{_clock.monotonic() - _t0:5.2f}s] {section:<10} {text}\n")
    sys.stdout.flush()


class Greeter(Actor):
    """Answers asks, counts, and crashes on request (the supervisor restarts it)."""

    def __init__(self) -> None:
        self.greeted = 0

    async def pre_start(self, ctx: ReceiveContext) -> None:
        say("runtime", f"{ctx.self.path} starting (greeted={self.greeted})")

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "crash":
            raise RuntimeError("asked to crash")
        self.greeted += 1
        ctx.respond(f"hello, {ctx.message} (#{self.greeted})")


class Heart(Actor):
    """Owns a heartbeat; registers it with replace=True so a restart never doubles it."""

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await ctx.schedule("beat", ctx.self, 0.5, reference="heartbeat", replace=True)

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "beat":
            say("schedule", "heartbeat")
        else:
            say("schedule", f"reminder: {ctx.message}")


class Reminders(DurableActor):
    """A durable actor: its tasks live in SQLite and survive a crash of the process."""

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await self.storage.put("attempts", 0)

    async def invoice(self, order: str) -> str:
        """Called by a message (``Call("invoice", ...)``): record intent, queue the task."""
        async with self.transaction():  # both writes commit together, or neither
            await self.storage.put(f"order:{order}", "invoicing")
            task_id = await self.queue("send_invoice", {"order": order}, max_retries=5)
        return task_id

    async def pending(self, _: None) -> int:
        return len(await self.list_schedules())

    async def send_invoice(self, payload: dict[str, Any]) -> None:
        attempts = await self.storage.get("attempts", 0) + 1
        await self.storage.put("attempts", attempts)
        if attempts <= 2:
            say("durable", f"send_invoice({payload['order']}) attempt {attempts}: provider down")
            raise ConnectionError("payment provider unavailable")
        say("durable", f"send_invoice({payload['order']}) attempt {attempts}: sent")


class Tick(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        say("cron", f"cron tick ({ctx.message})")


class _SayHandler(logging.Handler):
    """Shows tocsin's own log lines (a failed task's warning) in the tour's format."""

    def emit(self, record: logging.LogRecord) -> None:
        say("log", f"{record.levelname.lower()}: {record.getMessage()}")


async def run_demo(store: str) -> None:
    """Run the tour against the given durable store URL."""
    global _t0
    _t0 = _clock.monotonic()
    logger = logging.getLogger("tocsin")
    handler = _SayHandler(logging.WARNING)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        await _tour(store)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True


async def _tour(store: str) -> None:
    async with ActorSystem("demo", store=store) as system:
        system.events.subscribe(
            lambda e: say("events", f"{type(e).__name__}: {_describe(e)}"),
            ActorRestarted,
            ActorPassivated,
            DeadLetter,
            TaskParked,
        )

        # -- runtime: spawn, tell, ask, a crash and a supervised restart ----------------
        greeter = await system.spawn(Greeter, "greeter")
        say("runtime", await greeter.ask("Ada"))
        greeter.tell("crash")
        say("runtime", await greeter.ask("Grace"))

        # -- passivation and dead letters -------------------------------------------------
        idle = await system.spawn(Greeter, "sleepy", passivate_after=1.0)
        say("runtime", "sleepy passivates after 1 s idle")

        # -- scheduling: heartbeat, reminder, pause/resume, cancel ------------------------
        heart = await system.spawn(Heart, "heart")
        await system.schedule_once("stretch your legs", heart, 1.2, reference="reminder")
        await asyncio.sleep(1.6)
        idle.tell("anyone there?")  # passivated by now: a dead letter
        await system.pause_schedule("heartbeat")
        say("schedule", "heartbeat paused for 1 s")
        await asyncio.sleep(1.0)
        await system.resume_schedule("heartbeat")
        say("schedule", "heartbeat resumed")

        # -- cron, every second -------------------------------------------------------------
        ticker = await system.spawn(Tick, "ticker")
        await system.schedule_cron("*/1 * * * * ?", ticker, "*/1 * * * * ?", reference="cron")
        await asyncio.sleep(1.1)
        await system.cancel_schedule("heartbeat")
        say("schedule", "heartbeat cancelled")
        await asyncio.sleep(1.0)
        await system.cancel_schedule("cron")
        say("cron", "cron cancelled")

        # -- durable: a task that fails twice, then succeeds -------------------------------
        pid = await system.durable(Reminders, "customer-7")
        await pid.ask(Call("invoice", "A-1001"))
        say("durable", f"queued send_invoice in {store.split('://')[0]}; retries back off ~1, ~2 s")
        for _ in range(60):
            await asyncio.sleep(0.1)
            if not await pid.ask(Call("pending")):
                break
        say("durable", "task done; nothing pending")

        # -- remote: an actor in another process, asked and ticked from here (#11) ---------
        await remote_hop(say)
        say("system", f"stopping; dead letters so far: {system.dead_letters}")
    say("system", "stopped")


def _describe(event: object) -> str:
    if isinstance(event, DeadLetter):
        return f"{event.message!r} to {event.target} ({event.reason.value})"
    if isinstance(event, ActorRestarted):
        return f"{event.pid.path} after {event.error!r}"
    if isinstance(event, ActorPassivated | ActorStopped):
        return event.pid.path
    if isinstance(event, TaskParked):
        return f"{event.task.name} parked"
    return repr(event)
