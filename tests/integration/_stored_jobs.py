# SPDX-License-Identifier: Apache-2.0
"""The job the stored-schedule process tests run (found by name in every node)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from tocsin.jobs import job


@job
async def slow(ctx: Any, log: str, delay: float) -> None:
    """Append ``start NODE SECOND FENCE``, sleep ``delay`` real seconds, append ``done``."""
    tick = ctx.tick
    second = round(tick.instant.timestamp())
    line = f"{ctx.system.name} {second} {tick.fence}\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"start {line}".encode())
        await asyncio.sleep(delay)
        os.write(fd, f"done {line}".encode())
    finally:
        os.close(fd)
