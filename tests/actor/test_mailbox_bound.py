"""Mailbox bounds (issue 20 item 7): ``overflow`` dead letters, ``await pid.send``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tocsin import (
    Actor,
    ActorSuspendedError,
    ActorSystem,
    BackpressureError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    Directive,
    ManualClock,
    ReceiveContext,
)

OVERFLOW = DeadLetterReason.OVERFLOW


class Gated(Actor):
    """Records each message, but only once its gate is open (a slow consumer)."""

    def __init__(self, gate: asyncio.Event, seen: list[Any]) -> None:
        self.gate = gate
        self.seen = seen

    async def receive(self, ctx: ReceiveContext) -> None:
        await self.gate.wait()
        if ctx.message == "boom":
            raise RuntimeError("boom")
        self.seen.append(ctx.message)
        ctx.respond(ctx.message)


def letters(system: ActorSystem) -> list[DeadLetter]:
    found: list[DeadLetter] = []
    system.events.subscribe(found.append, DeadLetter)
    return found


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_tell_past_the_bound_is_an_overflow_dead_letter() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=3)
        for i in range(10):
            pid.tell(i)  # never raises
        assert [d.message for d in dead] == [3, 4, 5, 6, 7, 8, 9]
        assert {d.reason for d in dead} == {OVERFLOW}
        assert {d.target for d in dead} == {pid}
        assert system.dead_letters == 7
        gate.set()
        await settle()
        assert seen == [0, 1, 2]
        pid.tell("again")  # room again once drained
        await settle()
        assert seen[-1] == "again"


async def test_unbounded_by_default_and_zero_means_unbounded() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g")
        zero = await system.spawn(lambda: Gated(gate, seen), "z", mailbox_bound=0)
        for i in range(1000):
            pid.tell(i)
            zero.tell(i)
        assert dead == []
        gate.set()
        await settle()
        assert len(seen) == 2000


async def test_the_system_default_and_a_spawn_override() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    kids: list[Any] = []

    class Parent(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            kids.append(await ctx.spawn(lambda: Gated(gate, seen), "kid"))
            kids.append(await ctx.spawn(lambda: Gated(gate, seen), "big", mailbox_bound=5))
            ctx.respond(None)

    async with ActorSystem("t", clock=ManualClock(wall=0), mailbox_bound=2) as system:
        assert system.mailbox_bound == 2
        dead = letters(system)
        top = await system.spawn(lambda: Gated(gate, seen), "top")
        free = await system.spawn(lambda: Gated(gate, seen), "free", mailbox_bound=0)
        parent = await system.spawn(Parent, "p")
        await parent.ask("go")
        kid, big = kids
        for pid in (top, free, kid, big):
            for i in range(10):
                pid.tell(i)
        overflowed = dict.fromkeys((top, free, kid, big), 0)
        for letter in dead:
            assert letter.reason is OVERFLOW
            assert letter.target is not None
            overflowed[letter.target] += 1
        assert overflowed == {top: 8, free: 0, kid: 8, big: 5}
        gate.set()


@pytest.mark.parametrize("bad", [-1, True, 1.5, "10"])
async def test_a_bad_bound_is_refused(bad: Any) -> None:
    error = TypeError if isinstance(bad, bool) or not isinstance(bad, int) else ValueError
    with pytest.raises(error, match="mailbox_bound"):
        ActorSystem("t", mailbox_bound=bad)
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        with pytest.raises(error, match="mailbox_bound"):
            await system.spawn(lambda: Gated(asyncio.Event(), []), mailbox_bound=bad)


async def test_an_ask_past_the_bound_fails_at_once() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=1)
        pid.tell(0)
        with pytest.raises(BackpressureError, match="mailbox"):
            await pid.ask("q")
        assert [(d.message, d.reason) for d in dead] == [("q", OVERFLOW)]
        gate.set()


async def test_send_waits_for_room_and_keeps_order() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=4)

        async def producer(tag: str) -> None:
            for i in range(50):
                await pid.send((tag, i))

        tasks = [asyncio.create_task(producer(t)) for t in "ab"]
        await settle()
        assert not any(t.done() for t in tasks)  # both wait for room
        gate.set()
        await asyncio.gather(*tasks)
        await settle()
        assert dead == []
        for tag in "ab":
            assert [i for t, i in seen if t == tag] == list(range(50))


async def test_a_tell_does_not_overtake_a_waiting_send() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=2)
        pid.tell(0)  # being handled (out of the mailbox)
        await settle()
        pid.tell(1)
        pid.tell(2)
        waiting = asyncio.create_task(pid.send("sent"))
        await settle()
        assert not waiting.done()
        pid.tell("told")  # the mailbox has its place held by the send: overflow
        assert [(d.message, d.reason) for d in dead] == [("told", OVERFLOW)]
        gate.set()
        await waiting
        await settle()
        assert seen == [0, 1, 2, "sent"]


async def test_send_to_an_unbounded_actor_is_a_tell() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        pid = await system.spawn(lambda: Gated(gate, seen), "g")
        for i in range(300):
            await pid.send(i)  # never waits
        gate.set()
        await settle()
        assert seen == list(range(300))


async def test_send_to_a_stopped_actor_raises_after_the_dead_letter() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=1)
        gate.set()
        await system.stop_actor(pid)
        with pytest.raises(DeadActorError, match="stopped"):
            await pid.send("late")
        assert [(d.message, d.reason) for d in dead] == [("late", DeadLetterReason.STOPPED)]


async def test_a_waiting_send_fails_when_its_target_stops() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=1)
        pid.tell(0)
        await settle()  # being handled
        pid.tell(1)  # queued behind it: the mailbox is full
        waiting = asyncio.create_task(pid.send("w"))
        await settle()
        pid_target_stop = asyncio.create_task(system.stop_actor(pid))
        await settle()
        gate.set()
        with pytest.raises(DeadActorError):
            await waiting
        await pid_target_stop
        reasons = [(d.message, d.reason) for d in dead]
        assert ("w", DeadLetterReason.STOPPED) in reasons


async def test_a_waiting_send_fails_when_its_target_is_suspended() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(
            lambda: Gated(gate, seen), "g", mailbox_bound=1, supervisor=Directive.SUSPEND
        )
        pid.tell("boom")
        await settle()  # being handled
        pid.tell("queued")
        waiting = asyncio.create_task(pid.send("w"))
        await settle()
        gate.set()
        with pytest.raises(ActorSuspendedError):
            await waiting
        assert ("w", DeadLetterReason.SUSPENDED) in [(d.message, d.reason) for d in dead]
        await system.reinstate(pid)
        await pid.send("after")  # room again once reinstated
        await settle()
        assert seen == ["after"]


async def test_a_cancelled_send_is_withdrawn() -> None:
    gate, seen = asyncio.Event(), list[Any]()
    async with ActorSystem("t", clock=ManualClock(wall=0)) as system:
        dead = letters(system)
        pid = await system.spawn(lambda: Gated(gate, seen), "g", mailbox_bound=1)
        pid.tell(0)
        await settle()  # being handled
        pid.tell(1)
        waiting = asyncio.create_task(pid.send("withdrawn"))
        await settle()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        gate.set()
        await settle()
        await pid.send("next")
        await settle()
        assert seen == [0, 1, "next"]
        assert dead == []


async def test_send_needs_a_running_system() -> None:
    system = ActorSystem("t", clock=ManualClock(wall=0))
    async with system:
        pid = await system.spawn(lambda: Gated(asyncio.Event(), []), "g")
    from tocsin import ActorSystemNotStartedError

    with pytest.raises(ActorSystemNotStartedError):
        await pid.send("x")
