# SPDX-License-Identifier: Apache-2.0
"""Backpressure across a connection (issue 20 item 7), two systems in one process.

Real sockets and real time (the transport is what is tested), every wait bounded: a
connection stops reading while its actor's bounded mailbox is full, is not taken for
silent meanwhile, resumes once the mailbox took the frame; ``await pid.send`` waits for
room in the send buffer; a dropped connection's unsent tells become dead letters.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.eventually import eventually, settled

from tocsin import (
    Actor,
    ActorSystem,
    DeadLetter,
    DeadLetterReason,
    ReceiveContext,
    Remoting,
)

SECRET = b"remote-backpressure-secret-0123"
PAD = "x" * 200  # a message big enough to fill socket buffers with a few thousand


class Gated(Actor):
    """Records each message once its gate is open (a stalled consumer until then)."""

    def __init__(self, gate: asyncio.Event, box: list[Any]) -> None:
        self.gate = gate
        self.box = box

    async def receive(self, ctx: ReceiveContext) -> None:
        await self.gate.wait()
        self.box.append(ctx.message)


def letters(system: ActorSystem) -> list[DeadLetter]:
    found: list[DeadLetter] = []
    system.events.subscribe(found.append, DeadLetter)
    return found


async def test_a_full_mailbox_stops_the_connection_reading_without_loss() -> None:
    gate, box = asyncio.Event(), list[Any]()
    heartbeat = 0.05  # the hold below lasts many silent-ticks' worth of heartbeats
    async with (
        ActorSystem("b", remoting=Remoting("tcp://127.0.0.1:0", SECRET, heartbeat=heartbeat)) as b,
        ActorSystem("a", remoting=Remoting("tcp://127.0.0.1:0", SECRET, heartbeat=heartbeat)) as a,
    ):
        dead_a, dead_b = letters(a), letters(b)
        await b.spawn(lambda: Gated(gate, box), "inbox", mailbox_bound=5)
        inbox = await a.actor_of(f"{b.address}/user/inbox")
        for i in range(1_000):
            inbox.tell(i)
        await eventually(lambda: b.remote_metrics().read_pauses >= 1)
        await asyncio.sleep(20 * heartbeat)  # held: not "went silent"
        gate.set()
        await eventually(lambda: len(box) == 1_000)
        assert box == list(range(1_000))  # in order, nothing shed on either side
        assert dead_a == []
        assert dead_b == []
        assert a.remote_metrics().unreachable == 0


async def test_remote_send_waits_for_room_and_delivers_everything() -> None:
    gate, box = asyncio.Event(), list[Any]()
    async with (
        ActorSystem("b", remoting=Remoting("tcp://127.0.0.1:0", SECRET)) as b,
        ActorSystem("a", remoting=Remoting("tcp://127.0.0.1:0", SECRET, max_buffer=64_000)) as a,
    ):
        dead_a, dead_b = letters(a), letters(b)
        await b.spawn(lambda: Gated(gate, box), "inbox", mailbox_bound=10)
        inbox = await a.actor_of(f"{b.address}/user/inbox")
        total = 40_000  # ~9 MB: more than the socket buffers and max_buffer hold
        sent = [0]

        async def producer() -> None:
            for i in range(total):
                await inbox.send((i, PAD))
                sent[0] += 1

        task = asyncio.create_task(producer())
        await settled()  # nothing can move now: the producer waits for room, or is done
        assert sent[0] < total  # it waits for room: nothing shed
        inbox.tell("overtaker")  # a tell does not overtake waiting sends
        assert [(d.message, d.reason) for d in dead_a] == [("overtaker", DeadLetterReason.OVERFLOW)]
        gate.set()
        await asyncio.wait_for(task, 60.0)
        await eventually(lambda: len(box) == total, within=60.0)
        assert [i for i, _ in box] == list(range(total))
        assert len(dead_a) == 1
        assert dead_b == []


async def test_a_dropped_connection_dead_letters_the_tells_it_still_held() -> None:
    gate, box = asyncio.Event(), list[Any]()
    b = ActorSystem("b", remoting=Remoting("tcp://127.0.0.1:0", SECRET), stop_timeout=0.5)
    async with ActorSystem("a", remoting=Remoting("tcp://127.0.0.1:0", SECRET)) as a:
        await b.start()
        try:
            dead_a = letters(a)
            await b.spawn(lambda: Gated(gate, box), "inbox", mailbox_bound=10)
            inbox = await a.actor_of(f"{b.address}/user/inbox")
            total = 60_000
            for i in range(total):
                inbox.tell((i, PAD))
                if i % 500 == 0:
                    await asyncio.sleep(0)  # let the transport write (and fill)
            await eventually(lambda: b.remote_metrics().read_pauses >= 1)
            # b drops the connection (as a crashed or partitioned peer would), with
            # what a still held for it. (A stop of b would first read everything a
            # sent, as dead letters ``stopped`` there, since its actor is gone.)
            remote = b._remote
            assert remote is not None
            for conn in list(remote.node._connections):
                conn.abort()
            await eventually(lambda: a.remote_metrics().held_lost > 0)
        finally:
            await b.stop()
        metrics = a.remote_metrics()
        unreachable = [d for d in dead_a if d.reason is DeadLetterReason.UNREACHABLE]
        overflow = [d for d in dead_a if d.reason is DeadLetterReason.OVERFLOW]
        assert len(unreachable) == metrics.held_lost  # each held tell: one dead letter
        assert len(overflow) == metrics.overflow
        # The rest was delivered or lost inside the operating system's socket buffers
        # (TCP gives no receipt): never more than what they can hold.
        assert len(unreachable) + len(overflow) + len(box) <= total
