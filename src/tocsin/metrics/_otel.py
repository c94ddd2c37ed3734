# SPDX-License-Identifier: Apache-2.0
"""OpenTelemetry export: observable instruments through ``opentelemetry-api``.

Needs the ``otel`` extra (``pip install tocsin[otel]``) and, to send anything, an SDK or
distribution configured by the application (the API alone is a no-op, by design).
Names follow OpenTelemetry conventions: dotted (``tocsin.schedule.lateness``), the unit
in ``unit`` (``s``), no ``_total`` suffix.

Counters and gauges are observable instruments whose callbacks read the system at
collection time. The API has no observable histogram, so histograms are synchronous
``Histogram`` instruments fed, at collection time, with the observations made since the
previous collection (from the same ring buffers Prometheus reads); they reach the
exporter with that collection or the next.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, final

from .._version import __version__
from ._model import HistogramValue, Metric, MetricKind
from ._registry import Metrics

__all__ = ["instrument_otel"]

_HINT = "OpenTelemetry export needs opentelemetry-api: pip install 'tocsin[otel]'"


def _api() -> Any:
    try:
        from opentelemetry import metrics as otel_metrics
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(_HINT) from exc
    return otel_metrics


@final
class _Rounds:
    """One :meth:`Metrics.collect` per collection round, shared by every callback.

    A reader calls each instrument's callback once per collection; a callback called a
    second time means a new round began, so the metrics are read again. No clock needed.
    """

    def __init__(self, metrics: Metrics, histograms: dict[str, Any]) -> None:
        self.metrics = metrics
        self.histograms = histograms
        self.current: dict[str, Metric] | None = None
        self.served: set[str] = set()

    def get(self, name: str) -> Metric | None:
        if self.current is None or name in self.served:
            self.current = {m.name: m for m in self.metrics.collect()}
            self.served.clear()
            self._record_histograms()
        self.served.add(name)
        return self.current.get(name)

    def _record_histograms(self) -> None:
        assert self.current is not None
        for name, instrument in self.histograms.items():
            metric = self.current.get(name)
            if metric is None:
                continue
            for sample in metric.samples:
                if isinstance(sample.value, HistogramValue):
                    attrs = dict(sample.labels)
                    for v in sample.value.new:
                        instrument.record(v, attrs)


def instrument_otel(
    metrics: Metrics, meter_provider: Any | None = None, *, meter_name: str = "tocsin"
) -> list[Any]:
    """Create OpenTelemetry instruments for every metric ``metrics`` reports now.

    Args:
        metrics: e.g. ``Metrics.of(system)``, before or after ``system.start()``: every
            source reports all its metric names even before it has values.
        meter_provider: an SDK ``MeterProvider``; default: the global one.
        meter_name: the instrumentation scope name.

    Returns:
        The instruments created (keep them referenced as long as they should report).
    """
    api = _api()
    provider = meter_provider if meter_provider is not None else api.get_meter_provider()
    meter = provider.get_meter(meter_name, __version__)
    current = metrics.collect()
    histograms: dict[str, Any] = {}
    rounds = _Rounds(metrics, histograms)
    instruments: list[Any] = []
    for metric in current:
        unit = metric.unit or "1"
        if metric.kind is MetricKind.HISTOGRAM:
            inst = meter.create_histogram(metric.otel_name, unit=unit, description=metric.help)
            histograms[metric.name] = inst
        else:
            create = (
                meter.create_observable_counter
                if metric.kind is MetricKind.COUNTER
                else meter.create_observable_gauge
            )
            inst = create(
                metric.otel_name,
                callbacks=[_callback(rounds, metric.name, api)],
                unit=unit,
                description=metric.help,
            )
        instruments.append(inst)
    return instruments


def _callback(rounds: _Rounds, name: str, api: Any) -> Any:
    def observe(options: Any) -> Iterable[Any]:
        metric = rounds.get(name)
        if metric is None:
            return []
        return [
            api.Observation(s.value, dict(s.labels))
            for s in metric.samples
            if not isinstance(s.value, HistogramValue)
        ]

    return observe
