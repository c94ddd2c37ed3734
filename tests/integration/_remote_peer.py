# SPDX-License-Identifier: Apache-2.0
"""The other process of the two-process remoting tests (``test_remote_two_process.py``).

Usage: ``python _remote_peer.py NAME LISTEN`` with the shared secret in ``TOCSIN_SECRET``.

Starts ``ActorSystem(NAME, remoting=Remoting(LISTEN, ...))`` with the actors below, prints
one JSON line ``{"address": ..., "pids": {name: str(pid)}}`` on stdout, then serves until
its stdin closes (a clean stop) or it is killed. The test drives it only through remote
messages: what it observes is what a real user of another node would see.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from typing import Any

import msgspec

from tocsin import PID, Actor, ActorSystem, ReceiveContext, Remoting


class Ping(msgspec.Struct, tag=True):
    n: int


class Pong(msgspec.Struct, tag=True):
    n: int


@dataclasses.dataclass(frozen=True)
class Forward:
    """Ask the forwarder to tell ``to`` a ``Pong(n)`` (a PID inside a message)."""

    to: PID
    n: int


class Get(msgspec.Struct, tag=True):
    """Ask the recorder for what it has recorded."""


MESSAGES: list[type] = [Ping, Pong, Forward, Get]


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


class Boom(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        raise KeyError(f"no such thing: {ctx.message!r}")


class Replier(Actor):
    """Answers Ping(n) with Pong(n): to an asker, or by telling the sender."""

    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Ping):
            ctx.respond(Pong(ctx.message.n))


class Forwarder(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Forward):
            ctx.message.to.tell(Pong(ctx.message.n), ctx.self)


class Recorder(Actor):
    """Records (message, str(sender)); ``Get()`` returns the records."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def receive(self, ctx: ReceiveContext) -> None:
        if isinstance(ctx.message, Get):
            ctx.respond(list(self.seen))
        else:
            self.seen.append((ctx.message, str(ctx.sender) if ctx.sender else ""))


ACTORS = {
    "echo": Echo,
    "boom": Boom,
    "replier": Replier,
    "forwarder": Forwarder,
    "recorder": Recorder,
}


def remoting(listen: str, secret: str) -> Remoting:
    config = Remoting(listen=listen, secret=secret, messages=MESSAGES)
    tls_dir = os.environ.get("TOCSIN_TLS_DIR")
    if tls_dir:  # certificates made by the test (tests/remote/test_transport_certs.py)
        config = config.replace(
            tls_cert=f"{tls_dir}/ca-node.pem",
            tls_key=f"{tls_dir}/ca-node.key",
            tls_ca=f"{tls_dir}/ca.pem",
        )
    return config


async def main(name: str, listen: str) -> None:
    async with ActorSystem(name, remoting=remoting(listen, os.environ["TOCSIN_SECRET"])) as system:
        pids = {key: str(await system.spawn(cls, key)) for key, cls in ACTORS.items()}
        print(json.dumps({"address": system.address, "pids": pids}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
