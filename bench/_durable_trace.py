# SPDX-License-Identifier: Apache-2.0
"""Trace one durable ``self.schedule(...)`` with ``sys.setprofile``, from the call to its
commit to the task's run (and the run's completion committed): the calls it makes
inside tocsin, the modules it crosses, and its *re-entries* (a call into a module the
flow had left earlier), for comparing two checkouts.

Usage (one tree per process)::

    .venv/bin/python bench/_durable_trace.py
    PYTHONPATH=/tmp/tree-06d3e7e/src .venv/bin/python bench/_durable_trace.py

A ``DurableActor`` on a ``ManualClock`` and the memory store, warmed up by one earlier
schedule and run. Traced: the ``await self.schedule(10, "work")`` inside a method (the
checks, the row, the write, the alarm armed), then the ``clock.advance(10)`` that rings
the alarm, queues the drain turn, runs ``work`` and commits its completion. Only frames
of ``tocsin`` modules count (asyncio's are skipped; so are ``tocsin.clock``, whose advance
loop the run starts from, and ``tocsin._idle``, that clock's idleness watch on the event
loop's selector, which only a ``ManualClock`` installs). Prints one JSON line: ``calls``, ``modules`` (distinct),
``re_entries``, ``durable_re_entries`` (the same count over the durable package's
modules alone), ``entries`` per module, and the module sequence. Not run by
``bench/run_all.py``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from types import FrameType
from typing import Any

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor

SEQUENCE: list[str] = []
CALLS = [0]


# The ManualClock's own machinery: its advance loop and its idleness watch (tocsin._idle,
# split out of tocsin.clock after the first figures; counted, it added one re-entry per
# wait of the advance loop, which a system on the real clock never makes).
_CLOCK_MODULES = frozenset({"tocsin.clock", "tocsin._idle"})


def _module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    if not isinstance(name, str) or not name.startswith("tocsin.") or name in _CLOCK_MODULES:
        return None
    return name


def _profile(frame: FrameType, event: str, arg: object) -> None:
    if event != "call":
        return
    module = _module(frame)
    if module is None:
        return
    CALLS[0] += 1
    if not SEQUENCE or SEQUENCE[-1] != module:
        SEQUENCE.append(module)


class Traced(DurableActor):
    kind = "TracedSchedule"

    async def plan(self, traced: bool) -> None:
        if traced:
            sys.setprofile(_profile)
        try:
            await self.schedule(10, "work")
        finally:
            if traced:
                sys.setprofile(None)

    async def work(self, payload: Any) -> None:
        pass


def _re_entries(sequence: list[str]) -> int:
    seen: set[str] = set()
    count = 0
    for module in sequence:
        if module in seen:
            count += 1
        seen.add(module)
    return count


async def main() -> dict[str, Any]:
    clock = ManualClock()
    async with ActorSystem("trace", clock=clock, timezone="UTC") as system:
        pid = await system.durable(Traced, "t")
        await pid.ask(Call("plan", False))  # warm: one schedule and run before the trace
        await clock.advance(10)
        # The ask's own timeout (5 s by default) would come due inside the traced
        # advance and wake the deadline service once for nothing (a cancelled timeout
        # leaves its timer armed): not part of the schedule's path, so it lies past it.
        await pid.ask(Call("plan", True), timeout=3600)
        sys.setprofile(_profile)
        try:
            await clock.advance(10)
        finally:
            sys.setprofile(None)
    durable_only = [m for m in SEQUENCE if m.startswith("tocsin.durable.")]
    durable_only = [m for i, m in enumerate(durable_only) if i == 0 or durable_only[i - 1] != m]
    return {
        "calls": CALLS[0],
        "modules": len(set(SEQUENCE)),
        "re_entries": _re_entries(SEQUENCE),
        # The durable package's own back and forth: the sequence with every other
        # module's frames left out (the kernel's heap and mailbox, the store's).
        "durable_re_entries": _re_entries(durable_only),
        "entries": dict(Counter(SEQUENCE).most_common()),
        "sequence": SEQUENCE,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
