# SPDX-License-Identifier: Apache-2.0
"""Jobs: plain coroutine functions, run durably, enqueued from any process.

``@job`` registers ``async def f(ctx: JobContext, *args, **kwargs)`` by a stable name;
``system.jobs.enqueue(f, ...)`` / ``client.jobs.enqueue(f, ...)`` store a run, which a
worker that imported the job runs at least once, retried with backoff, then parked.
``resolve`` turns a job function or name into its :class:`JobSpec` (stored schedules use
it for their job targets).
"""

from __future__ import annotations

from ..durable import Retry
from ._api import MAX_ARGUMENT_BYTES, JobBackend, JobRun, Jobs, job_row
from ._context import JobContext
from ._registry import (
    DEFAULT_MAX_RETRIES,
    JobSpec,
    check_jobs_option,
    import_jobs,
    job,
    registered_jobs,
    resolve,
)
from ._watch import JOB_WATCH_SECONDS, JobWatch
from ._worker import KIND_PREFIX, SHARDS, actor_class, kind_of, shard_of

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "JOB_WATCH_SECONDS",
    "KIND_PREFIX",
    "MAX_ARGUMENT_BYTES",
    "SHARDS",
    "JobBackend",
    "JobContext",
    "JobRun",
    "JobSpec",
    "JobWatch",
    "Jobs",
    "Retry",
    "actor_class",
    "check_jobs_option",
    "import_jobs",
    "job",
    "job_row",
    "kind_of",
    "registered_jobs",
    "resolve",
    "shard_of",
]

for _name in ("JobContext", "JobRun", "JobSpec", "Jobs"):
    globals()[_name].__module__ = __name__
del _name
