# SPDX-License-Identifier: Apache-2.0
"""A cluster node process for ``test_cluster_processes.py``.

``claims URL NODE COUNT FIRE``: claim ticks ``r@0`` … ``r@COUNT-1`` (all at instant FIRE,
TTL one hour) as fast as it can; print the won indices as one JSON line.

``member URL NAME LEASE``: join as node NAME with the real clock and print one JSON line
per event (``ready``, ``joined``, ``left``, ``lost``, ``members``), flushed, until killed.

``cron URL NAME LEASE LOG``: a real ``ActorSystem`` with remoting and
``cluster=Cluster(URL, lease=LEASE)`` schedules ``* * * * * ?`` (every second) with
reference ``every-second`` to an actor that appends ``NAME SECOND`` to LOG (one ``write``
per line, O_APPEND), until killed. SECOND is the instant the delivered tick stands for
(the claim key), not the second it arrived in: a node woken from SIGSTOP delivers the
tick it claimed late, in a later second than the tick's own.

``chaos URL NAME DELIVERY DELAY LOG``: like ``cron``, with
``schedule_cron(..., delivery=DELIVERY)`` and ``Cluster(URL, lease=3, delivery_lease=2)``;
the actor's ``receive`` appends ``start NAME SECOND FENCE``, sleeps DELAY seconds (a slow
handler: a wide window between claim and ``receive`` returning), then appends ``done NAME
SECOND FENCE``; every outcome the scheduler records for an instant it does not deliver
(its history's entries) is appended as ``outcome NAME SECOND OUTCOME``.

``freeze URL NAME DELAY LOG``: like ``chaos`` with two every-second crons at once,
reference ``most`` (``at_most_once``) and ``least`` (``at_least_once``); the lines carry
the reference: ``start NAME REF SECOND FENCE``, ``done NAME REF SECOND FENCE``. On
SIGTERM it prints its cluster metrics as ``{"event": "metrics", ...}`` and exits at once.

``durable URL STORE NAME LEASE LOG SEED``: a real ``ActorSystem`` with remoting, the
shared durable STORE (``sqlite:///path`` or ``postgresql://...#SCHEMA``) and
``cluster=Cluster(URL, lease=LEASE)``; durable ``Counter`` identities tick every 0.2 s,
each tick adding one to a stored count and appending ``NAME IDENTITY COUNT WALL`` to LOG after
the write committed. With SEED > 0 it starts ``c-0`` … ``c-SEED-1`` (through their
owners, wherever they are). Prints ``ready``. On SIGUSR1 it activates a probe identity
that this node owns (the rendezvous hash prefers it over all three names) and tells it to
hold a write in flight: the probe writes, prints ``holding``, waits ``4 * LEASE`` real
seconds and writes again (a zombie frozen meanwhile finds that write refused; appending
``NAME probe after`` to LOG only if it committed). On SIGTERM it prints its
``fenced_writes`` as ``{"event": "fenced", "count": N}`` and exits at once. Nothing else
is printed, so the parent reads each line as it comes (no stale line buffered ahead).

``graceful URL NAME LOG``: like ``cron`` (``at_most_once``, the default ``claim_ahead``),
and on SIGTERM it stops gracefully (``system.stop()``), prints ``{"event": "stopped"}``
and exits; every outcome the scheduler records for an instant it does not deliver is
appended as ``outcome NAME SECOND OUTCOME``.

``owner URL NAME LEASE KIND ID``: join, claim ownership of ``(KIND, ID)``, print
``{"owned": epoch}`` and keep renewing until killed (``bench/cluster.py`` failover).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from tocsin.clock import SystemClock
from tocsin.cluster import Cluster, ClusterNode, NodeJoined, NodeLeft, open_coordinator


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def log_outcomes(system: Any, fd: int, name: str) -> None:
    """Write each tick outcome of ``system``'s scheduler to ``fd`` as ``outcome NAME
    INSTANT WHAT`` (test-only: the history hook is internal), then record it as usual."""
    from tocsin.scheduling._spi import Scheduler

    runtime = system.runtime
    assert runtime is not None  # started
    schedules = runtime.schedules
    assert isinstance(schedules, Scheduler)
    path = schedules.tick_path
    record_outcome = path.outcome

    def outcome(record: Any, instant: float, what: Any, detail: Any = None) -> None:
        os.write(fd, f"outcome {name} {round(instant)} {what}\n".encode())
        record_outcome(record, instant, what, detail)

    path.outcome = outcome  # type: ignore[method-assign, assignment]


async def claims(url: str, node: str, count: int, fire: float) -> None:
    coordinator = open_coordinator(url)
    await coordinator.open()
    try:
        won = []
        for i in range(count):
            outcome = await coordinator.claim_tick(f"r@{i}", "r", fire, 3600.0, node)
            if outcome.outcome.value == "won":
                won.append(i)
        emit(won=won)
    finally:
        await coordinator.close()


async def member(url: str, name: str, lease: float) -> None:
    def publish(event: object) -> None:
        if isinstance(event, NodeJoined):
            emit(event="joined", node=event.name)
        elif isinstance(event, NodeLeft):
            emit(event="left", node=event.name, reason=event.reason)

    node = ClusterNode(
        Cluster(url, lease=lease),
        name=name,
        address=f"proc://{name}",
        clock=SystemClock(),
        publish=publish,
        on_lease_lost=lambda: emit(event="lost"),
    )
    await node.start()
    emit(event="ready", incarnation=node.membership.incarnation)
    try:
        while True:
            await asyncio.sleep(lease / 3)
            emit(event="members", names=[m.name for m in node.members()])
    finally:
        await node.stop()


async def cron(url: str, name: str, lease: float, log: str) -> None:
    import os

    from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            # The instant the tick stands for (the claim key), not the second it arrived
            # in: a node woken from SIGSTOP delivers the tick it claimed late.
            assert ctx.tick is not None
            second = round(ctx.tick.instant.timestamp())
            os.write(fd, f"{name} {second}\n".encode())

    system = ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=lease),
    )
    async with system:
        pid = await system.spawn(Job, "job")
        await system.schedule_cron("run", pid, "* * * * * ?", reference="every-second")
        emit(event="ready")
        while True:
            await asyncio.sleep(3600)


async def chaos(url: str, name: str, delivery: str, delay: float, log: str) -> None:
    import os

    from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            tick = ctx.tick
            assert tick is not None
            second = round(tick.instant.timestamp())
            os.write(fd, f"start {name} {second} {tick.fence}\n".encode())
            await asyncio.sleep(delay)
            os.write(fd, f"done {name} {second} {tick.fence}\n".encode())

    system = ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=3.0, delivery_lease=2.0),
    )
    async with system:
        log_outcomes(system, fd, name)
        pid = await system.spawn(Job, "job")
        await system.schedule_cron(
            "run", pid, "* * * * * ?", reference="every-second", delivery=delivery
        )
        emit(event="ready")
        while True:
            await asyncio.sleep(3600)


async def graceful(url: str, name: str, log: str) -> None:
    import os
    import signal

    from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            assert ctx.tick is not None
            os.write(fd, f"{name} {round(ctx.tick.instant.timestamp())}\n".encode())

    system = ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=3.0),
    )
    stop = asyncio.Event()
    await system.start()
    try:
        log_outcomes(system, fd, name)
        pid = await system.spawn(Job, "job")
        await system.schedule_cron("run", pid, "* * * * * ?", reference="every-second")
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        emit(event="ready")
        await stop.wait()
    finally:
        await system.stop()
    emit(event="stopped")


async def freeze(url: str, name: str, delay: float, log: str) -> None:
    import os
    import signal

    from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            tick = ctx.tick
            assert tick is not None
            what = f"{name} {tick.reference} {round(tick.instant.timestamp())} {tick.fence}"
            os.write(fd, f"start {what}\n".encode())
            await asyncio.sleep(delay)
            os.write(fd, f"done {what}\n".encode())

    system = ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=3.0, delivery_lease=2.0),
    )

    def metrics_and_exit() -> None:
        m = system.cluster.metrics()
        emit(
            event="metrics",
            leases_lost=m.leases_lost,
            claims_superseded=m.claims_superseded,
            claims_reclaimed=m.claims_reclaimed,
        )
        os._exit(0)

    async with system:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, metrics_and_exit)
        for reference, delivery in (("most", "at_most_once"), ("least", "at_least_once")):
            pid = await system.spawn(Job, f"job-{reference}")  # one each: never queued
            await system.schedule_cron(
                reference, pid, "* * * * * ?", reference=reference, delivery=delivery
            )
        emit(event="ready")
        while True:
            await asyncio.sleep(3600)


async def durable(url: str, store_spec: str, name: str, lease: float, log: str, seed: int) -> None:
    import os
    import signal

    from tocsin import ActorSystem, Remoting
    from tocsin.cluster._placement import rendezvous_owner
    from tocsin.durable import Call, DurableActor
    from tocsin.errors import FencedError
    from tocsin.stores import Store

    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class Counter(DurableActor):
        kind = "chaos.Counter"

        async def start(self, payload: Any) -> None:
            await self.every(0.2, "tick", id="tick")

        async def tick(self, payload: Any) -> None:
            count = int(await self.storage.get("count", 0)) + 1
            await self.storage.put("count", count)  # fenced: a zombie's put raises
            os.write(fd, f"{name} {self.identity} {count} {self.now().timestamp()}\n".encode())

    class Probe(DurableActor):
        kind = "chaos.Probe"

        async def hold(self, seconds: float) -> None:
            # A message handler, not a task: losing the lease stops the activation but
            # does not cancel a running handler, so the second write is really attempted.
            await self.storage.put("held", "before")
            emit(event="holding")
            try:
                await asyncio.sleep(seconds)
                await self.storage.put("held", "after")  # the zombie's write: refused
            except FencedError:
                os.write(fd, f"{name} probe refused\n".encode())
                raise
            except asyncio.CancelledError:
                os.write(fd, f"{name} probe cancelled\n".encode())
                raise
            os.write(fd, f"{name} probe after\n".encode())

    store: str | Store = store_spec
    if store_spec.startswith("postgresql://"):
        from tocsin.stores.postgres import PostgresStore

        dsn, _, schema = store_spec.partition("#")
        store = PostgresStore(dsn, schema=schema)
    system = ActorSystem(
        name,
        store=store,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=lease),
    )

    async def probe() -> None:
        # Preferred over all three names, hence over any live subset: activates here.
        identity = next(
            f"probe-{i}"
            for i in range(1000)
            if rendezvous_owner(Probe.kind, f"probe-{i}", ["a", "b", "c"]) == name
        )
        pid = await system.durable(Probe, identity)
        pid.tell(Call("hold", 4 * lease))

    def fenced_and_exit() -> None:
        emit(event="fenced", count=system.cluster.metrics().fenced_writes)
        os._exit(0)

    tasks: set[asyncio.Task[None]] = set()
    async with system:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, lambda: tasks.add(loop.create_task(probe())))
        loop.add_signal_handler(signal.SIGTERM, fenced_and_exit)
        if seed:
            # Wait until the three nodes are members, so the identities spread.
            while len(system.cluster.members()) < 3:
                await asyncio.sleep(lease / 3)
            for i in range(seed):
                pid = await system.durable(Counter, f"c-{i}")
                await pid.ask(Call("start"), timeout=20.0)
        emit(event="ready")
        while True:
            await asyncio.sleep(3600)


async def owner(url: str, name: str, lease: float, kind: str, identity: str) -> None:
    node = ClusterNode(
        Cluster(url, lease=lease), name=name, address=name, clock=SystemClock(),
        publish=lambda event: None,
    )  # fmt: skip
    await node.start()
    entry = await node.directory.acquire(kind, identity)
    emit(owned=None if entry is None or entry.node != name else entry.epoch)
    try:
        while True:
            await asyncio.sleep(3600)
    finally:
        await node.stop()


if __name__ == "__main__":
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "cron":
        asyncio.run(cron(url, sys.argv[3], float(sys.argv[4]), sys.argv[5]))
    elif mode == "chaos":
        asyncio.run(chaos(url, sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6]))
    elif mode == "graceful":
        asyncio.run(graceful(url, sys.argv[3], sys.argv[4]))
    elif mode == "freeze":
        asyncio.run(freeze(url, sys.argv[3], float(sys.argv[4]), sys.argv[5]))
    elif mode == "durable":
        args = sys.argv[3:]
        asyncio.run(durable(url, args[0], args[1], float(args[2]), args[3], int(args[4])))
    elif mode == "owner":
        args = sys.argv[3:]
        asyncio.run(owner(url, args[0], float(args[1]), args[2], args[3]))
    elif mode == "claims":
        asyncio.run(claims(url, sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
    else:
        asyncio.run(member(url, sys.argv[3], float(sys.argv[4])))
