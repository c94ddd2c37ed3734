# SPDX-License-Identifier: Apache-2.0
"""Ops hook (issue 14): counters of durable task runs, read at scrape time by tocsin.metrics.

Plain ints and a ring buffer of run durations, written once per task run by the drain
(``durable/_drain.py``, inlined there: one clock read, one list store and an int add per
run, next to a store round trip; ``bench/metrics.py`` measures it).
Nothing here is read on the hot path: :mod:`tocsin.metrics` turns the ring into a
histogram when it is scraped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

from ._run import DROPPED, INTERRUPTED

__all__ = [
    "DURATION_MASK",
    "DURATION_WINDOW",
    "MAX_REFERENCE_LABELS",
    "OTHER_LABEL",
    "DurableStatistics",
    "RunCounters",
]

#: Run durations kept between two scrapes (a ring buffer; a power of two). A scrape that
#: finds more runs than this since the previous one sees the most recent ones only.
DURATION_WINDOW: Final = 4096
DURATION_MASK: Final = DURATION_WINDOW - 1
#: Task schedule outcomes (``tocsin_schedule_ticks_total``) are counted under a label of
#: their own for this many distinct task references (first come, kept for the process's
#: life so every series stays monotonic); the rest count under :data:`OTHER_LABEL`.
MAX_REFERENCE_LABELS: Final = 100
OTHER_LABEL: Final = "other"


@dataclass(frozen=True, slots=True)
class DurableStatistics:
    """A snapshot of a durable runtime for operator tools (metrics, the console), taken
    by :meth:`DurableRuntime.statistics <tocsin.durable._runtime.DurableRuntime.statistics>`.

    Attributes:
        runs, failed, interrupted, dropped: task runs finished, and those that failed,
            were interrupted by a stop, or were dropped (their method vanished).
        timed: whether run durations are being recorded (``DurableRuntime.time_runs``).
        timed_runs: runs timed so far; ``durations`` is a copy of the ring: timed run
            ``i``'s seconds at ``durations[i % len(durations)]`` while fewer than
            ``len(durations)`` runs were timed after it.
        identities_known, identities_active: identities with a handle in memory, and
            those activated now.
        outcomes: ``(reference label, outcome, count)`` of the task schedules' outcomes
            but ``delivered`` recorded here (the ``TickNotDelivered`` events' references,
            bounded by :data:`MAX_REFERENCE_LABELS`).
    """

    runs: int = 0
    failed: int = 0
    interrupted: int = 0
    dropped: int = 0
    timed: bool = False
    timed_runs: int = 0
    durations: tuple[float, ...] = ()
    identities_known: int = 0
    identities_active: int = 0
    outcomes: tuple[tuple[str, str, int], ...] = ()


@final
class RunCounters:
    """How many durable task runs succeeded, failed, were interrupted by a stop or dropped
    (their method vanished), and, once someone reads them, how long they took.

    ``runs`` counts every finished run (always on: an int add per run). Durations cost a
    clock read per run (~60 ns on a quiet box, 200+ ns on a loaded VM), so they are
    recorded only while ``timed`` is set, which :mod:`tocsin.metrics` does on its first
    read (as it wraps the store in a ``TimedStore``): ``durations[i & DURATION_MASK]``
    holds the duration of timed run ``i`` (seconds, monotonic clock), ``timed_runs``
    counts them. The drain reads the clock once per run (the end of one run starts the
    next), so a duration includes the drain's few microseconds of bookkeeping before the
    run; store commits between runs are not.
    """

    __slots__ = (
        "dropped",
        "durations",
        "failed",
        "interrupted",
        "labels",
        "outcomes",
        "runs",
        "timed",
        "timed_runs",
    )

    def __init__(self) -> None:
        self.runs = 0
        self.failed = 0
        self.interrupted = 0
        self.dropped = 0
        self.timed = False
        self.timed_runs = 0
        self.durations = [0.0] * DURATION_WINDOW
        #: Outcomes but ``delivered`` of task schedules, by (reference label, outcome).
        self.outcomes: dict[tuple[str, str], int] = {}
        self.labels: dict[str, str] = {}

    def ran(self, seconds: float | None, error: BaseException | None) -> None:
        """Record one run that ended with ``error`` (what
        :func:`~tocsin.durable._run.run_task` returned; None: success) and took
        ``seconds`` (None: not timed). The drain inlines this; tests and tools call it."""
        self.runs += 1
        if seconds is not None:
            timed_runs = self.timed_runs
            self.durations[timed_runs & DURATION_MASK] = seconds
            self.timed_runs = timed_runs + 1
        if error is not None:
            self.ended_with(error)

    def outcome(self, reference: str, outcome: str) -> None:
        """Count one instant of task schedule ``reference`` that ended ``outcome``."""
        label = self.labels.get(reference)
        if label is None:
            label = reference if len(self.labels) < MAX_REFERENCE_LABELS else OTHER_LABEL
            if label is reference:
                self.labels[reference] = label
        key = (label, outcome)
        self.outcomes[key] = self.outcomes.get(key, 0) + 1

    def ended_with(self, error: BaseException) -> None:
        """Count a run that did not succeed, by how it ended."""
        if error is INTERRUPTED:
            self.interrupted += 1
        elif error is DROPPED:
            self.dropped += 1
        else:
            self.failed += 1
