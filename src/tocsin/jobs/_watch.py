# SPDX-License-Identifier: Apache-2.0
"""A worker's quick look for runs other processes enqueued, on stores that cannot push.

PostgreSQL pushes a client's enqueue (``NOTIFY``) and the memory store calls its watchers;
SQLite cannot push, and the durable runtime looks at its ``data_version`` once a second
(``CHANGE_CHECK_SECONDS``): a web request's job would start half a second late on average.
A system that runs jobs looks every :data:`JOB_WATCH_SECONDS` instead. A look is one
``PRAGMA data_version`` on the loop's connection (4.4 µs measured, with the timer's own
cost under 10 µs), so 100 looks a second cost about 0.1 % of a core; only a change
starts a poll of the store.

Not on a ``ManualClock``: other processes live in real time, and a test advancing a day
would make 8.6 million looks (the durable runtime's own look follows the same rule).
"""

from __future__ import annotations

from typing import Final, final

from .._deadlines import Deadline
from ..clock import ManualClock, OffsetClock
from ..durable._spi import DurableRuntime

__all__ = ["JOB_WATCH_SECONDS", "JobWatch"]

#: Seconds between two looks for runs enqueued by other processes (stores that cannot push).
JOB_WATCH_SECONDS: Final = 0.01


@final
class JobWatch(Deadline):
    """Looks at the store for outside changes every :data:`JOB_WATCH_SECONDS` while its
    system runs (internal: started by the facade on systems that run jobs)."""

    __slots__ = ("_durable",)

    def __init__(self, durable: DurableRuntime) -> None:
        super().__init__()
        self._durable = durable

    def start(self) -> bool:
        """Arm the first look; ``False`` (nothing armed) on a simulated clock."""
        runtime = self._durable.runtime
        clock = runtime.clock
        if isinstance(clock, OffsetClock):
            clock = clock.inner
        if isinstance(clock, ManualClock):
            return False
        runtime.deadlines.add(runtime.clock.monotonic() + JOB_WATCH_SECONDS, self)
        return True

    def stop(self) -> None:
        self._durable.runtime.deadlines.remove(self)

    def fire(self, now: float, deadline: float) -> None:
        durable = self._durable
        if durable.stopping or not durable.runtime.running:
            return
        try:
            durable.store.check_changes()
        except Exception as exc:  # the durable runtime's own look logs the outage
            durable.store_outage.failed(exc, "looking for enqueued jobs")
        durable.runtime.deadlines.add(now + JOB_WATCH_SECONDS, self)
