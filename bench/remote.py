# SPDX-License-Identifier: Apache-2.0
"""Remoting: tell throughput and ask round trip between two processes on loopback.

Side by side in one run, each configuration in a fresh driver process that starts its own
peer process (``--peer``) and talks to it over TCP on 127.0.0.1:

* **floor**: bare asyncio streams, 4-byte length-prefixed msgspec frames, no actors, no
  authentication: the least any Python remoting on asyncio can cost.
* **transport**: tocsin's remote transport alone (``RemoteNode``: handshake, envelopes,
  the wire codec, corked writes), no actor system on either side.
* **tocsin**: the whole path: ``pid.tell`` / ``pid.ask`` on a remote PID of an
  ``ActorSystem(remoting=...)``; the peer's actor counts or echoes.
* **ray**: Ray actor calls, when Ray is installed (it is not a dependency; the row says
  ``skipped`` otherwise).

Tell: N messages (a small msgspec Struct) sent as fast as the sender may (yielding to the
loop every 1,000), timed until the peer reports it has received all N. Ask: sequential
round trips after a warm-up, p50/p99 of the per-ask ``perf_counter`` time.

Ticks (issue 22): N schedule ticks (one ``RuntimeItem`` delivered to the remote PID's
target, as the scheduler does, without its timer) carry their ``Tick`` in a ``Scheduled``
frame; ``tick-tracked`` ones also wait for each tick's completion frame from the peer.

Targets (issue 11): tocsin tell >= 50% of the floor's rate; ask p50 within 2x the floor's.
With the authenticated channel (MACed records): tell >= 0.8x the tree before it.
Issue 32: tell >= 0.8x the floor with that authentication in place (read it from the
measured ratio and from the ratio at a core each, below, side by side).

Stability (the floor swung between ~237k and ~390k tells/s with where its two processes
landed on a 2-core machine): with ``--pin`` (the default where there are two cores or
more) the driver and its peer are pinned to two different cores
(``os.sched_setaffinity``), and the placement alternates with the repetition (driver on
core 0 and peer on core 1, then the other way round), so the medians cover both.
``--before PATH`` adds the ``transport`` and ``tocsin`` rows of another checkout (its
``src/`` imported in both processes), interleaved with this tree's in every repetition.
Every row also gives both processes' CPU per message (the driver's ``process_time``, the
peer's event-loop thread from ``/proc/<pid>/schedstat``), how long each waited for a core
while it could run (the load's footprint on that very run), the load average around each
run, and the rate the pair would reach with a core each (``1 / max(driver CPU, peer
CPU)`` per message): on a shared machine the measured rates swing with the other
processes, the CPU per message much less. The ratios are also given per placement.

Reproduce::

    mkdir -p /tmp/before && git archive 06d3e7e src | tar -x -C /tmp/before
    .venv/bin/python bench/remote.py --before /tmp/before --repeats 6 --only-tells-asks

(``--quick`` for a smoke run.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import msgspec
from _common import Config, Runs, fmt, median_row, percentile, ratio, run_main, table

perf_counter = time.perf_counter
process_time = time.process_time
SECRET = b"bench-secret-0123456789"
SYSTEMS = ("floor", "transport", "tocsin", "ray")


class Msg(msgspec.Struct, tag=True):
    n: int
    text: str


# -- peer process ---------------------------------------------------------------------------


def peer_main(spec: dict[str, Any]) -> None:
    """Run the receiving side; print its address on stdout, serve until stdin closes."""
    _place(spec)
    asyncio.run(_PEERS[spec["system"]](spec))


def _place(spec: dict[str, Any]) -> None:
    """Pin this process to ``spec["cpu"]`` and import tocsin from ``spec["tree"]``."""
    if spec.get("cpu") is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {spec["cpu"]})
    if spec.get("tree"):
        sys.path.insert(0, os.path.join(spec["tree"], "src"))


async def _until_stdin_closes() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


def _announce(address: str) -> None:
    print(address, flush=True)


async def floor_peer(spec: dict[str, Any]) -> None:
    decoder = msgspec.msgpack.Decoder(Msg)
    encoder = msgspec.msgpack.Encoder()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        count = 0
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                msg = decoder.decode(await reader.readexactly(size))
                if msg.text == "tell":
                    count += 1
                    if count == msg.n:
                        reply = encoder.encode(Msg(count, "done"))
                        writer.write(len(reply).to_bytes(4, "big") + reply)
                        count = 0
                else:
                    body = encoder.encode(msg)
                    writer.write(len(body).to_bytes(4, "big") + body)
        except asyncio.IncompleteReadError:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    _announce(str(server.sockets[0].getsockname()[1]))
    await _until_stdin_closes()
    server.close()


async def transport_peer(spec: dict[str, Any]) -> None:
    from tocsin.remote._address import parse_system_address, split_pid_string
    from tocsin.remote._config import Remoting
    from tocsin.remote._messages import WireCodec
    from tocsin.remote._node import RemoteNode

    class Host:
        def __init__(self) -> None:
            self.count = 0
            self.node: RemoteNode | None = None

        def deliver_tell(self, path: str, inc: str, sender: str, message: Any) -> None:
            self.count += 1
            if self.count == message.n:
                self.count = 0
                assert self.node is not None
                address, _ = split_pid_string(sender)
                node = parse_system_address(address)[1]
                self.node.tell(
                    node, "/done", "", "", self.node.encode_message(Msg(0, "done")), None
                )

        def deliver_ask(self, path: str, inc: str, sender: str, message: Any, reply: Any) -> None:
            reply.respond(message)

        def resolve(self, path: str) -> str:
            return ""

        def undelivered(self, info: object, why: str) -> None:
            raise AssertionError("undelivered")

        def undelivered_frame(self, *args: Any) -> None:
            raise AssertionError("undelivered")

    config = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Msg])
    host = Host()
    node = RemoteNode(config, "peer", host, WireCodec(config.registry, type(None), str))
    host.node = node
    _announce(await node.start())
    await _until_stdin_closes()
    await node.stop()


async def tocsin_peer(spec: dict[str, Any]) -> None:
    from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

    class Counter(Actor):
        """Counts tells; after ``msg.n`` of them tells the sender ``Msg(n, "done")``."""

        def __init__(self) -> None:
            self.count = 0

        async def receive(self, ctx: ReceiveContext) -> None:
            self.count += 1
            if self.count == ctx.message.n:
                self.count = 0
                ctx.sender.tell(Msg(ctx.message.n, "done"))

    class Echo(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond(ctx.message)

    remoting = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Msg])
    async with ActorSystem("peer", remoting=remoting) as system:
        await system.spawn(Counter, "counter")
        await system.spawn(Echo, "echo")
        _announce(system.address)
        await _until_stdin_closes()


_PEERS: dict[str, Any] = {"floor": floor_peer, "transport": transport_peer, "tocsin": tocsin_peer}


def start_peer(
    system: str, cpu: int | None = None, tree: str = ""
) -> tuple[subprocess.Popen[str], str]:
    spec = {"system": system, "cpu": cpu, "tree": tree}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--peer", json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    address = proc.stdout.readline().strip()
    if not address:
        raise RuntimeError(f"{system} peer did not start")
    return proc, address


def stop_peer(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


# -- drivers ----------------------------------------------------------------------------------


#: The peer process of the configuration being measured (its CPU is read from /proc).
_peer_pid: int | None = None


def _schedstat(task: str) -> tuple[float, float] | None:
    """``(seconds on a CPU, seconds waiting for one)`` of a thread, from Linux's
    ``/proc/<task>/schedstat`` (nanoseconds); ``None`` where there is none."""
    try:
        with open(f"/proc/{task}/schedstat") as f:
            on_cpu, waited = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    return int(on_cpu) / 1e9, int(waited) / 1e9


class Meter:
    """CPU of both processes over one measurement: the driver's (``process_time``) and
    its peer's event-loop thread (``schedstat``), per message, and how long each waited
    for a core while runnable (as a share of the wall time: the load's footprint on
    this very run, where the 1-minute load average only hints at it). CPU per message is
    what the load moves least; the rate is what it moves most."""

    __slots__ = ("cpu", "driver", "peer", "wall")

    def __init__(self) -> None:
        self.wall = perf_counter()
        self.cpu = process_time()
        self.driver = _schedstat("thread-self")
        self.peer = _schedstat(str(_peer_pid)) if _peer_pid is not None else None

    def stats(self, n: int) -> dict[str, float]:
        wall = perf_counter() - self.wall
        out = {"driver_cpu_us": (process_time() - self.cpu) / n * 1e6}
        driver = _schedstat("thread-self")
        if driver is not None and self.driver is not None:
            out["driver_wait_pct"] = (driver[1] - self.driver[1]) / wall * 100
        peer = _schedstat(str(_peer_pid)) if _peer_pid is not None else None
        if peer is not None and self.peer is not None:
            out["peer_cpu_us"] = (peer[0] - self.peer[0]) / n * 1e6
            out["peer_wait_pct"] = (peer[1] - self.peer[1]) / wall * 100
            out["cpu_us"] = out["driver_cpu_us"] + out["peer_cpu_us"]
            # The rate the pair would reach with a core each and nothing else on them:
            # the busier process sets the pace. Derived from CPU, so the load moves it
            # far less than the measured rate (it still moves it: a loaded core's caches
            # are colder).
            out["core_msgs_per_s"] = 1e6 / max(out["driver_cpu_us"], out["peer_cpu_us"])
        return out


def _cpu(meter: Meter, n: int) -> dict[str, float]:
    """Both processes' CPU per message over ``meter``'s span (:class:`Meter`)."""
    return meter.stats(n)


def _ask_stats(samples: list[float], cpu0: Meter) -> dict[str, Any]:
    n = len(samples)
    cpu = _cpu(cpu0, n)
    samples.sort()
    return {
        **cpu,
        "n": len(samples),
        "ask_p10_us": percentile(samples, 0.10) * 1e6,
        "ask_p50_us": percentile(samples, 0.50) * 1e6,
        "ask_p90_us": percentile(samples, 0.90) * 1e6,
        "ask_p99_us": percentile(samples, 0.99) * 1e6,
        "asks_per_s": len(samples) / sum(samples),
    }


async def floor_driver(params: dict[str, Any], port: str) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", int(port))
    encoder = msgspec.msgpack.Encoder()
    decoder = msgspec.msgpack.Decoder(Msg)

    async def read() -> Msg:
        size = int.from_bytes(await reader.readexactly(4), "big")
        return decoder.decode(await reader.readexactly(size))

    if params["test"] == "tell":
        n = params["n"]
        started, cpu0 = perf_counter(), Meter()
        for i in range(n):
            body = encoder.encode(Msg(n, "tell"))
            writer.write(len(body).to_bytes(4, "big") + body)
            if i % 1000 == 999:
                await writer.drain()
        await writer.drain()
        done = await read()
        seconds = perf_counter() - started
        assert done.n == n
        writer.close()
        return {"n": n, "seconds": seconds, "msgs_per_s": n / seconds, **_cpu(cpu0, n)}
    samples: list[float] = []
    cpu0 = Meter()
    for i in range(params["warmup"] + params["n"]):
        started = perf_counter()
        body = encoder.encode(Msg(i, "ask"))
        writer.write(len(body).to_bytes(4, "big") + body)
        await read()
        if i >= params["warmup"]:
            samples.append(perf_counter() - started)
    writer.close()
    return _ask_stats(samples, cpu0)


async def transport_driver(params: dict[str, Any], address: str) -> dict[str, Any]:
    from tocsin.remote._address import parse_system_address
    from tocsin.remote._config import Remoting
    from tocsin.remote._messages import WireCodec
    from tocsin.remote._node import RemoteNode

    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    class Host:
        def deliver_tell(self, *args: Any) -> None:
            done.set_result(None)

        def deliver_ask(self, *args: Any) -> None:
            raise AssertionError

        def resolve(self, path: str) -> str:
            return ""

        def undelivered(self, info: object, why: str) -> None:
            raise AssertionError("undelivered")

        def undelivered_frame(self, *args: Any) -> None:
            raise AssertionError("undelivered")

    config = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Msg])
    node = RemoteNode(config, "driver", Host(), WireCodec(config.registry, type(None), str))
    me = await node.start()
    peer = parse_system_address(address)[1]
    sender = me + "/user/driver"
    try:
        if params["test"] == "tell":
            n = params["n"]
            started, cpu0 = perf_counter(), Meter()
            for i in range(n):
                if not node.tell(
                    peer, "/user/counter", "", sender, node.encode_message(Msg(n, "tell")), None
                ):
                    raise AssertionError("refused")
                if i % 1000 == 999:
                    await asyncio.sleep(0)
            await done
            seconds = perf_counter() - started
            return {"n": n, "seconds": seconds, "msgs_per_s": n / seconds, **_cpu(cpu0, n)}
        samples: list[float] = []
        cpu0 = Meter()
        for i in range(params["warmup"] + params["n"]):
            started = perf_counter()
            await node.ask(peer, "/user/echo", "", "", node.encode_message(Msg(i, "ask")))
            if i >= params["warmup"]:
                samples.append(perf_counter() - started)
        return _ask_stats(samples, cpu0)
    finally:
        await node.stop()


def ray_child(params: dict[str, Any]) -> dict[str, Any]:
    """Ray actor calls: a Ray actor runs in its own worker process (Ray starts it)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:

        @ray.remote
        class Counter:
            def __init__(self) -> None:
                self.count = 0

            # Ray pickles arguments; a msgspec tagged Struct does not unpickle in the
            # worker, so Ray gets the same fields as a tuple.
            def tell(self, msg: tuple[int, str]) -> None:
                self.count += 1

            def total(self) -> int:
                return self.count

            def echo(self, msg: tuple[int, str]) -> tuple[int, str]:
                return msg

        actor = Counter.remote()  # type: ignore[attr-defined]
        ray.get(actor.total.remote())  # the worker is up
        if params["test"] == "tell":
            n = params["n"]
            started, cpu0 = perf_counter(), Meter()
            for _ in range(n):
                actor.tell.remote((n, "tell"))  # fire and forget (an ObjectRef is dropped)
            assert ray.get(actor.total.remote()) == n  # actor calls run in order
            seconds = perf_counter() - started
            return {"n": n, "seconds": seconds, "msgs_per_s": n / seconds, **_cpu(cpu0, n)}
        samples: list[float] = []
        cpu0 = Meter()
        for i in range(params["warmup"] + params["n"]):
            started = perf_counter()
            ray.get(actor.echo.remote((i, "ask")))
            if i >= params["warmup"]:
                samples.append(perf_counter() - started)
        return _ask_stats(samples, cpu0)
    finally:
        ray.shutdown()


