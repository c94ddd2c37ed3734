# SPDX-License-Identifier: Apache-2.0
"""The receiving node of ``test_remote_flood.py``, run as a child process (not a test module).

It listens on a free port, hosts ``/user/slow`` (a bounded mailbox; its first message
holds it until the line ``go`` arrives on stdin, so the whole flood meets a receiver that
handles nothing, however slow the sender is (under coverage on a busy machine a sender
could be no faster than a merely slow receiver, and shed nothing); after ``go`` at most
~10,000 messages a second, resting 10 ms every 100, so the test's CPU stays small) and
``/user/stats`` (answers ``"stats"`` with ``(handled, baseline RSS MiB, peak RSS MiB,
read pauses)``), prints its address,
and runs until its stdin closes. RSS is sampled every 1,000 messages handled and every
50 ms.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

SECRET = b"remote-flood-secret-0123456789"
BOUND = 1_000


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class State:
    go = asyncio.Event()
    handled = 0
    baseline = 0.0
    peak = 0.0


def sample() -> None:
    State.peak = max(State.peak, rss_mib())


class Slow(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        State.handled += 1
        if State.handled == 1:
            await State.go.wait()  # held until the flood has been sent
        if State.handled % 100 == 0:
            if State.handled % 1_000 == 0:
                sample()
            await asyncio.sleep(0.01)


class Stats(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        sample()
        pauses = ctx.system.remote_metrics().read_pauses
        ctx.respond((State.handled, State.baseline, State.peak, pauses))


async def main() -> None:
    loop = asyncio.get_running_loop()
    async with ActorSystem(
        "rx", remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)
    ) as system:
        await system.spawn(Slow, "slow", mailbox_bound=BOUND)
        await system.spawn(Stats, "stats")
        State.baseline = State.peak = rss_mib()
        done = asyncio.Event()

        def on_stdin() -> None:
            line = sys.stdin.readline()
            if line.strip() == "go":
                State.go.set()
            elif not line:  # stdin closed: stop
                State.go.set()
                done.set()

        loop.add_reader(sys.stdin.fileno(), on_stdin)

        async def sampler() -> None:
            while not done.is_set():
                sample()
                await asyncio.sleep(0.05)

        task = asyncio.create_task(sampler())
        print(system.address, flush=True)
        await done.wait()
        loop.remove_reader(sys.stdin.fileno())
        await task


if __name__ == "__main__":
    asyncio.run(main())
