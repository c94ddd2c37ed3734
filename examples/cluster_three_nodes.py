# SPDX-License-Identifier: Apache-2.0
"""Three node processes, one cluster: a cron job fires once per second cluster-wide, a
durable account has one activation, and a SIGKILLed owner's account comes back elsewhere.

Run it: ``python examples/cluster_three_nodes.py``. It starts three copies of itself
(``--node NAME DIR``), each an ``ActorSystem`` with remoting on loopback, the SQLite
coordinator and SQLite durable store of one temporary directory (the set-up for the nodes
of one machine; on several machines use a PostgreSQL or Redis coordinator and a
PostgreSQL store: only the URLs change). This process sends commands to the nodes on
their stdin and reads one JSON line back per command:

1. every node registers the same cron job under one reference; the ticks of three
   seconds are delivered once each, by whichever node won the claim;
2. ``deposit`` through each node reaches the one activation of ``acct-1``;
3. the owner is SIGKILLed; once its lease (1 s here) has lapsed, the next deposit
   activates ``acct-1`` on a survivor, with its balance and a new fencing epoch.
"""

from __future__ import annotations

import asyncio
import json
import select
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from tocsin import Actor, ActorSystem, Cluster, ReceiveContext, Remoting
from tocsin.durable import Call, DurableActor

LEASE = 1.0  # seconds; short for the example (production: 10 s or more)
SECRET = "cluster-example-secret-made-up!!"  # every node of one cluster shares it


class Account(DurableActor):
    kind = "example.Account"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        self.node = ctx.system.name  # where this activation runs

    async def deposit(self, amount: int) -> list[Any]:
        balance = int(await self.storage.get("balance", 0)) + amount
        await self.storage.put("balance", balance)  # fenced by this node's epoch
        return [self.node, balance]


class Tick(Actor):
    def __init__(self, log: Path) -> None:
        self.log = log

    async def receive(self, ctx: ReceiveContext) -> None:
        second = int(ctx.system.clock.wall() + 0.01)  # the tick's second
        with self.log.open("a") as file:  # one short append per delivery
            file.write(f"{second} {ctx.system.name}\n")


def reply(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


async def node(name: str, workdir: Path) -> None:
    """One node: serve the parent's commands (one per stdin line) until stdin closes."""
    system = ActorSystem(
        name,
        store=f"sqlite:///{workdir}/store.db",  # the durable store every node shares
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET),
        cluster=Cluster(f"sqlite:///{workdir}/coordinator.db", lease=LEASE),
    )
    async with system:
        # Start together, so the load spreads. members() is a snapshot refreshed every
        # lease/3: polling it at that pace is simplest.
        while len(system.cluster.members()) < 3:  # noqa: ASYNC110
            await asyncio.sleep(LEASE / 3)
        reply(ready=name)
        loop = asyncio.get_running_loop()
        while command := (await loop.run_in_executor(None, sys.stdin.readline)).split():
            if command[0] == "cron":
                pid = await system.spawn(partial(Tick, workdir / "ticks.log"), "tick")
                # The same call on every node; in cluster mode the reference is required.
                await system.schedule_cron("tick", pid, "* * * * * ?", reference="tick")
                reply(scheduled=name)
            elif command[0] == "deposit":
                reply(result=await deposit(system, int(command[1])))
            elif command[0] == "owner":
                entry = await system.cluster.coordinator.owner(Account.kind, "acct-1")
                reply(owner=None if entry is None else [entry.node, entry.epoch])


async def deposit(system: ActorSystem, amount: int) -> list[Any]:
    """Ask the one activation of acct-1, wherever it is. Right after its owner died, the
    directory still names it until its lease lapses and the ask fails (the dead node's
    address refuses the connection, so nothing was deposited): retry until it works."""
    deadline = system.clock.monotonic() + 30 * LEASE
    while True:
        try:
            pid = await system.durable(Account, "acct-1")
            result: list[Any] = await pid.ask(Call("deposit", amount), timeout=LEASE)
            return result
        except Exception:
            if system.clock.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


class Nodes:
    """The three node processes, driven through their stdin and stdout."""

    def __init__(self, workdir: Path) -> None:
        self.procs = {
            name: subprocess.Popen(
                [sys.executable, __file__, "--node", name, str(workdir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for name in ("n1", "n2", "n3")
        }

    def read(self, name: str) -> dict[str, Any]:
        stdout = self.procs[name].stdout
        assert stdout is not None
        if not select.select([stdout], [], [], 60.0)[0]:  # a bound on a hang
            raise TimeoutError(f"node {name} did not answer within 60 s")
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"node {name} exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def send(self, name: str, command: str) -> dict[str, Any]:
        stdin = self.procs[name].stdin
        assert stdin is not None
        stdin.write(command + "\n")
        stdin.flush()
        return self.read(name)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.close()  # a graceful stop: the node leaves the cluster
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        nodes = Nodes(workdir)
        try:
            for name in nodes.procs:
                print("ready:", nodes.read(name)["ready"])

            for name in nodes.procs:
                nodes.send(name, "cron")
            time.sleep(3.5)  # let a few seconds tick by
            ticks = [line.split() for line in (workdir / "ticks.log").read_text().splitlines()]
            seconds = [second for second, _ in ticks]
            at = [f"{time.strftime('%H:%M:%S', time.gmtime(int(s)))} {n}" for s, n in ticks]
            print("cron ticks (UTC second, node):", ", ".join(at))
            assert len(seconds) == len(set(seconds)), "a tick was delivered twice"

            for name in nodes.procs:  # one activation answers every time
                home, balance = nodes.send(name, "deposit 10")["result"]
                print(f"deposit via {name}: served by {home}, balance {balance}")
            assert balance == 30
            print("owner, epoch:", nodes.send("n1", "owner")["owner"])

            nodes.procs[home].send_signal(signal.SIGKILL)  # the owner dies, no goodbye
            nodes.procs[home].wait()
            survivor = next(name for name in nodes.procs if name != home)
            new_home, balance = nodes.send(survivor, "deposit 1")["result"]
            owner, epoch = nodes.send(survivor, "owner")["owner"]
            print(f"after {home} was killed: served by {new_home}, balance {balance}, "
                  f"epoch {epoch}")  # fmt: skip
            assert new_home != home
            assert owner == new_home
            assert balance == 31
            assert epoch == 2
        finally:
            nodes.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--node"]:
        asyncio.run(node(sys.argv[2], Path(sys.argv[3])))
    else:
        main()
