# SPDX-License-Identifier: Apache-2.0
"""Jobs imported by name (``ActorSystem(jobs=["tests.jobs.sample_jobs"])``)."""

from __future__ import annotations

from typing import Any

from tocsin import JobContext, job

#: (job id, attempt, args) of each run, in order.
RUNS: list[tuple[str, int, tuple[Any, ...]]] = []


@job
async def record(ctx: JobContext, *args: Any) -> None:
    RUNS.append((ctx.job_id, ctx.attempt, args))
