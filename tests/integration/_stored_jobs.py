# SPDX-License-Identifier: Apache-2.0
"""The job the stored-schedule process tests run (found by name in every node)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from tocsin.jobs import job


def end_mark(log: str, node: str, second: int) -> str:
    """The file whose creation decides how ``node``'s run of ``second`` ends: created by
    the run itself (it finishes) or by the test first (the run waits to be killed)."""
    return f"{log}.end-{node}-{second}"


def take(path: str) -> bool:
    """Create ``path`` if absent (``O_EXCL``): whether this caller created it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    return True


@job
async def slow(ctx: Any, log: str, delay: float) -> None:
    """Append ``start NODE SECOND FENCE TIME``, sleep ``delay`` real seconds, append
    ``done NODE SECOND FENCE TIME``.

    A test that means to kill this node mid-run takes the run's :func:`end_mark` first:
    the run then never finishes (it waits until it is killed), so a kill chosen from a
    ``start`` line always lands mid-run, however slow the test was to send it.
    """
    tick = ctx.tick
    name = ctx.system.name
    second = round(tick.instant.timestamp())
    line = f"{name} {second} {tick.fence}"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"start {line} {time.time():.6f}\n".encode())
        await asyncio.sleep(delay)
        if not take(end_mark(log, name, second)):
            await asyncio.Event().wait()  # the test kills this node now
        os.write(fd, f"done {line} {time.time():.6f}\n".encode())
    finally:
        os.close(fd)
