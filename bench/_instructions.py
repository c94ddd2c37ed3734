# SPDX-License-Identifier: Apache-2.0
"""Instructions per tick and per ``cancel_schedule``, counted by valgrind's callgrind: a
measure the neighbours on a shared box do not move, for comparing two checkouts where
``bench/footprint.py``'s CPU times are within their noise.

Usage (valgrind on the PATH; one tree per run)::

    .venv/bin/python bench/_instructions.py                      # this tree
    .venv/bin/python bench/_instructions.py --tree /tmp/t840     # another checkout

Each case runs twice under ``valgrind --tool=callgrind`` in a fresh process
(``PYTHONPATH=<tree>/src``, ``PYTHONHASHSEED=0``, the tree's bytecode compiled first):
once with the measured work and once without it, both leaving by ``os._exit`` right
after it (no teardown counted); the difference, divided by the operations, is the
figure. ``tick plain`` / ``tick skip``: 500 interval schedules (every second, no policy
or ``Overlap.SKIP``) to an actor that does nothing, on a ``ManualClock``, 5 s of warm-up,
then 20 simulated seconds (10,000 ticks; the collector off). ``cancel``: 20,000 pending
``schedule_once`` cancelled one by one (``await system.cancel_schedule``), and
``call_later+dict`` the same with ``loop.call_later`` handles in a dict. Prints one JSON
line. Not run by ``bench/run_all.py`` (slow: about a minute per case).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

THIS_TREE = Path(__file__).resolve().parents[1]
TICK_SCHEDULES = 500
TICK_SECONDS = 20
CANCELS = 20_000


async def _tick(variant: str, seconds: int) -> None:
    from tocsin import Actor, ActorSystem, ManualClock

    class Sink(Actor):
        async def receive(self, ctx: Any) -> None:
            pass

    kwargs: dict[str, Any] = {}
    if variant == "skip":  # not at 840edd1, which has no policies
        from tocsin import Overlap

        kwargs["overlap"] = Overlap.SKIP
    clock = ManualClock()
    async with ActorSystem("bench", clock=clock) as system:
        pid = await system.spawn(Sink)
        for i in range(TICK_SCHEDULES):
            await system.schedule(i, pid, 1.0, reference=f"r{i}", **kwargs)
        await clock.advance(5)
        gc.collect()
        gc.disable()
        await clock.advance(seconds)
        sys.stdout.flush()
        os._exit(0)


async def _cancel(system_name: str, cancel: bool) -> None:
    from tocsin import Actor, ActorSystem

    class Drop(Actor):
        async def receive(self, ctx: Any) -> None:
            pass

    refs = [f"r{i}" for i in range(CANCELS)]
    async with ActorSystem() as system:
        pid = await system.spawn(Drop)
        handles: dict[str, Any] = {}
        if system_name == "call_later+dict":
            call_later, tell = asyncio.get_running_loop().call_later, pid.tell
            for i, ref in enumerate(refs):
                handles[ref] = call_later(60.0 + i, tell, "tick")
        else:
            for i, ref in enumerate(refs):
                await system.schedule_once("tick", pid, 60.0 + i, reference=ref)
        gc.collect()
        gc.disable()
        if cancel and system_name == "call_later+dict":
            pop = handles.pop
            for ref in refs:
                pop(ref).cancel()
        elif cancel:
            cancel_schedule = system.cancel_schedule
            for ref in refs:
                await cancel_schedule(ref)
        await asyncio.sleep(0)
        sys.stdout.flush()
        os._exit(0)


def _count(tree: Path, args: list[str]) -> int:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), PYTHONHASHSEED="0")
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    out = subprocess.run(
        [*valgrind, sys.executable, str(Path(__file__).resolve()), "--child", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or found is None:
        raise RuntimeError(f"no callgrind total for {args}: {out.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=THIS_TREE)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        kind, variant, work = args.child
        if kind == "tick":
            asyncio.run(_tick(variant, TICK_SECONDS if work == "1" else 0))
        else:
            asyncio.run(_cancel(variant, work == "1"))
        return 0
    tree: Path = args.tree.resolve()
    compileall.compile_dir(str(tree / "src"), quiet=1)  # no compiling inside a count
    cases = {
        "tick plain": (["tick", "plain"], TICK_SCHEDULES * TICK_SECONDS),
        "tick skip": (["tick", "skip"], TICK_SCHEDULES * TICK_SECONDS),
        "cancel": (["cancel", "tocsin"], CANCELS),
        "cancel call_later+dict": (["cancel", "call_later+dict"], CANCELS),
    }
    result: dict[str, Any] = {"tree": str(tree)}
    for name, (child, ops) in cases.items():
        if args.only and name not in args.only:
            continue
        with_work = _count(tree, [*child, "1"])
        without = _count(tree, [*child, "0"])
        result[name] = round((with_work - without) / ops)
        print(f"{name}: {result[name]} instructions per operation", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
