# SPDX-License-Identifier: Apache-2.0
"""What is still busy: the actors of a system in the middle of a message, and where they wait.

The pytest plugin calls :func:`busy_actors` when a test ends (or its hang guard runs out)
while an actor is still handling a message: on a :class:`~tocsin.ManualClock` that actor
is usually waiting on simulated time nobody will advance, and stopping the system would
wait for it for ever. The report names each actor and the await it is suspended at, from
the coroutine chain of its task (``cr_await``), as ``asyncio.Task.print_stack`` would,
without the frames of asyncio itself.

Prior art: trio's ``MockClock`` docs ("a deadlock"), asyncio's ``Task.get_stack``.
"""

from __future__ import annotations

import asyncio
import linecache
from types import FrameType
from typing import Any

from .._idle import LoopWatch, watch_of
from ..clock import ManualClock
from ..system import ActorSystem

__all__ = ["busy_actors", "busy_on_loop", "clock_state", "describe_wait"]

#: Frames of the innermost awaits shown per actor (the rest are the runtime's own).
SHOWN_FRAMES = 3


def busy_actors(system: ActorSystem) -> list[str]:
    """One line per actor of ``system`` whose task is suspended in a message or a start.

    Empty when every actor is idle (or the system never started).
    """
    runtime = system.runtime
    if runtime is None:
        return []
    found = []
    for path, cell in sorted(runtime.registry.items()):
        task: asyncio.Task[Any] | None = getattr(cell, "task", None)
        if task is None or task.done():
            continue
        found.append(
            f"actor {path} ({type(getattr(cell, 'actor', None)).__name__}): {describe_wait(task)}"
        )
    return found


def describe_wait(task: asyncio.Task[Any]) -> str:
    """Where ``task`` is suspended: its innermost frames, innermost first, each as
    ``file:line in function (source)``."""
    frames: list[FrameType] = []
    awaited: Any = task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        inner = getattr(awaited, "cr_await", None)
        if inner is None:
            inner = getattr(awaited, "gi_yieldfrom", None)
        if inner is None:
            break
        awaited = inner
    shown = [_where(f) for f in frames if "/asyncio/" not in f.f_code.co_filename]
    if not shown:
        return f"waits on {awaited!r}"
    return "waits at " + " <- ".join(reversed(shown[-SHOWN_FRAMES:]))


def _where(frame: FrameType) -> str:
    code = frame.f_code
    line = frame.f_lineno
    source = linecache.getline(code.co_filename, line).strip()
    where = f"{code.co_filename.rsplit('/', 1)[-1]}:{line} in {code.co_qualname}"
    return f"{where} ({source})" if source else where


def busy_on_loop(loop: asyncio.AbstractEventLoop) -> list[str]:
    """:func:`busy_actors` of every system whose :class:`~tocsin.ManualClock` drives
    ``loop``, each line prefixed with the system's name, then the state of each clock."""
    watch: LoopWatch | None = watch_of(loop)
    if watch is None:
        return []
    lines = []
    for clock in list(watch.clocks):
        for tracker in clock.trackers:
            system = getattr(tracker, "facade", None)
            if isinstance(system, ActorSystem):
                lines += [f"{system.name}: {line}" for line in busy_actors(system)]
    if lines:
        lines += [clock_state(clock) for clock in list(watch.clocks)]
        reason = watch.busy_reason()
        if reason is not None:
            lines.append(f"the event loop is not idle: {reason}")
    return lines


def clock_state(clock: ManualClock) -> str:
    """``"ManualClock at t=12 s, next deadline t=100 s, autojump off"``."""
    deadline = clock.next_deadline()
    following = "none pending" if deadline is None else f"next deadline t={deadline:g} s"
    jump = "on" if clock.autojump else "off"
    return f"ManualClock at t={clock.monotonic():g} s, {following}, autojump {jump}"
