# SPDX-License-Identifier: Apache-2.0
"""Actor runtime: tocsin vs Pykka (threads) vs a plain ``asyncio.Queue`` consumer task.

Questions, each configuration in a fresh process (see ``bench/_common.py``):

* **tell throughput**: N messages told from outside, timed until the receiving actor(s)
  processed all of them. One actor; and 1,000 actors each receiving N/1000 (sent
  round-robin). Pykka's actor threads process while the sender is still telling.
* **ask round trip**: sequential asks (p50/p99 of the per-ask ``perf_counter`` time).
  tocsin is asked with the default 5 s timeout and with ``timeout=None`` (no deadline in
  the heap), to show what the timeout costs.
* **spawn and idle memory**: spawn rate and RSS delta per idle actor for 100,000 actors;
  tracemalloc delta per actor in a separate untimed pass. Pykka starts one OS thread per
  actor, so it is measured at a smaller count (``--pykka-actors``, default 2,000).

Reproduce: ``.venv/bin/python bench/actor_runtime.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import threading
import time
import tracemalloc
from typing import Any

from _common import Config, Runs, fmt, median_row, ratio, rss_bytes, run_main, table

from tocsin import Actor, ActorSystem

perf_counter = time.perf_counter

SYSTEMS = ("tocsin", "asyncio.Queue", "pykka")


# -- tocsin ------------------------------------------------------------------------------


class _Countdown:
    """Shared by all receivers of one run: resolves ``done`` after ``left`` messages."""

    __slots__ = ("done", "left")

    def __init__(self, left: int, done: asyncio.Future[None]) -> None:
        self.left = left
        self.done = done


class _Counter(Actor):
    def __init__(self, countdown: _Countdown) -> None:
        self.countdown = countdown

    async def receive(self, ctx: Any) -> None:
        countdown = self.countdown
        countdown.left -= 1
        if countdown.left == 0:
            countdown.done.set_result(None)


class _Echo(Actor):
    async def receive(self, ctx: Any) -> None:
        ctx.respond(ctx.message)


class _Idle(Actor):
    async def receive(self, ctx: Any) -> None:
        pass


async def _tocsin_tell(n: int, actors: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    async with ActorSystem() as system:
        countdown = _Countdown(n, loop.create_future())
        pids = [await system.spawn(lambda: _Counter(countdown)) for _ in range(actors)]
        per_actor = n // actors
        msg = "m"
        gc.collect()
        started = perf_counter()
        if actors == 1:
            tell = pids[0].tell
            for _ in range(n):
                tell(msg)
        else:
            for _ in range(per_actor):
                for pid in pids:
                    pid.tell(msg)
        await countdown.done
        elapsed = perf_counter() - started
    return {"n": n, "actors": actors, "seconds": elapsed, "msgs_per_s": n / elapsed}


async def _tocsin_ask(n: int, warmup: int, timeout: float | None) -> dict[str, Any]:
    async with ActorSystem() as system:
        pid = await system.spawn(_Echo)
        for i in range(warmup):
            await pid.ask(i, timeout=timeout)
        samples = []
        gc.collect()
        started = perf_counter()
        for i in range(n):
            t0 = perf_counter()
            await pid.ask(i, timeout=timeout)
            samples.append(perf_counter() - t0)
        total = perf_counter() - started
    return _ask_result(n, samples, total)


async def _tocsin_spawn(n: int, traced: bool) -> dict[str, Any]:
    async with ActorSystem() as system:
        await system.spawn(_Idle)  # warm up caches and code paths
        pids: list[Any] = []
        pids_append = pids.append
        spawn = system.spawn
        gc.collect()
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        rss0 = rss_bytes()
        started = perf_counter()
        for _ in range(n):
            pids_append(await spawn(_Idle))
        elapsed = perf_counter() - started
        gc.collect()
        rss1 = rss_bytes()
        result: dict[str, Any] = {"n": n}
        if traced:
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            result["traced_B_per_actor"] = (after - before - sys.getsizeof(pids)) / n
        else:
            result["spawn_us"] = elapsed / n * 1e6
            result["spawns_per_s"] = n / elapsed
            result["rss_B_per_actor"] = (rss1 - rss0) / n
        stop_started = perf_counter()
    if not traced:
        result["stop_all_s"] = perf_counter() - stop_started
    return result


# -- plain asyncio.Queue consumer -------------------------------------------------------


async def _queue_consumer(queue: asyncio.Queue[Any], countdown: _Countdown) -> None:
    get = queue.get
    while True:
        await get()
        countdown.left -= 1
        if countdown.left == 0:
            countdown.done.set_result(None)


async def _queue_echo(queue: asyncio.Queue[Any]) -> None:
    get = queue.get
    while True:
        message, reply = await get()
        reply.set_result(message)


async def _queue_idle(queue: asyncio.Queue[Any]) -> None:
    while True:
        await queue.get()


async def _asyncio_tell(n: int, actors: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    countdown = _Countdown(n, loop.create_future())
    queues: list[asyncio.Queue[Any]] = [asyncio.Queue() for _ in range(actors)]
    tasks = [loop.create_task(_queue_consumer(q, countdown)) for q in queues]
    await asyncio.sleep(0)
    per_actor = n // actors
    msg = "m"
    gc.collect()
    started = perf_counter()
    if actors == 1:
        put = queues[0].put_nowait
        for _ in range(n):
            put(msg)
    else:
        puts = [q.put_nowait for q in queues]
        for _ in range(per_actor):
            for put in puts:
                put(msg)
    await countdown.done
    elapsed = perf_counter() - started
    for task in tasks:
        task.cancel()
    return {"n": n, "actors": actors, "seconds": elapsed, "msgs_per_s": n / elapsed}


async def _asyncio_ask(n: int, warmup: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    task = loop.create_task(_queue_echo(queue))
    for i in range(warmup):
        future = loop.create_future()
        queue.put_nowait((i, future))
        await future
    samples = []
    gc.collect()
    started = perf_counter()
    for i in range(n):
        t0 = perf_counter()
        future = loop.create_future()
        queue.put_nowait((i, future))
        await future
        samples.append(perf_counter() - t0)
    total = perf_counter() - started
    task.cancel()
    return _ask_result(n, samples, total)


async def _asyncio_spawn(n: int, traced: bool) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    tasks: list[Any] = []
    append = tasks.append
    create_task = loop.create_task
    Queue = asyncio.Queue
    gc.collect()
    if traced:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
    rss0 = rss_bytes()
    started = perf_counter()
    for _ in range(n):
        append(create_task(_queue_idle(Queue())))
    await asyncio.sleep(0)  # every consumer runs up to its first `await queue.get()`
    elapsed = perf_counter() - started
    gc.collect()
    rss1 = rss_bytes()
    result: dict[str, Any] = {"n": n}
    if traced:
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        result["traced_B_per_actor"] = (after - before - sys.getsizeof(tasks)) / n
    else:
        result["spawn_us"] = elapsed / n * 1e6
        result["spawns_per_s"] = n / elapsed
        result["rss_B_per_actor"] = (rss1 - rss0) / n
    for task in tasks:
        task.cancel()
    await asyncio.sleep(0)
    return result


# -- pykka (one thread per actor) --------------------------------------------------------


def _pykka_classes() -> tuple[type, type, type]:
    import pykka

    class Counter(pykka.ThreadingActor):
        def __init__(self, quota: int, latch: Any) -> None:
            super().__init__()
            self.quota = quota
            self.latch = latch
            self.count = 0

        def on_receive(self, message: Any) -> None:
            self.count += 1
            if self.count == self.quota:
                self.latch()

    class Echo(pykka.ThreadingActor):
        def on_receive(self, message: Any) -> Any:
            return message

    class Idle(pykka.ThreadingActor):
        def on_receive(self, message: Any) -> None:
            pass

    return Counter, Echo, Idle


def _pykka_tell(n: int, actors: int) -> dict[str, Any]:
    import pykka

    Counter, _, _ = _pykka_classes()
    lock = threading.Lock()
    all_done = threading.Event()
    remaining = [actors]

    def latch() -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0] == 0:
                all_done.set()

    per_actor = n // actors
    refs = [Counter.start(per_actor, latch) for _ in range(actors)]
    msg = "m"
    gc.collect()
    try:
        started = perf_counter()
        if actors == 1:
            tell = refs[0].tell
            for _ in range(n):
                tell(msg)
        else:
            tells = [ref.tell for ref in refs]
            for _ in range(per_actor):
                for tell in tells:
                    tell(msg)
        all_done.wait()
        elapsed = perf_counter() - started
    finally:
        pykka.ActorRegistry.stop_all()
    return {"n": n, "actors": actors, "seconds": elapsed, "msgs_per_s": n / elapsed}


def _pykka_ask(n: int, warmup: int) -> dict[str, Any]:
    import pykka

    _, Echo, _ = _pykka_classes()
    ref = Echo.start()
    try:
        for i in range(warmup):
            ref.ask(i)
        samples = []
        gc.collect()
        started = perf_counter()
        for i in range(n):
            t0 = perf_counter()
            ref.ask(i)
            samples.append(perf_counter() - t0)
        total = perf_counter() - started
    finally:
        pykka.ActorRegistry.stop_all()
    return _ask_result(n, samples, total)


def _pykka_spawn(n: int, traced: bool) -> dict[str, Any]:
    import pykka

    _, _, Idle = _pykka_classes()
    Idle.start().stop()  # warm up
    refs: list[Any] = []
    gc.collect()
    if traced:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
    rss0 = rss_bytes()
    started = perf_counter()
    try:
        for _ in range(n):
            refs.append(Idle.start())
        elapsed = perf_counter() - started
        gc.collect()
        time.sleep(0.2)  # let every thread reach its idle inbox.get()
        rss1 = rss_bytes()
        result: dict[str, Any] = {"n": n}
        if traced:
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            result["traced_B_per_actor"] = (after - before - sys.getsizeof(refs)) / n
        else:
            result["spawn_us"] = elapsed / n * 1e6
            result["spawns_per_s"] = n / elapsed
            result["rss_B_per_actor"] = (rss1 - rss0) / n
    finally:
        pykka.ActorRegistry.stop_all()
    return result


# -- shared ------------------------------------------------------------------------------


def _ask_result(n: int, samples: list[float], total: float) -> dict[str, Any]:
    samples.sort()
    return {
        "n": n,
        "ask_p50_us": samples[len(samples) // 2] * 1e6,
        "ask_p99_us": samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1e6,
        "asks_per_s": n / total,
    }


def child(params: dict[str, Any]) -> dict[str, Any]:
    system, test = params["system"], params["test"]
    if test == "tell":
        if system == "pykka":
            return _pykka_tell(params["n"], params["actors"])
        fn = _tocsin_tell if system == "tocsin" else _asyncio_tell
        return asyncio.run(fn(params["n"], params["actors"]))
    if test == "ask":
        if system == "pykka":
            return _pykka_ask(params["n"], params["warmup"])
        if system == "asyncio.Queue":
            return asyncio.run(_asyncio_ask(params["n"], params["warmup"]))
        return asyncio.run(_tocsin_ask(params["n"], params["warmup"], params["timeout"]))
    if test == "spawn":
        if system == "pykka":
            return _pykka_spawn(params["n"], params["traced"])
        fn = _tocsin_spawn if system == "tocsin" else _asyncio_spawn
        return asyncio.run(fn(params["n"], params["traced"]))
    raise ValueError(f"unknown test {test!r}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tell-n", type=int, default=1_000_000, help="messages (tocsin, asyncio)")
    parser.add_argument("--pykka-tell-n", type=int, default=200_000, help="messages (pykka)")
    parser.add_argument("--ask-n", type=int, default=20_000, help="sequential asks")
    parser.add_argument("--actors", type=int, default=100_000, help="idle actors to spawn")
    parser.add_argument("--pykka-actors", type=int, default=2_000, help="idle pykka actors")


def configs(args: argparse.Namespace) -> list[Config]:
    if args.quick:
        args.tell_n, args.pykka_tell_n, args.ask_n = 10_000, 2_000, 500
        args.actors, args.pykka_actors = 2_000, 50
    out: list[Config] = []
    for actors in (1, 1000):
        for system in SYSTEMS:
            n = args.pykka_tell_n if system == "pykka" else args.tell_n
            out.append(
                Config(
                    f"tell/{actors}/{system}",
                    {"system": system, "test": "tell", "n": n, "actors": actors},
                    requires="pykka" if system == "pykka" else None,
                )
            )
    for system, timeout in (("tocsin", 5.0), ("tocsin", None), ("asyncio.Queue", 0), ("pykka", 0)):
        n = args.ask_n if system != "pykka" else max(1, args.ask_n // 4)
        label = system if system != "tocsin" else f"tocsin (timeout={timeout})"
        out.append(
            Config(
                f"ask/{label}",
                {"system": system, "test": "ask", "n": n, "warmup": n // 20, "timeout": timeout},
                requires="pykka" if system == "pykka" else None,
            )
        )
    for system in SYSTEMS:
        n = args.pykka_actors if system == "pykka" else args.actors
        for traced in (False, True):
            out.append(
                Config(
                    f"spawn{'/traced' if traced else ''}/{system}",
                    {"system": system, "test": "spawn", "n": n, "traced": traced},
                    once=traced,  # tracemalloc deltas are deterministic: one untimed pass
                    requires="pykka" if system == "pykka" else None,
                )
            )
    return out


def _cell(row: dict[str, Any], key: str, digits: int = 2) -> str:
    if "skipped" in row:
        return f"skipped: {row['skipped']}"
    if row.get("failed"):
        return "failed"
    return fmt(row.get(key), digits)


def report(args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    med = {name: median_row(rs) for name, rs in runs.items()}
    get = lambda name: med.get(name, {"failed": True})  # noqa: E731
    print("\n### Tell throughput (messages/s, median)\n")
    rows = []
    for actors in (1, 1000):
        for system in SYSTEMS:
            row = get(f"tell/{actors}/{system}")
            rows.append(
                [
                    f"{actors} actor{'s' if actors > 1 else ''}",
                    system,
                    _cell(row, "n", 0),
                    _cell(row, "msgs_per_s", 0),
                    _cell(row, "seconds", 3),
                ]
            )
    print(table(["receivers", "system", "N", "msgs/s", "seconds"], rows))
    ratios: dict[str, float] = {}
    for actors in (1, 1000):
        ratios[f"tell_{actors}_tocsin_over_pykka"] = ratio(
            runs, f"tell/{actors}/tocsin", f"tell/{actors}/pykka", "msgs_per_s"
        )
        ratios[f"tell_{actors}_tocsin_over_asyncio"] = ratio(
            runs, f"tell/{actors}/tocsin", f"tell/{actors}/asyncio.Queue", "msgs_per_s"
        )
    print()
    print(table(["ratio (per-repetition median)", "value"], sorted(ratios.items())))

    print("\n### Ask round trip (sequential, µs)\n")
    rows = []
    for label in ("tocsin (timeout=5.0)", "tocsin (timeout=None)", "asyncio.Queue", "pykka"):
        row = get(f"ask/{label}")
        rows.append(
            [
                label,
                _cell(row, "n", 0),
                _cell(row, "ask_p50_us", 1),
                _cell(row, "ask_p99_us", 1),
                _cell(row, "asks_per_s", 0),
            ]
        )
    print(table(["system", "asks", "p50 µs", "p99 µs", "asks/s"], rows))

    print("\n### Spawn rate and idle memory\n")
    rows = []
    for system in SYSTEMS:
        row, traced = get(f"spawn/{system}"), get(f"spawn/traced/{system}")
        rows.append(
            [
                system,
                _cell(row, "n", 0),
                _cell(row, "spawns_per_s", 0),
                _cell(row, "spawn_us", 2),
                _cell(traced, "traced_B_per_actor", 0),
                _cell(row, "rss_B_per_actor", 0),
                _cell(row, "stop_all_s", 2),
            ]
        )
    print(
        table(
            [
                "system",
                "actors",
                "spawns/s",
                "µs/spawn",
                "traced B/actor",
                "RSS B/actor",
                "stop all s",
            ],
            rows,
        )
    )
    tocsin_traced = get("spawn/traced/tocsin").get("traced_B_per_actor", float("nan"))
    targets = {
        "tell_1_ge_10x_pykka": ratios["tell_1_tocsin_over_pykka"] >= 10,
        "tell_1000_ge_10x_pykka": ratios["tell_1000_tocsin_over_pykka"] >= 10,
        "tell_1_ge_asyncio_queue": ratios["tell_1_tocsin_over_asyncio"] >= 1,
        "tell_1000_ge_asyncio_queue": ratios["tell_1000_tocsin_over_asyncio"] >= 1,
        "idle_actor_le_2KB_traced": tocsin_traced <= 2048,
        "idle_actor_le_2KB_rss": get("spawn/tocsin").get("rss_B_per_actor", float("nan")) <= 2048,
    }
    print()
    print(table(["target", "met"], [(k, "yes" if v else "NO") for k, v in targets.items()]))
    return {"bench": "actor_runtime", "ratios": ratios, "targets": targets}


def main(argv: list[str] | None = None) -> int:
    return run_main(
        argv,
        description=__doc__.splitlines()[0],
        script=__file__,
        add_arguments=add_arguments,
        child=child,
        configs=configs,
        report=report,
    )


if __name__ == "__main__":
    sys.exit(main())
