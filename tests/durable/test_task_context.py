# SPDX-License-Identifier: Apache-2.0
"""A task run gets a clean context (issue 9): inside ``on_task`` ``ctx.message`` is the
task, ``ctx.sender`` is ``NoSender``, and ``ctx.respond`` cannot answer the ask that the
actor was handling before (the run is its own turn item, not part of that message)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    AskTimeoutError,
    DeadLetter,
    ManualClock,
    NoSender,
    ReceiveContext,
    TaskRecord,
)
from tocsin.durable import DurableActor

SEEN: list[tuple[Any, Any]] = []


class Noter(DurableActor):
    kind = "TaskContextNoter"

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "queue":
            await self.queue("no_such_method", {"n": 1})  # runs through on_task
            return  # an ask is left unanswered on purpose
        await super().receive(ctx)

    async def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> None:
        SEEN.append((ctx.message, ctx.sender))
        ctx.respond("answer from a task")


class Other(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


async def test_a_task_run_sees_the_task_no_sender_and_cannot_answer_an_earlier_ask() -> None:
    SEEN.clear()
    clock = ManualClock(wall=1_700_000_000)
    async with ActorSystem("ctx", clock=clock) as system:
        other = await system.spawn(Other, "other")
        pid = await system.durable(Noter, "n-1")
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)

        pid.tell("queue", sender=other)  # a sender the task run must not inherit
        await clock.advance(0)
        await clock.advance(0)
        asking = asyncio.ensure_future(pid.ask("queue", timeout=5))
        await clock.advance(0)
        await clock.advance(0)

        assert len(SEEN) == 2
        for message, sender in SEEN:
            assert isinstance(message, TaskRecord)
            assert message.name == "no_such_method"
            assert message.payload == {"n": 1}
            assert message.state == "running"
            assert sender is NoSender
        assert not asking.done()  # the task's respond did not answer the pending ask
        # A task run has no one to answer: its respond is dropped silently (issue 20).
        assert [letter for letter in letters if letter.message == "answer from a task"] == []
        await clock.advance(5)
        with pytest.raises(AskTimeoutError):
            await asking
