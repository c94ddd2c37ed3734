# SPDX-License-Identifier: Apache-2.0
"""Ticks to a remote target from two systems in one process (real sockets, real time:
the transport is what is tested; timing semantics live in tests/scheduling)."""

from __future__ import annotations

import asyncio
from typing import Any

from tocsin import Actor, ActorSystem, DeadLetter, ReceiveContext, Remoting

SECRET = b"remote-ticks-secret-0123"


class Inbox(Actor):
    def __init__(self, box: list[Any]) -> None:
        self.box = box

    async def receive(self, ctx: ReceiveContext) -> None:
        self.box.append(ctx.message)


async def eventually(check: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


async def test_a_tick_whose_message_was_mutated_past_the_wire_is_a_dead_letter_not_a_crash() -> (
    None
):
    def remoting() -> Remoting:
        return Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)

    async with (
        ActorSystem("b", remoting=remoting()) as b,
        ActorSystem("a", remoting=remoting()) as a,
    ):
        got: list[Any] = []
        await b.spawn(lambda: Inbox(got), "inbox")
        inbox = await a.actor_of(f"{b.address}/user/inbox")
        letters: list[DeadLetter] = []
        a.events.subscribe(letters.append, DeadLetter)
        payload: list[Any] = ["ok"]
        await a.schedule(payload, inbox, 0.02, reference="mutable")
        await a.schedule("steady", inbox, 0.02, reference="steady")
        await eventually(lambda: ["ok"] in got and "steady" in got)
        payload.append(object())  # no longer crosses the wire
        await eventually(lambda: any(d.message is payload for d in letters))
        before = got.count("steady")
        await eventually(lambda: got.count("steady") > before + 2)  # the timer still runs
        await a.cancel_schedule("mutable")
        await a.cancel_schedule("steady")