async def tocsin_driver(params: dict[str, Any], address: str) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem, ReceiveContext, Remoting

    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    class Done(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            done.set_result(None)

    remoting = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Msg])
    async with ActorSystem("driver", remoting=remoting) as system:
        me = await system.spawn(Done, "done")
        if params["test"] == "tell":
            counter = await system.actor_of(address + "/user/counter")
            n = params["n"]
            tell = counter.tell
            started, cpu0 = perf_counter(), Meter()
            for i in range(n):
                tell(Msg(n, "tell"), me)
                if i % 1000 == 999:
                    await asyncio.sleep(0)
            await done
            seconds = perf_counter() - started
            return {"n": n, "seconds": seconds, "msgs_per_s": n / seconds, **_cpu(cpu0, n)}
        if params["test"] == "tick":
            counter = await system.actor_of(address + "/user/counter")
            return await _ticks(counter, me, done, params["n"], tracked=params["tracked"])
        echo = await system.actor_of(address + "/user/echo")
        samples: list[float] = []
        cpu0 = Meter()
        for i in range(params["warmup"] + params["n"]):
            started = perf_counter()
            await echo.ask(Msg(i, "ask"))
            if i >= params["warmup"]:
                samples.append(perf_counter() - started)
        return _ask_stats(samples, cpu0)


