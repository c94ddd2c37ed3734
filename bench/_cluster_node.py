# SPDX-License-Identifier: Apache-2.0
"""The durable half of ``bench/cluster.py``: the actor both nodes use, the system builder,
the two measurements (:func:`durable_latency`, :func:`failover`, run in a bench child),
and the other node process they start (a remote owner, or an owner to SIGKILL).

``python bench/_cluster_node.py serve COORDINATOR STORE NAME LEASE``: join, print
``{"ready": address}`` and serve until killed (the remote owner of the latency test).

``python bench/_cluster_node.py own COORDINATOR STORE NAME LEASE``: start alone, activate
``Account("m")`` (asked by the failover test) and ``Account("t")`` with a task every
0.1 s, print ``{"ready": address}`` and serve until SIGKILLed (the failover test).

``python bench/_cluster_node.py stored COORDINATOR STORE NAME LEASE``: start on a store
already holding stored schedules (``bench/schedules.py --only cluster/``), print
``{"ready": name, "start_s": ..., "rss": ...}``, read ``START END`` (epoch seconds) on
stdin, run until the next line (the parent sends it once the window's instants are
decided), then print the runs of the stored schedules' job whose instants lie in
``[START, END)`` with their start lateness, the node's RSS and CPU.

STORE is ``sqlite:///path`` or ``postgresql://...#SCHEMA``.
"""

from __future__ import annotations

import asyncio
import json
import random
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from _common import percentile

from tocsin import ActorSystem, Cluster, ReceiveContext, Remoting
from tocsin.durable import Call, DurableActor
from tocsin.stores import Store

SECRET = b"bench-cluster-secret-0123456789!"
#: Called with the node's name each time ``Account.beat`` runs (the failover test's probe).
on_beat: Callable[[str], None] | None = None


class Account(DurableActor):
    """One balance: ``deposit`` reads and writes it (a fenced write in cluster mode)."""

    kind = "bench.Account"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        self.node = ctx.system.name

    async def deposit(self, amount: int) -> int:
        balance = int(await self.storage.get("balance", 0)) + amount
        await self.storage.put("balance", balance)
        return balance

    async def where(self, payload: Any) -> str:
        return self.node

    async def start_beat(self, payload: Any) -> None:
        await self.every(0.1, "beat", id="beat")

    async def beat(self, payload: Any) -> None:
        await self.storage.put("beat", self.now().timestamp())
        if on_beat is not None:
            on_beat(self.node)


def open_store(spec: str) -> str | Store:
    """``sqlite:///path`` as is; ``postgresql://...#SCHEMA`` as a PostgresStore."""
    if not spec.startswith("postgresql://"):
        return spec
    from tocsin.stores.postgres import PostgresStore

    dsn, _, schema = spec.partition("#")
    return PostgresStore(dsn, schema=schema)


def node(name: str, coordinator: str | None, store: str, lease: float) -> ActorSystem:
    """A system with remoting on loopback; in cluster mode when ``coordinator`` is given."""
    if coordinator is None:
        return ActorSystem(name, store=open_store(store))
    return ActorSystem(
        name,
        store=open_store(store),
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET),
        cluster=Cluster(coordinator, lease=lease),
    )


# -- the bench's two durable questions (run in a bench child process) ------------------


def _specs(backend: str, url: str, tmp: str) -> tuple[str, str]:
    """(coordinator URL, durable store spec) of a fresh cluster on ``backend``. The store
    is PostgreSQL next to a PostgreSQL coordinator, else a SQLite file (fencing runs in
    the SQLite and PostgreSQL stores; Redis is a coordinator only)."""
    tag = uuid.uuid4().hex[:8]
    store = f"sqlite:///{tmp}/store.db"
    if backend == "sqlite":
        return f"sqlite:///{tmp}/coordinator.db", store
    if backend == "redis":
        return f"{url}?prefix=f{tag}:", store
    return f"{url}?schema=c_{tag}", f"{url}#s_{tag}"


def _spawn_node(mode: str, coordinator: str, store: str, name: str, lease: float) -> Any:
    """Start ``bench/_cluster_node.py`` as another node process; wait for its ready line."""
    script = Path(__file__).with_name("_cluster_node.py")
    proc = subprocess.Popen(
        [sys.executable, str(script), mode, coordinator, store, name, str(lease)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], 60.0)[0]:
        proc.kill()
        raise RuntimeError(f"node {name} printed nothing within 60 s")
    line = proc.stdout.readline()
    if '"ready"' not in line:
        proc.kill()
        raise RuntimeError(f"node {name} did not start: {line!r}")
    return proc


async def _members(system: Any, count: int) -> None:
    """Wait (bounded) until ``system`` sees ``count`` live members."""
    for _ in range(600):
        if len(system.cluster.members()) >= count:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{system.name} saw {system.cluster.members()} after 30 s")


