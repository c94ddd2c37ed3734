# SPDX-License-Identifier: Apache-2.0
"""The remote hop of ``tocsin demo``: a second process, found by its PID string, asked,
and ticked by a schedule that lives here (``docs/remoting.md``).

The second process is this same command (``tocsin demo --remote-peer``): it hosts a
``Ponger`` on loopback port 0, prints its PID string, and serves until its stdin closes.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import Callable

import msgspec

from ..actor import Actor, ReceiveContext
from ..remote import Remoting
from ..system import ActorSystem

__all__ = ["remote_hop", "serve_peer"]

_SECRET_ENV = "TOCSIN_DEMO_SECRET"


class Ping(msgspec.Struct, tag=True):
    n: int


class Pong(msgspec.Struct, tag=True):
    n: int
    pid: int  # the OS process that answered


def _remoting(secret: str) -> Remoting:
    return Remoting(listen="tcp://127.0.0.1:0", secret=secret, messages=[Ping, Pong])


class _Ponger(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Ping):
            ctx.respond(Pong(ctx.message.n, os.getpid()))


class _Collector(Actor):
    def __init__(self, got: asyncio.Queue[Pong]) -> None:
        self.got = got

    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Pong):
            self.got.put_nowait(ctx.message)


async def serve_peer() -> None:
    """The second process: host a Ponger until stdin closes."""
    async with ActorSystem("demo-peer", remoting=_remoting(os.environ[_SECRET_ENV])) as system:
        ponger = await system.spawn(_Ponger, "ponger")
        print(ponger, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def remote_hop(say: Callable[[str, str], None]) -> None:
    """Start the second process, ask its Ponger, tick it from here, stop it."""
    secret = secrets.token_hex(16)
    peer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tocsin.cli",
        "demo",
        "--remote-peer",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=dict(os.environ, **{_SECRET_ENV: secret}),
    )
    try:
        assert peer.stdout is not None
        text = (await asyncio.wait_for(peer.stdout.readline(), 30)).decode().strip()
        async with ActorSystem("demo", remoting=_remoting(secret)) as system:
            say("remote", f"this node is {system.address}")
            ponger = await system.actor_of(text)  # asks the node that hosts it
            pong = await ponger.ask(Ping(1), timeout=10)
            say("remote", f"ask {text} -> Pong from process {pong.pid} (this one: {os.getpid()})")
            got: asyncio.Queue[Pong] = asyncio.Queue()
            collector = await system.spawn(lambda: _Collector(got), "collector")
            await system.schedule(Ping(2), ponger, 0.2, reference="remote-tick", sender=collector)
            for _ in range(2):
                await asyncio.wait_for(got.get(), 10)
                say("remote", "tick delivered in the other process, its Pong came back")
            await system.cancel_schedule("remote-tick")
    finally:
        assert peer.stdin is not None
        peer.stdin.close()
        await asyncio.wait_for(peer.wait(), 15)