async def _ticks(
    counter: Any, me: Any, done: asyncio.Future[None], n: int, *, tracked: bool
) -> dict[str, Any]:
    """N schedule ticks to a remote actor, as the scheduler sends them (one RuntimeItem
    per schedule, delivered to the PID's target), without the timer: what the tick frame
    and, when tracked, its completion frame cost over a plain tell."""
    from datetime import UTC, datetime

    from tocsin.actor._spi import RuntimeItem, Tick, target_of

    class BenchTick(RuntimeItem):
        __slots__ = ("finishes", "message", "tracked", "value")

        def __init__(self) -> None:
            self.message = Msg(n, "tell")
            self.value = Tick("bench", datetime(2026, 12, 2, tzinfo=UTC))
            self.tracked = tracked
            self.finishes = 0

        def open(self) -> Any:
            return self.message

        def rejected(self) -> Any:
            return self.message

        def tick(self) -> Tick:
            return self.value

        def finished(self) -> None:
            self.finishes += 1

    item = BenchTick()
    deliver = target_of(counter).deliver
    started, cpu0 = perf_counter(), Meter()
    for i in range(n):
        if not deliver(item, me, None):
            raise AssertionError("refused")
        if i % 1000 == 999:
            await asyncio.sleep(0)
    await done
    if tracked:
        while item.finishes < n:
            await asyncio.sleep(0.001)
    seconds = perf_counter() - started
    return {"n": n, "seconds": seconds, "msgs_per_s": n / seconds, **_cpu(cpu0, n)}


