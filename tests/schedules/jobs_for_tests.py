# SPDX-License-Identifier: Apache-2.0
"""Module-level jobs the stored-schedule tests name (a job target is found by its name)."""

from __future__ import annotations

from typing import Any

from tocsin.jobs import job

#: (schedule id, instant ISO, manual, backfill, args) of every run, in order.
RUNS: list[tuple[str, str, bool, bool, tuple[Any, ...]]] = []


@job
async def record(ctx: Any, *args: Any) -> None:
    tick = ctx.tick
    RUNS.append((tick.reference, tick.instant.isoformat(), tick.manual, tick.backfill, args))


@job
async def explode(ctx: Any) -> None:
    raise RuntimeError("boom")
