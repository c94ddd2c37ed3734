# SPDX-License-Identifier: Apache-2.0
"""The metrics of one system: a list of sources read together at scrape time."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, final

from ._model import Metric, MetricKind, Sample
from ._sources import SYSTEM_SOURCES, Source

if TYPE_CHECKING:
    from ..system import ActorSystem

__all__ = ["Metrics"]

_log = logging.getLogger("tocsin.metrics")


@final
class Metrics:
    """Every metric of one system (or of a store, for ``tocsin console --store``),
    read from its sources when :meth:`collect` is called and at no other time.

    Use :meth:`of` for a system; exporters (:class:`PrometheusCollector`,
    :func:`instrument_otel`) call :meth:`collect`. A source that raises is logged and
    counted in ``tocsin_metrics_source_errors_total``; the others are still read.
    """

    def __init__(self, sources: list[Source] | None = None) -> None:
        self._sources: list[Source] = list(sources or [])
        self._source_errors = 0

    @classmethod
    def of(cls, system: ActorSystem) -> Metrics:
        """The metrics of ``system``: every factory in :data:`SYSTEM_SOURCES`.

        Attaching switches store call timing on (see :class:`TimedStore`); nothing else
        changes in the system, and nothing is read until :meth:`collect`.
        """
        return cls([factory(system) for factory in SYSTEM_SOURCES])

    def add_source(self, source: Source) -> None:
        """Read ``source()`` on every :meth:`collect` too."""
        if not callable(source):
            raise TypeError(f"`source` must be a zero-argument callable, got {source!r}")
        self._sources.append(source)

    def collect(self) -> list[Metric]:
        """Read every source now; metrics in source order."""
        out: list[Metric] = []
        for source in self._sources:
            try:
                out.extend(source())
            except Exception:
                self._source_errors += 1
                _log.exception("metrics source %r failed", source)
        out.append(
            Metric(
                "metrics.source_errors",
                MetricKind.COUNTER,
                "Metric sources that raised while being read (see the tocsin.metrics log).",
                "",
                (Sample(self._source_errors),),
            )
        )
        return out