_DRIVERS: dict[str, Any] = {
    "floor": floor_driver,
    "transport": transport_driver,
    "tocsin": tocsin_driver,
}


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params["system"] == "ray":
        return ray_child(params)
    driver_cpu = peer_cpu = None
    if params.get("pin"):
        # Alternate the placement with the repetition: both placements in the medians.
        driver_cpu, peer_cpu = (0, 1) if params.get("rep", 0) % 2 == 0 else (1, 0)
    _place({"cpu": driver_cpu, "tree": params.get("tree", "")})
    global _peer_pid
    load = os.getloadavg()[0]
    proc, address = start_peer(params["system"], peer_cpu, params.get("tree", ""))
    _peer_pid = proc.pid
    try:
        result = asyncio.run(_DRIVERS[params["system"]](params, address))
    finally:
        stop_peer(proc)
        _peer_pid = None
    result["placement"] = f"driver cpu {driver_cpu}, peer cpu {peer_cpu}"
    result["load_start"], result["load_end"] = load, os.getloadavg()[0]
    tocsin = sys.modules.get("tocsin")
    if tocsin is not None:  # which tree was measured
        result["tocsin_from"] = os.path.dirname(os.path.dirname(tocsin.__file__ or ""))
    return result


# -- parent -----------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tell-n", type=int, default=200_000)
    parser.add_argument("--ask-n", type=int, default=5_000)
    parser.add_argument(
        "--tick-n", type=int, default=50_000, help="schedule ticks (plain and tracked)"
    )
    parser.add_argument(
        "--ray-n", type=int, default=20_000, help="tells for Ray (about 100x slower per call)"
    )
    parser.add_argument("--peer", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=len(os.sched_getaffinity(0)) >= 2 if hasattr(os, "sched_getaffinity") else False,
        help="pin driver and peer to two cores, alternating placement per repetition",
    )
    parser.add_argument(
        "--before",
        default="",
        help="another checkout (e.g. of 06d3e7e): its transport and tocsin rows side by side",
    )
    parser.add_argument(
        "--only-tells-asks",
        action="store_true",
        help="tell and ask rows only (no ticks, no Ray): the authenticated channel's cost",
    )


