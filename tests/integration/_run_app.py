# SPDX-License-Identifier: Apache-2.0
"""Applications run by ``test_run_processes.py`` under ``tocsin run`` (real processes).

``RUN_TEST_LOG`` (inherited from the test) names an append-only file; each line is
``<event> <worker system name> <os pid> <wall time>``.

``_run_nodeath.py`` runs these with ``PR_SET_PDEATHSIG`` off.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.actor import SystemView
from tocsin.durable import DurableActor


def record(event: str, system: SystemView | str) -> None:
    name = system if isinstance(system, str) else system.name
    path = os.environ.get("RUN_TEST_LOG")
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{event} {name} {os.getpid()} {time.time():.6f}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


async def main(system: ActorSystem) -> None:
    """A healthy worker: one actor, answers an ask, then serves."""
    pid = await system.spawn(Echo, "echo")
    assert await pid.ask("ping", timeout=10) == "ping"
    record("main", system)


async def crash(system: ActorSystem) -> None:
    """A broken deploy: main raises at once, every time."""
    record("crash", system)
    raise RuntimeError("main fails on purpose")


class Slow(DurableActor):
    """Queues one task, once per store; the task takes a minute (it is in flight at stop)."""

    kind = "run-test-slow"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        # The worker's name from the activation itself: a task may run on a worker whose
        # main has not started yet (it waits for every worker to join).
        self.worker = ctx.system.name
        if await self.storage.get("seeded"):
            return
        async with self.transaction():
            await self.queue("work", None, id="long")
            await self.storage.put("seeded", True)

    async def work(self, payload: None) -> None:
        record("work-start", self.worker)
        await asyncio.sleep(60)
        record("work-done", self.worker)


async def durable_in_flight(system: ActorSystem) -> None:
    """A durable task that is still running when the stop comes."""
    await system.durable(Slow, "slow")
    record("main", system)


#: Durable identities in ``shared_work``, the one-shot tasks each seeds, and the seconds
#: over which those tasks fall due.
IDENTITIES = 24
TASKS = 8
SPREAD = 6.0
WORKERS = 2


class Job(DurableActor):
    """Seeds TASKS one-shots once (atomically with its flag). Each run adds its number to
    the set ``done`` in storage (read, then write: a lost update would drop one) and
    logs ``job:<identity>:<n>``."""

    kind = "run-test-job"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        self.worker = ctx.system.name  # as Slow's
        if await self.storage.get("seeded"):
            return
        async with self.transaction():
            for n in range(TASKS):
                await self.schedule(0.05 + SPREAD * n / TASKS, "one", n, id=f"t{n}")
            await self.storage.put("seeded", True)

    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.system.name)

    async def one(self, n: int) -> None:
        done = await self.storage.get("done", frozenset())
        await self.storage.put("done", done | {n})
        record(f"job:{self.identity}:{n}", self.worker)


async def wait_members(system: ActorSystem, count: int) -> None:
    """Wait (bounded) until ``count`` workers are members: placement then spreads the
    identities over all of them instead of the first one up."""
    for _ in range(1200):
        if len(system.cluster.members()) >= count:
            return
        await asyncio.sleep(0.05)


async def shared_work(system: ActorSystem) -> None:
    """Every worker activates the same IDENTITIES durable jobs (an ask reaches each one's
    single activation, wherever rendezvous hashing placed it)."""
    await wait_members(system, WORKERS)
    for i in range(IDENTITIES):
        pid = await system.durable(Job, f"job-{i}")
        await pid.ask("hello", timeout=30)
    record("main", system)


class Wedge(Actor):
    """Blocks its worker's event loop for good, half a second after it starts."""

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await ctx.schedule_once("wedge", ctx.self, 0.5)

    async def receive(self, ctx: ReceiveContext) -> None:
        record("wedged", ctx.system)
        time.sleep(3600)  # a blocking call in a handler: nothing on this loop runs again


async def wedged(system: ActorSystem) -> None:
    """A worker whose loop wedges after it is ready: no signal handler can run in it."""
    await system.spawn(Wedge, "wedge")


