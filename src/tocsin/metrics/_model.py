# SPDX-License-Identifier: Apache-2.0
"""What a reading is: :class:`Metric` families of :class:`Sample` values, exporter-neutral.

A source reads the runtime at scrape time and returns metrics; the Prometheus and
OpenTelemetry exporters only translate names and types. Names are written once, in
OpenTelemetry's dotted form without the ``tocsin.`` prefix (``"schedule.lateness"``); the
Prometheus exporter derives ``tocsin_schedule_lateness_seconds`` from the name and unit.
"""

from __future__ import annotations

import enum
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, final

__all__ = [
    "HistogramValue",
    "Metric",
    "MetricKind",
    "RingHistogram",
    "Sample",
]


#: Prometheus name suffix of each unit (its convention: the base unit spelled out).
_UNIT_SUFFIX: Final = {"s": "_seconds", "By": "_bytes"}


class MetricKind(enum.StrEnum):
    """How a metric's value behaves."""

    #: Only goes up (resets when the process restarts).
    COUNTER = "counter"
    #: Goes up and down (a level: live schedules, mailbox depth).
    GAUGE = "gauge"
    #: Observations counted into buckets (lateness, durations).
    HISTOGRAM = "histogram"


@dataclass(frozen=True, slots=True)
class HistogramValue:
    """A cumulative histogram: ``counts[i]`` observations fell in ``(bounds[i-1], bounds[i]]``,
    the last count in ``(bounds[-1], +inf)``; ``new`` are the observations added by the
    scrape that produced this value (what OpenTelemetry records)."""

    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    count: int
    sum: float
    new: tuple[float, ...] = ()

    def cumulative(self) -> list[tuple[str, int]]:
        """``(upper bound, observations <= bound)`` pairs ending with ``("+Inf", count)``."""
        out, total = [], 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            total += n
            out.append((_bound_text(bound), total))
        out.append(("+Inf", self.count))
        return out


@dataclass(frozen=True, slots=True)
class Sample:
    """One labelled value of a metric."""

    value: float | HistogramValue
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric family as read now.

    Attributes:
        name: dotted name without the ``tocsin.`` prefix, e.g. ``"schedule.lateness"``.
        kind: counter, gauge or histogram.
        help: one sentence saying what it measures.
        unit: ``"s"`` for seconds, ``"By"`` for bytes (UCUM, as OpenTelemetry spells
            it), ``""`` for a plain count.
        samples: the values, one per label set (none: the family is empty now).
    """

    name: str
    kind: MetricKind
    help: str
    unit: str = ""
    samples: tuple[Sample, ...] = field(default=())

    @property
    def prometheus_name(self) -> str:
        """``tocsin_<name with _>`` plus ``_seconds`` for seconds, ``_bytes`` for bytes
        (``_total`` is added by the client library for counters)."""
        base = "tocsin_" + self.name.replace(".", "_")
        return base + _UNIT_SUFFIX.get(self.unit, "")

    @property
    def otel_name(self) -> str:
        """``tocsin.<name>``, OpenTelemetry's dotted form (the unit goes in ``unit``)."""
        return "tocsin." + self.name


def _bound_text(bound: float) -> str:
    return repr(float(bound))


@final
class RingHistogram:
    """Turns a ring buffer of observations into a cumulative histogram, at scrape time.

    The runtime writes observation ``i`` at ``ring[i % len(ring)]`` and counts them (no
    bucket arithmetic on its hot path). Each :meth:`update` adds the observations made
    since the previous one. If more than ``len(ring)`` were made in between, only the
    most recent ``len(ring)`` are still there: those are counted, and the rest are added
    to :attr:`unsampled` (reported as its own counter, so nothing is lost silently).
    """

    __slots__ = ("_counts", "_new", "_seen", "_sum", "bounds", "count", "unsampled")

    def __init__(self, bounds: Sequence[float]) -> None:
        if list(bounds) != sorted(set(bounds)) or not bounds:
            raise ValueError(f"`bounds` must be non-empty, sorted and distinct, got {bounds!r}")
        self.bounds = tuple(float(b) for b in bounds)
        self._counts = [0] * (len(self.bounds) + 1)
        self._seen = 0
        self._sum = 0.0
        self._new: tuple[float, ...] = ()
        self.count = 0
        self.unsampled = 0

    def update(self, made: int, ring: Sequence[float]) -> None:
        """Add observations ``self.seen .. made-1`` from ``ring``."""
        fresh = made - self._seen
        if fresh <= 0:
            self._new = ()
            if fresh < 0:  # the runtime was restarted: its counters began again
                self._seen = made
            return
        size = len(ring)
        kept = min(fresh, size)
        self.unsampled += fresh - kept
        new = [ring[i % size] for i in range(made - kept, made)]
        self.observe(new)
        self._seen = made

    def observe(self, values: Sequence[float]) -> None:
        """Add ``values`` directly (for sources that see each observation)."""
        counts, bounds = self._counts, self.bounds
        for v in values:
            counts[bisect_left(bounds, v)] += 1
        self.count += len(values)
        self._sum += sum(values)
        self._new = tuple(values)

    def value(self) -> HistogramValue:
        """The histogram so far (cumulative since this object was made)."""
        return HistogramValue(self.bounds, tuple(self._counts), self.count, self._sum, self._new)