def configs(args: argparse.Namespace) -> list[Config]:
    if args.quick:
        args.tell_n, args.ask_n, args.ray_n, args.tick_n = 2_000, 200, 200, 2_000
    out = []
    trees = [("", "")]
    if args.before:
        trees.append(("@before", os.path.abspath(args.before)))
    for system in SYSTEMS:
        if system not in _DRIVERS and system != "ray":
            continue
        if system == "ray" and args.only_tells_asks:
            continue
        requires = "ray" if system == "ray" else None
        for suffix, tree in trees if system in ("transport", "tocsin") else trees[:1]:
            common = {"system": system, "pin": args.pin, "tree": tree}
            out.append(
                Config(
                    f"tell/{system}{suffix}",
                    {
                        **common,
                        "test": "tell",
                        "n": min(args.tell_n, args.ray_n) if system == "ray" else args.tell_n,
                    },
                    requires=requires,
                )
            )
            out.append(
                Config(
                    f"ask/{system}{suffix}",
                    {
                        **common,
                        "test": "ask",
                        "n": min(args.ask_n, args.ray_n) if system == "ray" else args.ask_n,
                        "warmup": args.ask_n // 10,
                    },
                    requires=requires,
                )
            )
    if "tocsin" in _DRIVERS and not args.only_tells_asks:
        # Schedule ticks to a remote actor (issue 22): the Tick travels; tracked ones
        # (an overlap policy that counts ticks in flight) also get a completion frame.
        for tracked in (False, True):
            out.append(
                Config(
                    f"tick{'-tracked' if tracked else ''}/tocsin",
                    {
                        "system": "tocsin",
                        "test": "tick",
                        "n": args.tick_n,
                        "tracked": tracked,
                        "pin": args.pin,
                    },
                )
            )
    return out


