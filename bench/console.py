# SPDX-License-Identifier: Apache-2.0
"""The console on aiohttp: page latency and server-sent-event fan-out (issue 14).

One process runs a system with 1,000 schedules, 1,000 actors and 200 parked durable
tasks, serves the console on loopback, and measures with aiohttp clients in the same
process (so client work is included: these are upper bounds):

* ``page``   : 200 sequential ``GET /`` (read + render + send ~1 MB of HTML).
* ``fanout`` : N subscribers on ``/events``; for 10 refreshes, the time from the start of
               a refresh (snapshot read + render, done once) to the moment the last of the
               N clients has the update.

Usage: ``python bench/console.py [--quick]``. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

import aiohttp

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.console import serve
from tocsin.console._app import feed_of
from tocsin.stores import MemoryStore, TaskRow, UpsertTask


class Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


async def _populate(system: ActorSystem, store: MemoryStore, n: int, parked: int) -> None:
    pids = [await system.spawn(Sink, f"a{i}") for i in range(n)]
    for i, pid in enumerate(pids):
        await system.schedule("t", pid, 60.0 + i, reference=f"s{i:05d}")
    now = time.time()
    await store.apply([
        UpsertTask(TaskRow(kind="Bench", identity=f"i{i}", id=f"t{i}", name="work", payload=b"",
                           due=now, every=None, attempts=1, max_retries=0, created_at=now,
                           state="parked", last_error=f"RuntimeError('failure {i}')"))
        for i in range(parked)
    ])  # fmt: skip


def _auth(server: Any) -> dict[str, str]:
    """The console's token (made at start) as a bearer: what Prometheus and curl send."""
    return {"Authorization": f"Bearer {server.token}"}


async def _page(server: Any, requests: int) -> dict[str, float]:
    times = []
    url = server.url
    async with aiohttp.ClientSession(headers=_auth(server)) as http:
        for _ in range(requests):
            t0 = time.perf_counter()
            async with http.get(url) as r:
                assert r.status == 200, f"the console answered {r.status}: not the page"
                body = await r.read()
            times.append(time.perf_counter() - t0)
    times.sort()
    return {
        "page_p50_ms": times[len(times) // 2] * 1e3,
        "page_p99_ms": times[int(len(times) * 0.99) - 1] * 1e3,
        "page_kb": len(body) / 1024,
    }


async def _fanout(server: Any, clients: int, refreshes: int) -> dict[str, float]:
    feed = feed_of(server.app)
    received: list[list[float]] = [[] for _ in range(clients)]
    starts: list[float] = []
    sizes: list[int] = []
    original = feed.sections

    async def timed_sections() -> dict[str, str]:
        starts.append(time.perf_counter())
        return await original()

    feed.sections = timed_sections  # type: ignore[method-assign]

    async def client(i: int, http: aiohttp.ClientSession) -> None:
        async with http.get(server.url + "events") as r:
            buffer = b""
            async for chunk in r.content.iter_any():  # events can be long: no readline cap
                buffer += chunk
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    if b"\ndata: " in event:
                        received[i].append(time.perf_counter())
                        sizes.append(len(event))
                        if len(received[i]) >= refreshes:
                            return

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, headers=_auth(server)) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    feed.sections = original  # type: ignore[method-assign]
    # Refresh k reached every client when the slowest one had its k-th update.
    lags = []
    for k in range(2, refreshes):  # skip the first refreshes (clients still connecting)
        last = max(r[k] for r in received)
        start = max(s for s in starts if s <= last)
        lags.append(last - start)
    return {
        f"fanout_{clients}_p50_ms": statistics.median(lags) * 1e3,
        f"fanout_{clients}_max_ms": max(lags) * 1e3,
        f"fanout_{clients}_update_kb": statistics.median(sizes) / 1024,
    }


async def main(quick: bool) -> dict[str, Any]:
    n, parked = (100, 20) if quick else (1000, 200)
    store = MemoryStore()
    result: dict[str, Any] = {"schedules": n, "actors": n, "parked": parked}
    async with ActorSystem(store=store) as system:
        await _populate(system, store, n, parked)
        async with await serve(system, "127.0.0.1:0", interval=0.5) as server:
            result.update(await _page(server, 20 if quick else 200))
            for clients in (1, 10) if quick else (1, 10, 100, 500):
                result.update(await _fanout(server, clients, 5 if quick else 10))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(main(args.quick))
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key.ljust(width)}  {value:.2f}" if isinstance(value, float) else f"{key}: {value}")
    print(json.dumps({"quick": args.quick, **figures}))
    sys.exit(0)