async def durable_latency(
    backend: str, url: str, tmp: str, n: int, clustered: bool
) -> dict[str, Any]:
    """Asks to a durable actor: owned here vs owned by another node process (remoting).
    ``ask`` with the PID held, and ``durable()`` + ``ask`` (resolving it each time)."""
    from tocsin.cluster._placement import rendezvous_owner
    from tocsin.durable import Call

    coordinator, store = _specs(backend, url, tmp)
    remote = _spawn_node("serve", coordinator, store, "remote", 10.0) if clustered else None
    system = node("local", coordinator if clustered else None, store, 10.0)
    owners = {"local": "local", "remote": "remote"} if clustered else {"local": "local"}
    ids = {
        where: next(
            f"acct-{i}"
            for i in range(1000)
            if not clustered or rendezvous_owner(Account.kind, f"acct-{i}", list(owners)) == where
        )
        for where in owners
    }
    samples: dict[str, list[float]] = {}
    clock = time.perf_counter
    try:
        async with system:
            if clustered:
                await _members(system, 2)
            pids = {where: await system.durable(Account, ids[where]) for where in owners}
            for where, pid in pids.items():
                assert await pid.ask(Call("where"), timeout=10.0) == where
                for _ in range(min(n, 50)):  # warm up (connections, statement caches)
                    await pid.ask(Call("deposit", 1), timeout=10.0)
            for _ in range(n):
                for where, pid in pids.items():  # interleaved: noise falls on both alike
                    t0 = clock()
                    await pid.ask(Call("deposit", 1), timeout=10.0)
                    samples.setdefault(f"{where}_ask", []).append(clock() - t0)
            for _ in range(n):
                for where in owners:
                    t0 = clock()
                    pid = await system.durable(Account, ids[where])
                    await pid.ask(Call("deposit", 1), timeout=10.0)
                    samples.setdefault(f"{where}_resolve_ask", []).append(clock() - t0)
    finally:
        if remote is not None:
            remote.kill()
            remote.wait()
    out: dict[str, Any] = {"asks": n}
    for key, values in samples.items():
        values.sort()
        out[f"{key}_p50_us"] = percentile(values, 0.50) * 1e6
        out[f"{key}_p99_us"] = percentile(values, 0.99) * 1e6
    return out


async def failover(backend: str, url: str, tmp: str, lease: float, probe: str) -> dict[str, Any]:
    """SIGKILL an owner process at a random phase of its renewals; seconds from the kill
    until (``probe="message"``) the identity it owned answers an ask from another node,
    or (``probe="task"``) another identity it owned runs its due task (every 0.1 s) on
    another node. One probe per run: an activation's own writes make the store look
    changed, which would start the other path's poll early."""

    from tocsin.durable import Call

    coordinator, store = _specs(backend, url, tmp)
    owner = _spawn_node("own", coordinator, store, "owner", lease)
    survivor = node("survivor", coordinator, store, lease)
    beats: list[float] = []
    global on_beat

    def record(name: str) -> None:
        beats.append(time.perf_counter())

    on_beat = record
    answered = None
    try:
        async with survivor:
            await _members(survivor, 2)
            await asyncio.sleep(random.uniform(0, lease / 3))  # a random phase of renewals
            owner.send_signal(signal.SIGKILL)
            killed = time.perf_counter()
            while probe == "message" and time.perf_counter() - killed < 3 * lease + 30:
                # What a client does: resolve and ask, retry on failure every 50 ms.
                try:
                    pid = await survivor.durable(Account, "m")
                    if await pid.ask(Call("where"), timeout=0.2) == "survivor":
                        answered = time.perf_counter()
                        break
                except Exception:  # the dead owner's address: refused or timed out
                    pass
                await asyncio.sleep(0.05)
            while probe == "task" and not beats and time.perf_counter() - killed < 3 * lease + 30:
                await asyncio.sleep(0.01)
            poll = survivor.cluster.config.poll_interval
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.wait()
    done = answered if probe == "message" else (beats[0] if beats else None)
    if done is None:
        raise RuntimeError(f"{probe}: no failover within {3 * lease + 30} s")
    return {"failover_s": done - killed, "lease_s": lease, "poll_s": poll}


async def _serve(mode: str, coordinator: str, store: str, name: str, lease: float) -> None:
    async with node(name, coordinator, store, lease) as system:
        if mode == "own":
            await (await system.durable(Account, "m")).ask(Call("where"), timeout=30.0)
            pid = await system.durable(Account, "t")
            await pid.ask(Call("start_beat"), timeout=30.0)
        print(json.dumps({"ready": system.cluster.members()[0].address}), flush=True)
        while True:
            await asyncio.sleep(3600)


#: The stored schedules' job of ``stored`` mode (``bench/schedules.py`` targets it).
STORED_JOB = "bench.cluster_node.record"


async def _stored(coordinator: str, store: str, name: str, lease: float) -> None:
    """``stored`` mode: time the start on a store of N stored schedules, then record the
    runs of their job over the window the parent gives."""
    import gc
    import resource

    from _common import rss_bytes

    from tocsin.jobs import job

    runs: list[tuple[str, float, float]] = []

    async def record(ctx: Any) -> None:
        tick = ctx.tick
        started = time.time()  # bench measurement, not runtime time
        runs.append((tick.reference, tick.instant.timestamp(), started))

    job(name=STORED_JOB)(record)
    gc.collect()
    rss0 = rss_bytes()
    system = node(name, coordinator, store, lease)
    t0 = time.perf_counter()
    await system.start()
    try:
        start_s = time.perf_counter() - t0
        gc.collect()
        ready = {
            "ready": name,
            "start_s": start_s,
            "rss": rss_bytes(),
            "rss_delta": rss_bytes() - rss0,
        }
        print(json.dumps(ready), flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        start, end = (float(x) for x in line.split())
        await asyncio.sleep(max(0.0, start - time.time()))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu0 = usage.ru_utime + usage.ru_stime
        # Runs on until the parent says the window's instants are decided (or it gave up).
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        window = [(ref, instant, round(at - instant, 4)) for ref, instant, at in runs
                  if start <= instant < end]  # fmt: skip
        out = {
            "runs": window,
            "rss": rss_bytes(),
            "cpu": usage.ru_utime + usage.ru_stime - cpu0,
        }
        print(json.dumps(out), flush=True)
    finally:
        await system.stop()


if __name__ == "__main__":
    mode, coordinator, store, name, lease = sys.argv[1:6]
    if mode == "stored":
        asyncio.run(_stored(coordinator, store, name, float(lease)))
    else:
        asyncio.run(_serve(mode, coordinator, store, name, float(lease)))