def _spread(row: dict[str, Any], key: str) -> str:
    spread = row.get(f"{key}_spread")
    if not spread:
        return "-"
    return f"{fmt(spread[0], 0)}-{fmt(spread[1], 0)}"


def _cell(row: dict[str, Any], key: str, digits: int) -> str:
    if row.get("skipped"):
        return str(row["skipped"])
    return fmt(row.get(key), digits)


def _placement(runs: Runs, placement: int) -> Runs:
    """The repetitions of one placement (driver on core 0 in even ones, core 1 in odd)."""
    return {name: rs[placement::2] for name, rs in runs.items()}


def report(args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    med = {name: median_row(rs) for name, rs in runs.items()}
    rows = []
    names = [
        name
        for system in SYSTEMS
        for name in (system, f"{system}@before")
        if f"tell/{name}" in med or f"ask/{name}" in med or name == system
    ]
    for name in names:
        tell = med.get(f"tell/{name}", {"skipped": "not built"})
        ask = med.get(f"ask/{name}", {"skipped": "not built"})
        rows.append(
            [
                name,
                _cell(tell, "n", 0),
                _cell(tell, "msgs_per_s", 0),
                _spread(tell, "msgs_per_s"),
                _cell(tell, "driver_cpu_us", 2),
                _cell(tell, "peer_cpu_us", 2),
                _cell(tell, "peer_wait_pct", 0),
                _cell(tell, "core_msgs_per_s", 0),
                _cell(ask, "ask_p50_us", 1),
                _cell(ask, "ask_p99_us", 1),
                _cell(ask, "driver_cpu_us", 1),
                _cell(ask, "peer_cpu_us", 1),
            ]
        )
    pinned = "pinned to two cores, both placements" if args.pin else "not pinned"
    loads = [
        r[key]
        for rs in runs.values()
        for r in rs
        if r and "load_start" in r
        for key in ("load_start", "load_end")
    ]
    load = f"load average {min(loads):.1f}-{max(loads):.1f}" if loads else "load not read"
    print(f"\n### Two processes on loopback (median; {pinned}; {load})\n")
    print(
        table(
            [
                "system",
                "tells",
                "tell msgs/s",
                "tell min-max",
                "tell CPU µs: driver",
                "peer",
                "peer waited %",
                "tells/s at a core each",
                "ask p50 µs",
                "ask p99 µs",
                "ask CPU µs: driver",
                "peer",
            ],
            rows,
        )
    )
    ratios: dict[str, float] = {}
    for system in ("transport", "tocsin"):
        if f"tell/{system}@before" in runs:
            ratios[f"tell_{system}_over_before"] = ratio(
                runs, f"tell/{system}", f"tell/{system}@before", "msgs_per_s"
            )
            ratios[f"ask_p50_{system}_over_before"] = ratio(
                runs, f"ask/{system}", f"ask/{system}@before", "ask_p50_us"
            )
            ratios[f"tell_{system}@before_over_floor"] = ratio(
                runs, f"tell/{system}@before", "tell/floor", "msgs_per_s"
            )
            for test in ("tell", "ask"):
                ratios[f"{test}_cpu_{system}_over_before"] = ratio(
                    runs, f"{test}/{system}", f"{test}/{system}@before", "driver_cpu_us"
                )
    for system in ("transport", "tocsin", "ray"):
        if f"tell/{system}" in runs:
            ratios[f"tell_{system}_over_floor"] = ratio(
                runs, f"tell/{system}", "tell/floor", "msgs_per_s"
            )
            if system != "ray":
                ratios[f"tell_core_rate_{system}_over_floor"] = ratio(
                    runs, f"tell/{system}", "tell/floor", "core_msgs_per_s"
                )
                ratios[f"tell_cpu_{system}_over_floor"] = ratio(
                    runs, f"tell/{system}", "tell/floor", "cpu_us"
                )
                ratios[f"tell_peer_cpu_{system}_over_floor"] = ratio(
                    runs, f"tell/{system}", "tell/floor", "peer_cpu_us"
                )
            if args.pin and system != "ray":
                # Each placement on its own: a ratio that differs between them says the
                # two cores are not alike (or were not alike loaded) in this run.
                for placement in (0, 1):
                    ratios[f"tell_{system}_over_floor_placement_{placement}"] = ratio(
                        _placement(runs, placement),
                        f"tell/{system}",
                        "tell/floor",
                        "msgs_per_s",
                    )
            ratios[f"ask_p50_{system}_over_floor"] = ratio(
                runs, f"ask/{system}", "ask/floor", "ask_p50_us"
            )
    ticks = [
        [name, _cell(med.get(f"{name}/tocsin", {"skipped": "not built"}), "msgs_per_s", 0)]
        for name in ("tick", "tick-tracked")
    ]
    print("\n### Schedule ticks to a remote actor, tocsin (median)\n")
    print(table(["ticks", "ticks/s"], ticks))
    for name in ("tick", "tick-tracked"):
        if f"{name}/tocsin" in runs and "tell/tocsin" in runs:
            key = f"{name.replace('-', '_')}_over_tell"
            ratios[key] = ratio(runs, f"{name}/tocsin", "tell/tocsin", "msgs_per_s")
    print()
    print(table(["ratio (per-repetition median)", "value"], sorted(ratios.items())))
    return {"ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--peer" in args:
        peer_main(json.loads(args[args.index("--peer") + 1]))
        return 0
    return run_main(
        argv,
        description=__doc__ or "",
        script=__file__,
        add_arguments=add_arguments,
        child=child,
        configs=configs,
        report=report,
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
