# SPDX-License-Identifier: Apache-2.0
"""Trace one repeating tick with ``sys.setprofile``: the calls it makes inside tocsin,
the modules it crosses, and its *re-entries* (a call into a module the flow had left
earlier in the same tick), for comparing two checkouts.

Usage (one tree per process)::

    .venv/bin/python bench/_tick_trace.py skip
    PYTHONPATH=/tmp/tree-06d3e7e/src .venv/bin/python bench/_tick_trace.py skip

One interval schedule (``Overlap.SKIP`` with ``skip``, no policy with ``plain``) ticks
to an actor that does nothing, on a ``ManualClock``; after two warm-up ticks, one
``clock.advance(1)`` is traced from the timer's callback to the ``finished()`` the turn
loop calls once ``receive`` returned. Only frames of ``tocsin`` modules count (the event
loop's and asyncio's own are skipped), and the ``ManualClock``'s advance loop
(``tocsin.clock``) is the frame the tick starts from, so it is not counted either; nor is
``tocsin._idle``, the ``ManualClock``'s idleness watch on the event loop's selector (split
out of ``tocsin.clock``, installed by a ``ManualClock`` only: no tick path of a system on
the real clock runs it).
Prints one JSON line: ``calls``, ``modules`` (distinct), ``re_entries``, and the module
sequence. Not run by ``bench/run_all.py``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from types import FrameType
from typing import Any

from tocsin import Actor, ActorSystem, ManualClock


class Sink(Actor):
    async def receive(self, ctx: Any) -> None:
        pass


# The ManualClock's own machinery: its advance loop and its idleness watch (tocsin._idle,
# split out of tocsin.clock after the first figures; counted, it added one re-entry per
# wait of the advance loop, which a system on the real clock never makes).
_CLOCK_MODULES = frozenset({"tocsin.clock", "tocsin._idle"})


def _module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    if not isinstance(name, str) or not name.startswith("tocsin.") or name in _CLOCK_MODULES:
        return None
    return name


async def main(variant: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if variant == "skip":
        from tocsin import Overlap

        kwargs["overlap"] = Overlap.SKIP
    clock = ManualClock()
    sequence: list[str] = []
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event != "call":
            return
        module = _module(frame)
        if module is None:
            return
        calls += 1
        if not sequence or sequence[-1] != module:
            sequence.append(module)

    async with ActorSystem("trace", clock=clock) as system:
        pid = await system.spawn(Sink)
        await system.schedule("tick", pid, 1.0, reference="traced", **kwargs)
        await clock.advance(130)  # warm: the side state made, the history ring full size
        sys.setprofile(profile)
        try:
            await clock.advance(1)
        finally:
            sys.setprofile(None)
    seen: set[str] = set()
    re_entries = 0
    for module in sequence:
        if module in seen:
            re_entries += 1
        seen.add(module)
    return {
        "variant": variant,
        "calls": calls,
        "modules": len(seen),
        "re_entries": re_entries,
        "sequence": sequence,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "skip"))))
