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
    the run itself (it finishes) or by the test first (the run is held: it waits for
    its :func:`release_mark`, or to be killed)."""
    return f"{log}.end-{node}-{second}"


def release_mark(log: str, node: str, second: int) -> str:
    """The file that lets a held run (its :func:`end_mark` taken by the test) finish."""
    return f"{log}.release-{node}-{second}"


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

    A test that means to kill or freeze this node mid-run takes the run's
    :func:`end_mark` first: the run then does not finish until the test creates its
    :func:`release_mark` (never, for a kill), so a signal chosen from a ``start`` line
    always lands mid-run, however slow the test was to send it.
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
            # Held by the test: polled (not a wait on a signal) so that a release made
            # while this process was stopped is seen as soon as it runs again.
            release = release_mark(log, name, second)
            while not os.path.exists(release):
                await asyncio.sleep(0.05)
        os.write(fd, f"done {line} {time.time():.6f}\n".encode())
    finally:
        os.close(fd)