class Stuck(Actor):
    """A handler that awaits for an hour: only the stop grace ends it."""

    async def receive(self, ctx: ReceiveContext) -> None:
        record("stuck", ctx.system)
        await asyncio.sleep(3600)


async def stuck(system: ActorSystem) -> None:
    pid = await system.spawn(Stuck, "stuck")
    pid.tell("hang")


_probes: set[asyncio.Task[None]] = set()


@dataclass(frozen=True, slots=True)
class Greeting:
    """An application message class registered with ``--messages _run_app:MESSAGES``."""

    text: str


MESSAGES = [Greeting]


async def cross(system: ActorSystem) -> None:
    """Worker 1 asks the echo actor of worker 2, found by its PID string (remoting over
    the run's Unix sockets, authenticated with the run's secret)."""
    await system.spawn(Echo, "echo")
    number = system.name.rsplit("-", 1)[1]
    if number != "1":
        return
    other = system.address.replace("-1@", "-2@").replace("worker-1.sock", "worker-2.sock")

    async def probe() -> None:
        for _ in range(300):  # worker 2 may still be starting
            try:
                pid = await system.actor_of(f"{other}/user/echo")
                answer = await pid.ask(Greeting("hello"), timeout=5)
            except Exception:
                await asyncio.sleep(0.1)
                continue
            record(f"answer:{type(answer).__name__}:{answer.text}", system)
            return

    task = asyncio.get_running_loop().create_task(probe())
    _probes.add(task)


class CronTick(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        record("cron", ctx.system)


async def cron_once(system: ActorSystem) -> None:
    """Every worker registers the same cron schedule (every 2 s); the cluster's claim lets
    one worker deliver each tick."""
    pid = await system.spawn(CronTick, "cron")
    await system.schedule_cron("tick", pid, "*/2 * * * * ?", reference="every-2s", replace=True)
    record("main", system)


def _role() -> str:
    """This process's role in ``tocsin run`` ("arbiter", "worker 2"), as its log says."""
    import logging

    record = logging.getLogRecordFactory()("role", logging.INFO, __file__, 0, "", (), None)
    return str(getattr(record, "tocsin_role", "?"))


async def members_at_main(system: ActorSystem) -> None:
    """Records how many live members the coordinator lists when main starts. Worker 2
    imports this module 3 s late (below), so a main started before every worker joined
    would see 1."""
    from pathlib import Path

    from tocsin.cluster._url import open_coordinator

    coordinator_file = Path(os.environ["RUN_TEST_LOG"]).parent / "run" / "coordinator.db"
    coordinator = open_coordinator(f"sqlite:///{coordinator_file}")
    await coordinator.open()
    try:
        _, leases = await coordinator.leases()
    finally:
        await coordinator.close()
    record(f"main-members:{sum(1 for row in leases if row.alive)}", system)


if os.environ.get("RUN_TEST_SLOW_WORKER") and _role() == os.environ["RUN_TEST_SLOW_WORKER"]:
    time.sleep(3.0)  # a worker that is slow to import its application
if os.environ.get("RUN_TEST_BROKEN_WORKER") and _role() == os.environ["RUN_TEST_BROKEN_WORKER"]:
    raise RuntimeError("this worker fails to import the application on purpose")


#: Durable identities ``spread`` activates (half from each worker's ``main``).
SPREAD_IDENTITIES = 200


class Spread(DurableActor):
    """Records which worker activated it."""

    kind = "run-test-spread"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        record(f"owner:{self.identity}", ctx.system)

    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.system.name)


async def spread(system: ActorSystem) -> None:
    """Worker n activates the identities i with i % 2 == n - 1 (no two workers activate
    one identity at once), straight away: no wait for the other members in here."""
    number = int(system.name.rsplit("-", 1)[1])
    for i in range(number - 1, SPREAD_IDENTITIES, 2):
        pid = await system.durable(Spread, f"s-{i}")
        await pid.ask("where", timeout=30)
    record("main", system)
