# SPDX-License-Identifier: Apache-2.0
"""The hosting process of ``test_remote_overlap_processes.py``: a slow, gated handler.

Usage: ``python _overlap_peer.py NAME`` with the shared secret in ``TOCSIN_SECRET``.

Hosts ``slow`` (records each message's ``ctx.tick`` as its wire list, then waits for its
gate: the handler is "slow" exactly as long as the test wants), ``gate`` (``"release"``
opens the gate once) and ``log`` (``"get"`` answers with the records: one list per
delivery, ``[message, tick.to_wire() or None, handlers running]``). Prints one JSON line
``{"address": ..., "pids": {...}}``, serves until its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from tocsin import Actor, ActorSystem, ReceiveContext, Remoting


class Shared:
    """What the three actors of this process share (one process, one loop)."""

    def __init__(self) -> None:
        self.records: list[list[Any]] = []
        self.gate = asyncio.Event()
        self.running = 0
        self.closing = False

    def open_for_good(self) -> None:
        """Stopping: every handler waiting or to come returns at once."""
        self.closing = True
        self.gate.set()


class Slow(Actor):
    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def receive(self, ctx: ReceiveContext) -> None:
        shared = self.shared
        shared.running += 1
        tick = ctx.tick
        shared.records.append(
            [ctx.message, None if tick is None else tick.to_wire(), shared.running]
        )
        try:
            await shared.gate.wait()
            if not shared.closing:
                shared.gate.clear()
        finally:
            shared.running -= 1


class Gate(Actor):
    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "release":
            self.shared.gate.set()


class Log(Actor):
    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "get":
            ctx.respond([list(r) for r in self.shared.records])


async def main(name: str) -> None:
    shared = Shared()
    remoting = Remoting(listen="tcp://127.0.0.1:0", secret=os.environ["TOCSIN_SECRET"])
    async with ActorSystem(name, remoting=remoting) as system:
        pids = {
            "slow": str(await system.spawn(lambda: Slow(shared), "slow")),
            "gate": str(await system.spawn(lambda: Gate(shared), "gate")),
            "log": str(await system.spawn(lambda: Log(shared), "log")),
        }
        print(json.dumps({"address": system.address, "pids": pids}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        shared.open_for_good()  # ticks queued behind a gated one must not hold the stop


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
