# SPDX-License-Identifier: Apache-2.0
"""Two processes, one actor system each: ask, tell with a reply, and a remote tick.

Run it: ``python examples/remote_ping.py``. It starts a second copy of itself (``--serve``)
that hosts a ``Ponger``; this process finds it by its PID string, asks it, lets it answer a
tell through ``ctx.sender``, and schedules a repeating tick to it from here (the schedule
lives on this node; each tick is a remote send). Both nodes listen on loopback, port 0
(the real port is in ``system.address``), and share a secret made for this run.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys

import msgspec

from tocsin import Actor, ActorSystem, ReceiveContext, Remoting


class Ping(msgspec.Struct, tag=True):
    n: int


class Pong(msgspec.Struct, tag=True):
    n: int


def remoting(secret: str) -> Remoting:
    # Both nodes register the same message classes (same names, same fields).
    return Remoting(listen="tcp://127.0.0.1:0", secret=secret, messages=[Ping, Pong])


class Ponger(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Ping):
            ctx.respond(Pong(ctx.message.n))  # to an asker, or a tell to ctx.sender


class Collector(Actor):
    def __init__(self, got: asyncio.Queue[Pong]) -> None:
        self.got = got

    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Pong):
            self.got.put_nowait(ctx.message)


async def serve(secret: str) -> None:
    """The second process: host a Ponger until stdin closes."""
    async with ActorSystem("pong-node", remoting=remoting(secret)) as system:
        ponger = await system.spawn(Ponger, "ponger")
        print(ponger, flush=True)  # str(pid): tocsin://pong-node@127.0.0.1:<port>/user/ponger
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def main() -> None:
    secret = secrets.token_hex(16)
    other = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=dict(os.environ, PING_SECRET=secret),
    )
    try:
        assert other.stdout is not None
        ponger_address = (await other.stdout.readline()).decode().strip()
        async with ActorSystem("ping-node", remoting=remoting(secret)) as system:
            ponger = await system.actor_of(ponger_address)  # asks the hosting node
            print("ask  ->", await ponger.ask(Ping(1), timeout=10))

            got: asyncio.Queue[Pong] = asyncio.Queue()
            collector = await system.spawn(lambda: Collector(got), "collector")
            ponger.tell(Ping(2), sender=collector)  # the Ponger replies to ctx.sender
            print("tell ->", await asyncio.wait_for(got.get(), 10))

            # A schedule on this node whose target lives on the other one; the Ponger's
            # answers come back to the collector, the tick's sender.
            await system.schedule(Ping(3), ponger, 0.05, reference="ping", sender=collector)
            for _ in range(3):
                print("tick ->", await asyncio.wait_for(got.get(), 10))
            await system.cancel_schedule("ping")
    finally:
        assert other.stdin is not None
        other.stdin.close()
        await asyncio.wait_for(other.wait(), 10)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        asyncio.run(serve(os.environ["PING_SECRET"]))
    else:
        asyncio.run(main())
