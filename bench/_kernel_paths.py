# SPDX-License-Identifier: Apache-2.0
"""CPU cost of the kernel's hot paths, in process, for comparing two checkouts.

Usage (one tree per process, interleave them)::

    PYTHONPATH=/tmp/before/src .venv/bin/python bench/_kernel_paths.py
    PYTHONPATH=src .venv/bin/python bench/_kernel_paths.py

Prints one JSON line: nanoseconds of process CPU time (``time.process_time``, so a busy
machine inflates it far less than wall-clock rates) per operation, the minimum of 7
rounds: ``deliver_ns`` (enqueue one message, actor already draining), ``drain_ns``
(handle one queued message), ``schedule_once_ns`` (``system.schedule_once``),
``fire_and_handle_ns`` (a due one-shot fired by the heap and handled, ManualClock),
``ask_ns`` (one ask answered), and where the tree has mailbox bounds (issue 20)
``deliver_bounded_ns`` (``deliver_ns`` into a bounded mailbox, its bound not reached).
Works against the code before and after issue 9.
Not run by ``bench/run_all.py`` (the leading underscore).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from tocsin import Actor, ActorSystem, ManualClock, NoSender


class Sink(Actor):
    async def receive(self, ctx: Any) -> None:
        pass


class Echo(Actor):
    async def receive(self, ctx: Any) -> None:
        ctx.respond(ctx.message)


async def main() -> None:
    out = {}
    clock = ManualClock()
    async with ActorSystem("b", clock=clock) as system:
        pid = await system.spawn(Sink, "s")
        echo = await system.spawn(Echo, "e")
        # A bounded mailbox (issue 20), where the tree has them: its bound never reached.
        try:
            bounded: Any = await system.spawn(Sink, "bounded", mailbox_bound=1_000_000)
        except TypeError:
            bounded = None
        cell = pid._target
        new = hasattr(cell, "draining")
        deliver = cell.deliver if new else cell._deliver
        n = 200_000
        bd = bdr = bf = bp = ba = bb = float("inf")
        for _ in range(7):
            setattr(cell, "draining" if new else "scheduled", True)
            t0 = time.process_time()
            for i in range(n):
                deliver(i, NoSender, None)
            t1 = time.process_time()
            setattr(cell, "draining" if new else "scheduled", False)
            await cell._drain()
            t2 = time.process_time()
            bd = min(bd, (t1 - t0) / n * 1e9)
            bdr = min(bdr, (t2 - t1) / n * 1e9)
            m = 50_000
            t0 = time.process_time()
            for i in range(m):
                await system.schedule_once(i, pid, 1.0)
            t1 = time.process_time()
            await clock.advance(1.0)
            t2 = time.process_time()
            bp = min(bp, (t1 - t0) / m * 1e9)
            bf = min(bf, (t2 - t1) / m * 1e9)
            t0 = time.process_time()
            for i in range(5000):
                await echo.ask(i, timeout=5.0)
            ba = min(ba, (time.process_time() - t0) / 5000 * 1e9)
            # Last in the round, so the other figures are measured as before issue 20.
            if bounded is not None:
                bcell = bounded._target
                bdeliver = bcell.deliver
                bcell.draining = True
                t0 = time.process_time()
                for i in range(n):
                    bdeliver(i, NoSender, None)
                t1 = time.process_time()
                bcell.draining = False
                await bcell._drain()
                bb = min(bb, (t1 - t0) / n * 1e9)
        out = {
            "deliver_ns": bd,
            "drain_ns": bdr,
            "schedule_once_ns": bp,
            "fire_and_handle_ns": bf,
            "ask_ns": ba,
        }
        if bounded is not None:
            out["deliver_bounded_ns"] = bb
    print(json.dumps({k: round(v) for k, v in out.items()}))


if __name__ == "__main__":
    asyncio.run(main())
