# SPDX-License-Identifier: Apache-2.0
"""Metrics of a running system for Prometheus and OpenTelemetry, read at scrape time.

``Metrics.of(system)`` reads what the runtime already counts (ticks, lateness, live
schedules, mailboxes, restarts, dead letters, durable runs, store calls) only when an
exporter asks: the hot paths keep plain integers and ring buffers and pay nothing more.

* Prometheus (``pip install tocsin[metrics]``): :class:`PrometheusCollector` for your own
  registry, or :func:`prometheus_endpoint` for the console's ``/metrics``.
* OpenTelemetry (``pip install tocsin[otel]``): :func:`instrument_otel`.
* The web console with ``/metrics``: :func:`serve_console`.

See ``docs/operations.md`` for every metric and what it means.
"""

from __future__ import annotations

from ._console import serve_console
from ._model import HistogramValue, Metric, MetricKind, RingHistogram, Sample
from ._otel import instrument_otel
from ._prometheus import PrometheusCollector, prometheus_endpoint
from ._registry import Metrics
from ._sources import SYSTEM_SOURCES, Source, SourceFactory
from ._store import TimedStore

__all__ = [
    "SYSTEM_SOURCES",
    "HistogramValue",
    "Metric",
    "MetricKind",
    "Metrics",
    "PrometheusCollector",
    "RingHistogram",
    "Sample",
    "Source",
    "SourceFactory",
    "TimedStore",
    "instrument_otel",
    "prometheus_endpoint",
    "serve_console",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("tocsin.metrics."):
        _obj.__module__ = __name__
del _name, _obj
